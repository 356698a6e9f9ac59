import { attemptOrder } from '../balance/strategies.js';
import type { ProviderRoute } from '../runtime/table.js';
import type { UpstreamClient } from '../http/upstream.js';
import { UpstreamExchange, type HeadListener, type UpstreamResponse } from '../http/upstream-exchange.js';
import { setAttemptError, setAttemptStatus } from '../telemetry/tracing.js';
import { GrantSet } from '../limits/grant-set.js';
import { isPromise, type MaybePromise, type Refusal } from '../limits/types.js';
import { Attempt, send, sendFailed, type SendFailure } from './attempt.js';
import type { CommitDeps } from './commit.js';
import type { RequestContext } from './context.js';
import { gatewayErrors, refusalError, type GatewayError } from './errors.js';
import { parseJsonBody } from './resolve.js';
import { responseModeFor } from './response-mode.js';
import { serveResponse, type AbandonReason, type ServeOutcome } from './serve.js';

export interface DispatchDeps extends CommitDeps {
  upstream: UpstreamClient;
  sseBufferLimit: number;
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

/** upstream_attempts_total, labels in labelNames order: model, pool, provider, outcome. */
function countAttempt(
  ctx: RequestContext,
  deps: DispatchDeps,
  provider: ProviderRoute,
  outcome: string,
): void {
  deps.metrics.attemptsOf.get(ctx.model, ctx.route!.key, provider.name, outcome).inc();
}

/**
 * Dispatch (spec 2.5, 3.1, DESIGN 6): orders the providers (strategy and share controller), then
 * tries them one by one until one commits a response or no attempt is left. The request's own limit
 * slots (in-flight included) are held across attempts; each provider's limits only for its attempt.
 * Answers the gateway's error itself when no attempt produced a response to send, and never
 * throws: the request path does not wait for it.
 */
export function dispatch(ctx: RequestContext, deps: DispatchDeps): void {
  try {
    new Dispatch(ctx, deps).start(0);
  } catch (error) {
    deps.failUnexpectedly(ctx, error);
  }
}

/**
 * One request's way through its providers, driven by callbacks rather than an async function: while
 * its provider thinks, a request holds this object (the exchange's listener) instead of a suspended
 * frame, its promise and the head's promise with its resolve and reject functions. Every way in
 * (`dispatch`, the head callbacks, a later limiter or serve answer) catches what it throws.
 */
class Dispatch implements HeadListener {
  readonly #ctx: RequestContext;
  readonly #deps: DispatchDeps;
  readonly #order: readonly ProviderRoute[];
  /** How many providers may be tried. */
  readonly #attempts: number;
  /** The first-token deadline of an attempt that is not the last of several. */
  readonly #deadline: number | undefined;
  /** The attempt in progress. */
  #attempt: Attempt | undefined;

  constructor(ctx: RequestContext, deps: DispatchDeps) {
    this.#ctx = ctx;
    this.#deps = deps;
    const route = ctx.route!;
    const fallback = route.fallback;
    this.#order = attemptOrder(route.strategy, route.providers, Math.random, route.share);
    // The attempt order holds every provider once and maxAttempts is at most their number.
    this.#attempts = fallback?.maxAttempts ?? 1;
    // The deadline applies to streamed requests (a non-streamed body has no observable first token).
    // It never cuts the last attempt of several: only a lone attempt ends in 504 first_token_timeout.
    if (fallback?.firstTokenTimeoutMs !== undefined) parseJsonBody(ctx);
    this.#deadline = ctx.json?.stream === true ? fallback?.firstTokenTimeoutMs : undefined;
  }

