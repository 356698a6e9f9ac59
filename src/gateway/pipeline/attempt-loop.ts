import { attemptOrder } from '../balance/strategies.js';
import type { ProviderRoute } from '../runtime/table.js';
import type { UpstreamClient } from '../http/upstream.js';
import type { HeadListener, UpstreamResponse } from '../http/upstream-exchange.js';
import { setAttemptStatus } from '../telemetry/tracing.js';
import { isEventStream } from '../http/headers.js';
import { GrantSet } from '../limits/grant-set.js';
import { isPromise, type MaybePromise, type Refusal } from '../limits/types.js';
import { Attempt, bodyFor, injectsUsage, send, type AbandonReason, type AttemptListener } from './attempt.js';
import type { RequestContext } from './context.js';
import { gatewayErrors, refusalError, type GatewayError } from './errors.js';
import { parseJsonBody } from './resolve.js';
import { failsOver, type AttemptResult } from './failover.js';
import { respond, type RespondDeps } from './respond.js';
import { responseModeFor } from './response-mode.js';

export interface AttemptLoopDeps extends RespondDeps {
  upstream: UpstreamClient;
  /** Answers the client with the gateway's error (counted and logged when it is a rejection). */
  answer(ctx: RequestContext, error: GatewayError): void;
  /** A bug on the request path: logged, and the client gets a 500 (or a cut response). */
  failUnexpectedly(ctx: RequestContext, error: unknown): void;
}

/**
 * Takes the provider's own limits for one attempt into `grants` (they live as long as the attempt
 * serves), rate first: the refusal, null, or a promise of either when a limiter answers later
 * (limits shared through Redis).
 */
function takeProviderLimits(provider: ProviderRoute, grants: GrantSet): MaybePromise<Refusal | null> {
  const rate = provider.rateLimit?.acquire();
  if (rate === undefined) return takeProviderConcurrency(provider, grants);
  if (isPromise(rate))
    return rate.then((answer) => grants.hold(answer) ?? takeProviderConcurrency(provider, grants));
  return grants.hold(rate) ?? takeProviderConcurrency(provider, grants);
}

function takeProviderConcurrency(provider: ProviderRoute, grants: GrantSet): MaybePromise<Refusal | null> {
  const answer = provider.concurrencyLimit?.acquire();
  if (answer === undefined) return null;
  return isPromise(answer) ? answer.then((granted) => grants.hold(granted)) : grants.hold(answer);
}

const LOCAL_REFUSAL: AttemptResult = Object.freeze({ kind: 'local_refusal' });

/** The request header that names a session for `prefix_affinity` (after the body's keys). */
const SESSION_HEADER = 'x-session-id';
/** The client's error when the last attempt was abandoned for a timeout; otherwise 503. */
const NO_PROVIDER_LEFT: Partial<Record<AbandonReason, () => GatewayError>> = {
  deadline: gatewayErrors.firstTokenTimeout,
  timeout: gatewayErrors.upstreamTimeout,
};

/**
 * The request's way through its providers (spec 2.5, 3.1): orders them (strategy and share
 * controller), then tries them one by one until an attempt commits a response or none is left.
 * The request's own limit slots (in-flight included) are held across attempts; each provider's
 * limits only for its attempt. Answers the gateway's error itself when no attempt produced a
 * response to send, and never throws: the request path does not wait for it.
 */
export function runAttempts(ctx: RequestContext, deps: AttemptLoopDeps): void {
  try {
    // Only a pool of Services can be empty: none of their pods is ready (or none was heard of yet).
    if (ctx.route!.providers.length === 0) deps.answer(ctx, gatewayErrors.noMembers());
    else new AttemptLoop(ctx, deps).start(0);
  } catch (error) {
    deps.failUnexpectedly(ctx, error);
  }
}

/**
 * Driven by callbacks rather than an async function: while its provider thinks, a request holds
 * this object (the exchange's listener) instead of a suspended frame, its promise and the head's
 * promise with its resolve and reject functions. Every way in (`runAttempts`, the head callbacks,
 * a later limiter or response answer) catches what it throws.
 */
class AttemptLoop implements HeadListener, AttemptListener {
  readonly #ctx: RequestContext;
  readonly #deps: AttemptLoopDeps;
  readonly #order: readonly ProviderRoute[];
  /** How many providers may be tried: `max_attempts` (resolved at compile time), or fewer when ejection left fewer. */
  readonly #attempts: number;
  /** The first-token deadline of an attempt that is not the last of several. */
  readonly #deadline: number | undefined;
  /** `max_attempts` as configured, whatever ejection left: the first-token deadline's rule reads it. */
  readonly #configuredAttempts: number;
  /** The attempt in progress. */
  #attempt: Attempt | undefined;

  constructor(ctx: RequestContext, deps: AttemptLoopDeps) {
    this.#ctx = ctx;
    this.#deps = deps;
    const route = ctx.route!;
    const fallback = route.fallback;
    const order = attemptOrder(route.strategy, route.providers, Math.random, route, () => {
      parseJsonBody(ctx);
      const session = ctx.req.headers[SESSION_HEADER];
      return { json: ctx.json, sessionHeader: typeof session === 'string' ? session : undefined };
    });
    // Ejected providers are skipped whatever the strategy and the share controller chose; a pool
    // always keeps at least one provider in selection.
    const native = ctx.surface?.nativeApi;
    const servable = ctx.nativeOnly ? order.filter((provider) => provider.api === native) : order;
    this.#order = route.outliers === undefined ? servable : route.outliers.withoutEjected(servable);
    this.#configuredAttempts = fallback?.maxAttempts ?? 1;
    this.#attempts = Math.min(this.#configuredAttempts, this.#order.length);
    // The deadline applies to streamed requests (a non-streamed body has no observable first token).
    if (fallback?.firstTokenTimeoutMs !== undefined) parseJsonBody(ctx);
    // A budgeted stream asks for its usage too: without it, its charge would be its reservation.
    if ((route.requestUsageInStreams || ctx.spendHold !== undefined) && ctx.surface?.streamOptions === true) {
      parseJsonBody(ctx);
      ctx.usageInjected = injectsUsage(ctx.json);
    }
    this.#deadline = ctx.json?.stream === true ? fallback?.firstTokenTimeoutMs : undefined;
  }

