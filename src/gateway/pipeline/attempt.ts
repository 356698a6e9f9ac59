import type { Dispatcher } from 'undici';
import type { AttemptProbe } from '../balance/aimd.js';
import type { ProviderRoute } from '../runtime/table.js';
import { forwardRequestHeaders, requestHeaderDrop } from '../http/headers.js';
import { upstreamPath, type UpstreamClient } from '../http/upstream.js';
import type { HeadListener, UpstreamExchange } from '../http/upstream-exchange.js';
import type { GrantSet } from '../limits/grant-set.js';
import type { Grant } from '../limits/types.js';
import type { AbandonListener, RequestContext } from './context.js';
import type { ResponseMode } from './response-mode.js';
import type { Span } from '@opentelemetry/api';
import { applyReasoning } from '../reasoning/index.js';
import {
  NOOP_SPAN,
  TRACE_CONTEXT_HEADERS,
  endSpan,
  genAiOperationForPath,
  injectTraceHeaders,
  setAttemptError,
  startAttemptSpan,
} from '../telemetry/tracing.js';

const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

/**
 * Request headers not forwarded, by what the attempt allows: a provider that may not see the trace
 * context gets none of the client's trace headers; a response the gateway must read (sanitize,
 * inspect) has to arrive uncompressed, so `accept-encoding` is not forwarded for it.
 */
const HEADER_DROP = {
  raw: requestHeaderDrop([]),
  rawNoTrace: requestHeaderDrop(TRACE_CONTEXT_HEADERS),
  read: requestHeaderDrop(['accept-encoding']),
  readNoTrace: requestHeaderDrop(['accept-encoding', ...TRACE_CONTEXT_HEADERS]),
} as const;

function headerDropFor(attempt: Attempt): ReadonlySet<string> {
  const propagate = attempt.provider.propagateTraceContext;
  if (attempt.mode.kind === 'raw') return propagate ? HEADER_DROP.raw : HEADER_DROP.rawNoTrace;
  return propagate ? HEADER_DROP.read : HEADER_DROP.readNoTrace;
}

/**
 * The body to send to a provider: the client's bytes unchanged, unless the provider translates the
 * reasoning effort (spec 2.6) or has a `gateway_model` (spec 4.4 rule 3); then the parsed body,
 * rewritten for this provider only (copy-on-write), is re-serialized.
 */
export function bodyFor(ctx: RequestContext, provider: ProviderRoute): Buffer | undefined {
  if (ctx.body.length === 0) return undefined;
  const json = ctx.reasoning && ctx.json ? applyReasoning(ctx.reasoning, provider.index, ctx.json) : ctx.json;
  if (json === undefined || (json === ctx.json && provider.gatewayModel === undefined)) return ctx.body;
  return Buffer.from(
    JSON.stringify(provider.gatewayModel === undefined ? json : { ...json, model: provider.gatewayModel }),
  );
}

/**
 * One try of one provider. It can be aborted (client gone, or deadline) and, when armed, owns the
 * first-token deadline: a timer started with the attempt and cancelled at the commit point (the
 * first data frame, or the decision to answer). When the timer fires first, the attempt is aborted.
 *
 * An attempt is itself the grant the request holds for it (released when the request closes, if
 * not before): releasing it ends it and gives back the provider's limit slots it was given.
 */