  /**
   * Tries the provider at `index` (its own limits first). Only ever called with an attempt left: a
   * route has at least one provider, and a failed attempt answers instead when it was the last.
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

  #limitsTaken(index: number, grants: GrantSet, refusal: Refusal | null): void {
    if (!refusal) {
      this.#send(index, grants);
      return;
    }
    grants.release();
    countAttempt(this.#ctx, this.#deps, this.#order[index]!, 'local_refusal');
    if (index < this.#attempts - 1 && this.#ctx.route!.fallback?.onRateLimit) {
      this.start(index + 1);
      return;
    }
    this.#deps.answer(this.#ctx, refusalError(refusal));
  }

  #send(index: number, grants: GrantSet | undefined): void {
    const ctx = this.#ctx;
    if (ctx.isClosed) {
      grants?.release();
      return;
    }
    const last = index === this.#attempts - 1;
    const provider = this.#order[index]!;
    const attempt = new Attempt(
      ctx,
      {
        provider,
        number: index + 1,
        last,
        mode: responseModeFor(ctx, provider),
        deadlineMs: last && this.#attempts > 1 ? undefined : this.#deadline,
      },
      grants,
    );
    this.#attempt = attempt;
    const sending = send(ctx, attempt, this.#deps.upstream, this);
    // Only another attempt would read the parsed body again (to rewrite it for its provider):
    // after the last one is sent it is let go, not kept alive (and copied by every young
    // collection) for as long as the response takes.
    if (last) ctx.json = undefined;
    if (!(sending instanceof UpstreamExchange)) this.#notSent(attempt, sending);
  }

  headArrived(response: UpstreamResponse): void {
    const attempt = this.#attempt!;
    try {
      setAttemptStatus(attempt.span, response.statusCode);
      this.#serve(attempt, response);
    } catch (error) {
      this.#failUnexpectedly(error);
    }
  }

  headFailed(error: Error): void {
    const attempt = this.#attempt!;
    try {
      this.#notSent(attempt, sendFailed(attempt, error));
    } catch (unexpected) {
      this.#failUnexpectedly(unexpected);
    }
  }

  /** The request did not reach a response head (it could not leave, or it failed on the way). */
  #notSent(attempt: Attempt, failure: SendFailure): void {
    const ctx = this.#ctx;
    const deps = this.#deps;
    if (failure.kind === 'unserializable') {
      attempt.probe?.unknown();
      attempt.release();
      deps.answer(ctx, gatewayErrors.bodyTooDeep());
      return;
    }
    if (ctx.isClosed) {
      attempt.probe?.unknown();
      attempt.release();
      countAttempt(ctx, deps, attempt.provider, 'client_gone');
      return;
    }
    if (attempt.expired) {
      this.#attemptFailed(attempt, 'deadline', undefined);
      return;
    }
    attempt.probe?.unknown();
    deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: failure.error.code ?? 'error' });
    deps.logger.warn(
      {
        model: ctx.model,
        provider: attempt.provider.name,
        attempt: attempt.number,
        code: failure.error.code,
        err: failure.error.message,
      },
      'upstream request failed',
    );
    this.#attemptFailed(attempt, 'connection_error', undefined);
  }

  #serve(attempt: Attempt, response: UpstreamResponse): void {
    // The attempt's grants and probe stay alive until the response is done with.
    this.#ctx.hold(attempt);
    let serving: MaybePromise<ServeOutcome>;
    try {
      serving = serveResponse(this.#ctx, attempt, response, !attempt.last, this.#deps);
    } catch (error) {
      attempt.release();
      throw error;
    }
    if (!isPromise(serving)) {
      this.#served(attempt, serving);
      return;
    }
    serving.then(
      (outcome) => {
        try {
          this.#served(attempt, outcome);
        } catch (error) {
          this.#failUnexpectedly(error);
        }
      },
      (error: unknown) => {
        attempt.release();
        this.#failUnexpectedly(error);
      },
    );
  }

  #served(attempt: Attempt, served: ServeOutcome): void {
    if (served.kind === 'committed') {
      attempt.committed();
      countAttempt(this.#ctx, this.#deps, attempt.provider, 'committed');
      return;
    }
    if (served.reason === 'client_gone') {
      // The client's departure says nothing of the provider (spec 3: a cancellation is unknown).
      attempt.probe?.unknown();
      setAttemptError(attempt.span, 'client_gone');
      attempt.release();
      countAttempt(this.#ctx, this.#deps, attempt.provider, 'client_gone');
      return;
    }
    if (served.reason === 'connection_error') {
      attempt.probe?.unknown();
      this.#bodyFailed(attempt, served.error);
    }
    this.#attemptFailed(attempt, served.reason, served.status);
  }

  /**
   * The provider's body failed before the commit point (a reset, a cut JSON body, a stream broken
   * before its first data frame): counted and logged like a request that failed on its way, never
   * with the body (it can echo the request).
   */
  #bodyFailed(attempt: Attempt, error: (Error & { code?: string }) | undefined): void {
    const ctx = this.#ctx;
    const deps = this.#deps;
    const code = error?.code;
    setAttemptError(attempt.span, code ?? 'body');
    deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: 'body' });
    deps.logger.warn(
      {
        model: ctx.model,
        provider: attempt.provider.name,
        attempt: attempt.number,
        code,
        err: error?.message,
      },
      'upstream response failed before the commit point',
    );
  }

  /** The attempt produced nothing to send: fail over to the next provider, or answer the error. */
  #attemptFailed(attempt: Attempt, reason: AbandonReason, status: number | undefined): void {
    const ctx = this.#ctx;
    const deps = this.#deps;
    if (reason === 'deadline') attempt.probe?.deadlineExpired(attempt.elapsedMs());
    attempt.release();
    countAttempt(ctx, deps, attempt.provider, reason);
    if (ctx.isClosed) return;

    const fallback = ctx.route!.fallback;
    const retryable =
      reason === 'deadline' ||
      reason === 'status' ||
      reason === 'embedded_error' ||
      fallback?.onConnectionError === true;
    if (attempt.last || !fallback || !retryable) {
      deps.answer(
        ctx,
        reason === 'deadline' ? gatewayErrors.firstTokenTimeout() : gatewayErrors.upstreamUnavailable(),
      );
      return;
    }
    deps.logger.info(
      {
        model: ctx.model,
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
