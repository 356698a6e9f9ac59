import type { Dispatcher } from 'undici';
import type { AttemptProbe } from '../balance/aimd.js';
import type { AttemptHealth } from '../balance/outliers.js';
import { CHAT_COMPLETIONS } from '../api/surfaces.js';
import type { ProviderRoute } from '../runtime/table.js';
import { forwardRequestHeaders, requestHeaderDrop } from '../http/headers.js';
import { upstreamPath, type UpstreamClient } from '../http/upstream.js';
import type { HeadListener, UpstreamExchange } from '../http/upstream-exchange.js';
import type { GrantSet } from '../limits/grant-set.js';
import type { Grant } from '../limits/types.js';
import type { AbandonListener, RequestContext } from './context.js';
import { failsOver } from './failover.js';
import { ServedRecord } from './served-record.js';
import type { ResponseMode } from './response-mode.js';
import type { Span } from '@opentelemetry/api';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import { applyReasoning } from '../reasoning/index.js';
import {
  NOOP_SPAN,
  TRACE_CONTEXT_HEADERS,
  endSpan,
  injectTraceHeaders,
  setAttemptError,
  startAttemptSpan,
} from '../telemetry/tracing.js';

const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

/** The Messages API's version and beta headers: meaningless to a chat-completions provider. */
const ANTHROPIC_HEADERS = ['anthropic-version', 'anthropic-beta'];

/**
 * Request headers not forwarded, by what the attempt allows: a provider that may not see the trace
 * context gets none of the client's trace headers; a response the gateway must read (sanitize,
 * inspect, translate) has to arrive uncompressed, so `accept-encoding` is not forwarded for it.
 */
const HEADER_DROP = {
  raw: requestHeaderDrop([]),
  rawNoTrace: requestHeaderDrop(TRACE_CONTEXT_HEADERS),
  read: requestHeaderDrop(['accept-encoding']),
  readNoTrace: requestHeaderDrop(['accept-encoding', ...TRACE_CONTEXT_HEADERS]),
  translated: requestHeaderDrop(['accept-encoding', ...ANTHROPIC_HEADERS]),
  translatedNoTrace: requestHeaderDrop(['accept-encoding', ...ANTHROPIC_HEADERS, ...TRACE_CONTEXT_HEADERS]),
} as const;

function headerDropFor(attempt: Attempt): ReadonlySet<string> {
  const propagate = attempt.provider.propagateTraceContext;
  if (attempt.mode.kind === 'raw') return propagate ? HEADER_DROP.raw : HEADER_DROP.rawNoTrace;
  if (attempt.mode.kind === 'translated')
    return propagate ? HEADER_DROP.translated : HEADER_DROP.translatedNoTrace;
  return propagate ? HEADER_DROP.read : HEADER_DROP.readNoTrace;
}

/**
 * The body to send to a provider: the translated request for a provider that does not speak the
 * request's surface; else the client's bytes unchanged, unless the provider translates the
 * reasoning effort (spec 2.6) or has a `gateway_model` (spec 4.4 rule 3); then the parsed body,
 * rewritten for this provider only (copy-on-write), is re-serialized.
 */
export function bodyFor(ctx: RequestContext, provider: ProviderRoute): Buffer | undefined {
  if (ctx.body.length === 0) return undefined;
  const translation = ctx.translation;
  if (translation !== undefined && provider.api !== ctx.surface!.nativeApi) {
    const body = translation.body;
    return Buffer.from(
      JSON.stringify(provider.gatewayModel === undefined ? body : { ...body, model: provider.gatewayModel }),
    );
  }
  const json = ctx.reasoning && ctx.json ? applyReasoning(ctx.reasoning, provider.index, ctx.json) : ctx.json;
  if (json === undefined || (json === ctx.json && provider.gatewayModel === undefined && !ctx.usageInjected))
    return ctx.body;
  if (provider.gatewayModel === undefined && !ctx.usageInjected) return Buffer.from(JSON.stringify(json));
  const rewritten: Record<string, unknown> = { ...json };
  if (provider.gatewayModel !== undefined) rewritten.model = provider.gatewayModel;
  if (ctx.usageInjected) rewritten.stream_options = withIncludeUsage(json.stream_options);
  return Buffer.from(JSON.stringify(rewritten));
}

/** The client's `stream_options` (when an object) with `include_usage: true`. */
function withIncludeUsage(options: unknown): Record<string, unknown> {
  const base = typeof options === 'object' && options !== null && !Array.isArray(options) ? options : {};
  return { ...base, include_usage: true };
}