export class Attempt implements Grant, AbandonListener {
  readonly ok = true;
  readonly provider: ProviderRoute;
  /** 1-based. */
  readonly number: number;
  /** No further provider may be tried after this one. */
  readonly last: boolean;
  readonly mode: ResponseMode;
  readonly probe: AttemptProbe | undefined;
  /** The CLIENT span of this attempt (a no-op span when tracing is off). */
  readonly span: Span;
  readonly startedAt = performance.now();
  readonly #ctx: RequestContext;
  /** The provider's limit slots taken for this attempt (none when the provider has no limits). */
  readonly #grants: GrantSet | undefined;
  #aborted = false;
  #expired = false;
  #released = false;
  /** The request in flight to the provider, once sent. */
  #exchange: UpstreamExchange | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    ctx: RequestContext,
    plan: {
      provider: ProviderRoute;
      number: number;
      last: boolean;
      mode: ResponseMode;
      deadlineMs: number | undefined;
    },
    grants: GrantSet | undefined,
  ) {
    this.#ctx = ctx;
    this.#grants = grants;
    this.provider = plan.provider;
    this.number = plan.number;
    this.last = plan.last;
    this.mode = plan.mode;
    this.probe = ctx.route!.share?.startAttempt(plan.provider.index === 0 ? 'preferred' : 'alternate');
    this.span = ctx.span === NOOP_SPAN ? NOOP_SPAN : attemptSpan(ctx, plan.provider, plan.number);
    ctx.onAbandon(this);
    if (plan.deadlineMs !== undefined) {
      this.#timer = setTimeout(() => {
        this.#expired = true;
        this.abort();
      }, plan.deadlineMs);
    }
  }

  /** Aborts the upstream request (client gone, or deadline). */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#exchange?.abort();
  }

  /** The client left before its response finished. */
  abandoned(): void {
    this.abort();
  }

  /** The request sent for this attempt; an attempt aborted before sending aborts it at once. */
  bindExchange(exchange: UpstreamExchange): void {
    this.#exchange = exchange;
    if (this.#aborted) exchange.abort();
  }

  /** The deadline fired before the commit point. */
  get expired(): boolean {
    return this.#expired;
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /**
   * The attempt answered the client (reached the commit point, or decided to answer): the deadline
   * no longer applies. Called once, by the dispatcher, when the attempt's serving reports the
   * commit; nothing between that decision and this call can let the timer fire (no I/O is awaited).
   */
  committed(): void {
    this.#cancelDeadline();
  }

  #cancelDeadline(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * The attempt is over (abandoned, failed, or its response finished): the deadline, the abandon
   * hook, the share controller's probe and the span end, and the provider's limit slots are given
   * back. Idempotent.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#cancelDeadline();
    this.#ctx.offAbandon(this);
    this.probe?.end();
    endSpan(this.span);
    this.#grants?.release();
  }
}

/** The attempt's CLIENT span, child of the request's server span (tracing on). */
function attemptSpan(ctx: RequestContext, provider: ProviderRoute, number: number): Span {
  const requested = ctx.json?.model;
  return startAttemptSpan(
    ctx.span,
    provider.name,
    number,
    provider.gatewayModel ?? (typeof requested === 'string' ? requested : undefined),
    { operation: genAiOperationForPath(ctx.path), ...provider.endpoint.server },
  );
}

/** Why a request could not be sent to the provider. */
export type SendFailure =
  /** The rewritten body could not be serialized (nesting beyond the JSON serializer's depth). */
  | { kind: 'unserializable' }
  /** The upstream client refused the request before it left (undici's error). */
  | { kind: 'error'; error: Error & { code?: string } };

const UNSERIALIZABLE: SendFailure = { kind: 'unserializable' };

/**
 * Sends the client's request to the attempt's provider and binds it to the attempt; `listener` hears
 * of the response head (or that none came). Never throws: a request that could not leave is returned
 * as a failure, and the listener is not called for it.
 */
export function send(
  ctx: RequestContext,
  attempt: Attempt,
  upstream: UpstreamClient,
  listener: HeadListener,
): UpstreamExchange | SendFailure {
  const provider = attempt.provider;
  const method = ctx.req.method ?? 'GET';
  const headers = forwardRequestHeaders(ctx.req.headers, headerDropFor(attempt));
  if (provider.authHeader) headers[provider.authHeader[0]] = provider.authHeader[1];
  injectTraceHeaders(headers, attempt.span, provider.propagateTraceContext);
  let body: Buffer | undefined;
  try {
    body = BODYLESS_METHODS.has(method) ? undefined : bodyFor(ctx, provider);
  } catch {
    return UNSERIALIZABLE;
  }
  try {
    const exchange = upstream.send(
      {
        origin: provider.endpoint.origin,
        path: upstreamPath(provider.endpoint, ctx.req.url ?? '/'),
        method: method as Dispatcher.HttpMethod,
        headers,
        body: body ?? null,
      },
      listener,
    );
    attempt.bindExchange(exchange);
    return exchange;
  } catch (error) {
    return sendFailed(attempt, error);
  }
}

/** Records on the attempt's span how the request went; the failure as the dispatcher sees it. */
export function sendFailed(attempt: Attempt, error: unknown): SendFailure {
  const failure = error as Error & { code?: string };
  setAttemptError(attempt.span, attempt.expired ? 'first_token_timeout' : (failure.code ?? 'error'));
  return { kind: 'error', error: failure };
}