  /**
   * Tries the provider at `index` (its own limits first). Only ever called with an attempt left: a
   * route has at least one provider, and an abandoned attempt answers instead when it was the last.
   */
  start(index: number): void {
    const provider = this.#order[index]!;
    if (provider.rateLimit === undefined && provider.concurrencyLimit === undefined) {
      this.#send(index, undefined);
      return;
    }
    const grants = new GrantSet();
    const taken = takeProviderLimits(provider, grants);
    if (!isPromise(taken)) {
      this.#limitsTaken(index, grants, taken);
      return;
    }
    taken.then(
      (refusal) => {
        try {
          this.#limitsTaken(index, grants, refusal);
        } catch (error) {
          this.#failUnexpectedly(error);
        }
      },
      (error: unknown) => {
        grants.release();
        this.#failUnexpectedly(error);
      },
    );
  }

  /** A provider's own limit refusal moves on only with `on_rate_limit` (spec 2.5). */
  #limitsTaken(index: number, grants: GrantSet, refusal: Refusal | null): void {
    if (!refusal) {
      this.#send(index, grants);
      return;
    }
    grants.release();
    const ctx = this.#ctx;
    const provider = this.#order[index]!;
    this.#deps.metrics.attemptsOf.get(ctx.modelLabel, ctx.route!.key, provider.label, 'local_refusal').inc();
    if (failsOver(ctx.route!.fallback, LOCAL_REFUSAL, index < this.#attempts - 1)) {
      this.start(index + 1);
      return;
    }
    this.#deps.answer(ctx, refusalError(refusal));
  }

  #send(index: number, grants: GrantSet | undefined): void {
    const ctx = this.#ctx;
    if (ctx.isClosed) {
      grants?.release();
      return;
    }
    const provider = this.#order[index]!;
    let body: Buffer | undefined;
    try {
      body = bodyFor(ctx, provider);
    } catch {
      // The rewritten body cannot be serialized (nesting beyond the JSON serializer's depth).
      grants?.release();
      this.#deps.answer(ctx, gatewayErrors.bodyTooDeep());
      return;
    }
    const last = index === this.#attempts - 1;
    const attempt = new Attempt(
      ctx,
      {
        provider,
        number: index + 1,
        last,
        mode: responseModeFor(ctx, provider),
        // The deadline never cuts the last attempt of several (however many ejection left): only
        // a lone attempt ends in 504.
        deadlineMs: last && this.#configuredAttempts > 1 ? undefined : this.#deadline,
      },
      grants,
      this,
      this.#deps,
    );
    this.#attempt = attempt;
    // Only another attempt would read the parsed body again (to rewrite it for its provider):
    // after the last one is sent it is let go, not kept alive (and copied by every young
    // collection) for as long as the response takes.
    if (last) ctx.json = undefined;
    send(ctx, attempt, body, this.#deps.upstream, this);
  }

  headArrived(response: UpstreamResponse): void {
    const attempt = this.#attempt!;
    try {
      setAttemptStatus(attempt.span, response.statusCode);
      attempt.responseStarted(isEventStream(response.headers['content-type']), response.bodyComplete);
      // The attempt's grants and probe stay alive until the response is done with.
      this.#ctx.hold(attempt);
      const responding = respond(this.#ctx, attempt, response, this.#deps);
      if (isPromise(responding)) responding.catch((error: unknown) => this.#failUnexpectedly(error));
    } catch (error) {
      this.#failUnexpectedly(error);
    }
  }

  headFailed(error: Error): void {
    try {
      this.#attempt!.failed(error, 'head');
    } catch (unexpected) {
      this.#failUnexpectedly(unexpected);
    }
  }

  /**
   * The attempt produced nothing to send (spec 2.5): the next provider is tried when the failover
   * policy (`failover.ts`) says so; otherwise the client gets the gateway's error. A client that
   * left gets nothing.
   */
  attemptAbandoned(attempt: Attempt, reason: AbandonReason, status: number | undefined): void {
    const ctx = this.#ctx;
    if (ctx.isClosed) return;
    const result: AttemptResult =
      reason === 'status' || reason === 'embedded_error'
        ? { kind: 'status', status: status! }
        : { kind: reason };
    if (!failsOver(ctx.route!.fallback, result, !attempt.last)) {
      if (reason !== 'client_gone')
        this.#deps.answer(ctx, (NO_PROVIDER_LEFT[reason] ?? gatewayErrors.upstreamUnavailable)());
      return;
    }
    this.#deps.logger.info(
      {
        model: ctx.modelLabel,
        pool: ctx.route!.key,
        provider: attempt.provider.name,
        attempt: attempt.number,
        reason,
        status,
      },
      'failing over to the next provider',
    );
    this.start(attempt.number);
  }

  /** A bug on the request path: logged, and the client gets a 500 (or a cut response). */
  #failUnexpectedly(error: unknown): void {
    this.#deps.failUnexpectedly(this.#ctx, error);
  }
}