/**
 * Whether the gateway asks for usage in this request's stream (`usage.request_in_streams`): a
 * streamed chat or text completion whose client did not ask for it.
 */
export function injectsUsage(json: Record<string, unknown> | undefined): boolean {
  if (json?.stream !== true) return false;
  const options = json.stream_options as { include_usage?: unknown } | null | undefined;
  return options?.include_usage !== true;
}

/**
 * Why an attempt was given up before anything reached the client. `client_gone` is the client's
 * doing, not the provider's: it is never failed over and never counts against the provider.
 */
export type AbandonReason =
  'status' | 'embedded_error' | 'deadline' | 'timeout' | 'connection_error' | 'client_gone';

/** Which of a provider's `timeouts` ended an attempt. */
export type TimeoutKind = 'connect' | 'headers' | 'idle' | 'total';

/** undici's errors for the timeouts it enforces (the total is the attempt's own timer). */
const UNDICI_TIMEOUTS: Readonly<Record<string, TimeoutKind>> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'headers',
  UND_ERR_BODY_TIMEOUT: 'idle',
};

/** The attempt loop: told when an attempt is abandoned, to fail over or answer. */
export interface AttemptListener {
  attemptAbandoned(attempt: Attempt, reason: AbandonReason, status: number | undefined): void;
}

export interface AttemptDeps {
  logger: Logger;
  metrics: GatewayMetrics;
}

/**
 * One try of one provider, from the request it sends to the end of its response. It ends in
 * exactly one of:
 * - `commit()`: its response goes to the client (the head is written right after); no failover
 *   follows, and the first-token deadline no longer applies;
 * - `abandon(reason)` (or `failed(error)`, which finds the reason): nothing reached the client;
 *   the outcome is recorded (metric, share controller, span, log), the provider's limit slots are
 *   given back, and the attempt loop decides whether the next provider is tried.
 *
 * It can be aborted (client gone, deadline, or `total_ms`) and, when armed, owns the first-token deadline: a
 * timer started with the attempt and cancelled at commit. When the timer fires first, the attempt
 * is aborted, and the failure that abort causes is read as `deadline`. It also owns the provider's
 * `total_ms` (a timer that runs until the response is done: before the commit its expiry is a
 * `timeout`, after it the response is cut); the other timeouts are undici's, read from its errors.
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
  readonly #deps: AttemptDeps;
  readonly #listener: AttemptListener;
  /** The provider's limit slots taken for this attempt (none when the provider has no limits). */
  readonly #grants: GrantSet | undefined;
  #state: 'open' | 'committed' | 'abandoned' = 'open';
  #aborted = false;
  #expired = false;
  #released = false;
  /** The request in flight to the provider, once sent. */
  #exchange: UpstreamExchange | undefined;
  #timer: NodeJS.Timeout | undefined;
  #totalTimer: NodeJS.Timeout | undefined;
  /** `total_ms` is armed when the response head arrives (see the constructor). */
  #totalAtHead = false;
  /** The timeout that ended this attempt, once one did. */
  #timedOut: TimeoutKind | undefined;
  /** What this attempt says of its provider's health, for outlier detection (at release). */
  #health: AttemptHealth | undefined;

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
    listener: AttemptListener,
    deps: AttemptDeps,
  ) {
    this.#ctx = ctx;
    ctx.attempts++;
    this.#grants = grants;
    this.#listener = listener;
    this.#deps = deps;
    this.provider = plan.provider;
    this.number = plan.number;
    this.last = plan.last;
    this.mode = plan.mode;
    this.probe = ctx.route!.share?.startAttempt(plan.provider.index === 0 ? 'preferred' : 'alternate');
    ctx.route!.picker?.started(plan.provider.index);
    this.span = ctx.span === NOOP_SPAN ? NOOP_SPAN : attemptSpan(ctx, plan.provider, plan.number);
    ctx.onAbandon(this);
    if (plan.deadlineMs !== undefined) {
      this.#timer = setTimeout(() => {
        this.#expired = true;
        this.abort();
      }, plan.deadlineMs);
    }
    // `total_ms`: a configured one bounds every attempt; the default only non-streamed responses.
    // One longer than the connect and headers timeouts together cannot expire before the response
    // head, and the default is not known to apply before it: those are armed when the head arrives,
    // and only if the body is still to come (most bodies arrive with their head), so a request
    // usually pays no timer for it.
    const timeouts = plan.provider.timeouts;
    const configured = timeouts.streamTotalMs;
    if (configured !== undefined && configured <= timeouts.connectMs + timeouts.headersMs)
      this.#armTotal(configured);
    else this.#totalAtHead = true;
  }

  /**
   * The response head arrived: a `total_ms` left for it is armed now, with what remains of it,
   * unless the body has ended already or (for the default) the response is an event stream.
   */
  responseStarted(eventStream: boolean, bodyComplete: boolean): void {
    if (!this.#totalAtHead) return;
    this.#totalAtHead = false;
    const timeouts = this.provider.timeouts;
    const totalMs = timeouts.streamTotalMs ?? (eventStream ? undefined : timeouts.totalMs);
    if (totalMs !== undefined && !bodyComplete) this.#armTotal(Math.max(0, totalMs - this.elapsedMs()));
  }

  #armTotal(ms: number): void {
    this.#totalTimer = setTimeout(() => {
      // A body that has ended is only waiting for a slow client: nothing to cut.
      if (this.#exchange?.bodyComplete === true) return;
      this.#timedOut ??= 'total';
      this.abort();
    }, ms);
  }

  /**
   * The timeout behind `error` (undici's connect, headers or idle timeout, or the abort of this
   * attempt's `total_ms`), remembered as the one that ended the attempt; undefined for any other
   * failure.
   */
  noteTimeout(error: Error & { code?: string }): TimeoutKind | undefined {
    const kind = this.#timedOut ?? (error.code === undefined ? undefined : UNDICI_TIMEOUTS[error.code]);
    this.#timedOut = kind;
    return kind;
  }

  /** Another provider may be tried if this attempt is abandoned (spec 2.5: `fallback` and attempts left). */
  get canFailOver(): boolean {
    return !this.last;
  }

  /** Whether the pool fails over on `status` (a response status, or an error embedded in a 200). */
  failsOverOn(status: number): boolean {
    return failsOver(this.#ctx.route!.fallback, { kind: 'status', status }, !this.last);
  }

  /**
   * The provider answered `status` (its response's, or that of an error inside a 200): the share
   * controller hears it, and outlier detection reads a 5xx as a failure, a 4xx (429 included) as
   * nothing either way, and anything else as a success.
   */
  observeStatus(status: number): void {
    this.probe?.status(status);
    this.#health = status >= 500 ? 'failure' : status >= 400 ? undefined : 'success';
  }

  /** The provider's body broke after the commit (a reset, a timeout): a failure of the provider. */
  cut(): void {
    this.#health = 'failure';
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

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /**
   * This attempt answers the client: the caller writes the head right after, with no I/O between
   * (so the deadline cannot fire in between).
   */
  commit(): void {
    this.#settle('committed');
    this.#cancelDeadline();
    this.#count('committed');
    this.#ctx.served = new ServedRecord(this.provider, this.startedAt);
  }

  /**
   * Gives the attempt up before anything reached the client: the outcome is recorded, the attempt
   * released, and the attempt loop decides what follows.
   */
  abandon(reason: AbandonReason, status?: number, error?: Error & { code?: string }): void {
    this.#settle('abandoned');
    if (reason === 'connection_error' || reason === 'timeout') this.#health = 'failure';
    else if (reason === 'client_gone' || reason === 'deadline') this.#health = undefined;
    switch (reason) {
      case 'client_gone':
        // The client's departure says nothing of the provider (spec 3: a cancellation is unknown).
        this.probe?.unknown();
        setAttemptError(this.span, 'client_gone');
        break;
      case 'deadline':
        this.probe?.deadlineExpired(this.elapsedMs());
        setAttemptError(this.span, 'first_token_timeout');
        break;
      case 'timeout':
        // Spec 3: a connection never made is an unknown outcome; a provider that took the request
        // and produced no first token in time expired a deadline (a breach once past the budget).
        if (this.#timedOut === 'connect') this.probe?.unknown();
        else this.probe?.deadlineExpired(this.elapsedMs());
        setAttemptError(this.span, `${this.#timedOut ?? 'total'}_timeout`);
        break;
      case 'connection_error':
        this.probe?.unknown();
        setAttemptError(this.span, error?.code ?? 'error');
        break;
      case 'status':
      case 'embedded_error':
        // The status was recorded on the probe and the span when it was read.
        break;
    }
    this.release();
    this.#count(reason);
    this.#listener.attemptAbandoned(this, reason, status);
  }

  /**
   * The request failed before its response head (`head`), or the body before the commit point
   * (`body`: a reset, a cut JSON body, a stream broken before its first data frame). A client that
   * left aborts the request, and the deadline does too: the failure is then theirs. Otherwise it is
   * the provider's connection error, counted in `gateway_upstream_errors_total` and logged at warn,
   * never with the body (it can echo the request).
   */
  failed(error: Error & { code?: string }, phase: 'head' | 'body'): void {
    const ctx = this.#ctx;
    if (ctx.isClosed) {
      this.abandon('client_gone');
      return;
    }
    if (this.#expired) {
      this.abandon('deadline');
      return;
    }
    const deps = this.#deps;
    const timeout = this.noteTimeout(error);
    if (timeout !== undefined) {
      deps.metrics.upstreamErrors.inc({ model: ctx.modelLabel, reason: `${timeout}_timeout` });
      deps.logger.warn(
        {
          model: ctx.modelLabel,
          provider: this.provider.name,
          attempt: this.number,
          timeout: `${timeout}_ms`,
        },
        'upstream request timed out',
      );
      this.abandon('timeout', undefined, error);
      return;
    }
    deps.metrics.upstreamErrors.inc({
      model: ctx.modelLabel,
      reason: phase === 'body' ? 'body' : (error.code ?? 'error'),
    });
    deps.logger.warn(
      {
        model: ctx.modelLabel,
        provider: this.provider.name,
        attempt: this.number,
        code: error.code,
        err: error.message,
      },
      phase === 'body' ? 'upstream response failed before the commit point' : 'upstream request failed',
    );
    this.abandon('connection_error', undefined, error);
  }

  #settle(next: 'committed' | 'abandoned'): void {
    if (this.#state !== 'open') throw new Error(`attempt ${this.number} ${next} after it was ${this.#state}`);
    this.#state = next;
  }

  /** `gateway_upstream_attempts_total`, labels in order: model, pool, provider, outcome. */
  #count(outcome: AbandonReason | 'committed'): void {
    const ctx = this.#ctx;
    this.#deps.metrics.attemptsOf.get(ctx.modelLabel, ctx.route!.key, this.provider.label, outcome).inc();
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
    clearTimeout(this.#totalTimer);
    this.#ctx.offAbandon(this);
    // A response the client left before its end says nothing of the provider; a cut said so itself.
    const health = this.#health === 'success' && !this.#ctx.res.writableFinished ? undefined : this.#health;
    this.#ctx.route!.outliers?.record(this.provider.index, health);
    this.#ctx.route!.picker?.ended(this.provider.index);
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
    { operation: ctx.surface?.operation, ...provider.endpoint.server },
  );
}

/**
 * Sends the client's request (`body`, already made for this provider by `bodyFor`) to the attempt's
 * provider and binds it to the attempt; `listener` hears of the response head, or that none came.
 * A request the upstream client refuses on the spot fails the attempt at once.
 */
export function send(
  ctx: RequestContext,
  attempt: Attempt,
  body: Buffer | undefined,
  upstream: UpstreamClient,
  listener: HeadListener,
): void {
  const provider = attempt.provider;
  const method = ctx.req.method ?? 'GET';
  const headers = forwardRequestHeaders(ctx.req.headers, headerDropFor(attempt));
  if (provider.authHeader) headers[provider.authHeader[0]] = provider.authHeader[1];
  // The provider sees the id the client and the access log see (the client's own, or one made).
  headers['x-request-id'] = ctx.requestId;
  injectTraceHeaders(headers, attempt.span, provider.propagateTraceContext);
  let exchange: UpstreamExchange;
  try {
    exchange = upstream.send(
      {
        origin: provider.endpoint.origin,
        path: upstreamPath(
          provider.endpoint,
          attempt.mode.kind === 'translated' ? CHAT_COMPLETIONS.path : (ctx.req.url ?? '/'),
        ),
        method: method as Dispatcher.HttpMethod,
        headers,
        body: BODYLESS_METHODS.has(method) ? null : (body ?? null),
        headersTimeout: provider.upstreamTimeouts.headersTimeout,
        bodyTimeout: provider.upstreamTimeouts.bodyTimeout,
      },
      provider.upstreamTimeouts,
      listener,
      provider.endpoint.servername,
    );
  } catch (error) {
    attempt.failed(error as Error, 'head');
    return;
  }
  attempt.bindExchange(exchange);
}
