import { attemptOrder } from '../balance/strategies.js';
import type { ProviderRoute } from '../config/runtime.js';
import type { UpstreamClient } from '../http/upstream.js';
import { GrantSet } from '../limits/grant-set.js';
import { isPromise, type Refusal } from '../limits/types.js';
import { Attempt, send } from './attempt.js';
import type { CommitDeps } from './commit.js';
import type { RequestContext } from './context.js';
import { gatewayErrors, refusalError, type GatewayError } from './errors.js';
import { parseJsonBody } from './resolve.js';
import { responseModeFor } from './response-mode.js';
import { serveResponse, type AbandonReason, type ServeOutcome } from './serve.js';

export interface DispatchDeps extends CommitDeps {
  upstream: UpstreamClient;
  sseBufferLimit: number;
}

/** Takes the provider's own limits for one attempt; the grants live as long as the attempt serves. */
async function acquireProviderLimits(provider: ProviderRoute, grants: GrantSet): Promise<Refusal | null> {
  for (const limiter of [provider.rateLimit, provider.concurrencyLimit]) {
    if (!limiter) continue;
    const answer = limiter.acquire();
    const refusal = grants.hold(isPromise(answer) ? await answer : answer);
    if (refusal) return refusal;
  }
  return null;
}

/**
 * Dispatch (spec 2.5, 3.1, DESIGN 6): orders the providers (strategy and share controller), then
 * tries them one by one until one commits a response or no attempt is left. The request's own limit
 * slots (in-flight included) are held across attempts; each provider's limits only for its attempt.
 * Returns a gateway error when no attempt produced a response to send.
 */
export async function dispatch(ctx: RequestContext, deps: DispatchDeps): Promise<GatewayError | undefined> {
  const route = ctx.route!;
  const fallback = route.fallback;
  const order = attemptOrder(route.strategy, route.providers, Math.random, route.share);
  const attempts = Math.min(order.length, fallback?.maxAttempts ?? 1);
  // The deadline applies to streamed requests (a non-streamed body has no observable first token).
  // It never cuts the last attempt of several: only a lone attempt ends in 504 first_token_timeout.
  if (fallback?.firstTokenTimeoutMs !== undefined) parseJsonBody(ctx);
  const deadline = ctx.json?.stream === true ? fallback?.firstTokenTimeoutMs : undefined;

  let lastFailure: GatewayError | undefined;
  for (let i = 0; i < attempts; i++) {
    const provider = order[i]!;
    const last = i === attempts - 1;
    // upstream_attempts_total labels, in labelNames order: model, pool, provider, outcome.
    const countAttempt = (outcome: string): void =>
      deps.metrics.attemptsOf.get(ctx.model, route.key, provider.name, outcome).inc();

    const grants = new GrantSet();
    const limited = provider.rateLimit !== undefined || provider.concurrencyLimit !== undefined;
    const refusal = limited ? await acquireProviderLimits(provider, grants) : null;
    if (refusal) {
      grants.release();
      countAttempt('local_refusal');
      if (!last && fallback?.onRateLimit) continue;
      return refusalError(refusal);
    }
    if (ctx.isClosed) {
      grants.release();
      return undefined;
    }

    const attempt = new Attempt(ctx, {
      provider,
      number: i + 1,
      last,
      mode: responseModeFor(ctx, provider),
      deadlineMs: last && attempts > 1 ? undefined : deadline,
    });
    const finishAttempt = (): void => {
      attempt.dispose();
      grants.release();
    };

    let sent: Awaited<ReturnType<typeof send>>;
    try {
      sent = await send(ctx, attempt, deps.upstream);
    } catch (error) {
      finishAttempt();
      throw error;
    }
    let reason: AbandonReason;
    let status: number | undefined;
    if (sent.kind === 'unserializable') {
      attempt.probe?.unknown();
      finishAttempt();
      return gatewayErrors.bodyTooDeep();
    }
    if (sent.kind === 'error') {
      if (ctx.isClosed) {
        attempt.probe?.unknown();
        finishAttempt();
        countAttempt('client_gone');
        return undefined;
      }
      reason = attempt.expired ? 'deadline' : 'connection_error';
      if (reason === 'connection_error') {
        attempt.probe?.unknown();
        deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: sent.error.code ?? 'error' });
        deps.logger.warn(
          {
            model: ctx.model,
            provider: provider.name,
            attempt: i + 1,
            code: sent.error.code,
            err: sent.error.message,
          },
          'upstream request failed',
        );
      }
    } else {
      // The attempt's grants and probe stay alive until the response is done with.
      ctx.hold({ ok: true, release: finishAttempt });
      let served: ServeOutcome;
      try {
        const serving = serveResponse(ctx, attempt, sent.response, !last, deps, finishAttempt);
        served = isPromise(serving) ? await serving : serving;
      } catch (error) {
        finishAttempt();
        throw error;
      }
      if (served.kind === 'committed') {
        countAttempt('committed');
        return undefined;
      }
      reason = served.reason;
      status = served.status;
      if (reason === 'connection_error') attempt.probe?.unknown();
    }

    if (reason === 'deadline') attempt.probe?.deadlineExpired(attempt.elapsedMs());
    finishAttempt();
    countAttempt(reason);
    if (ctx.isClosed) return undefined;
    lastFailure =
      reason === 'deadline' ? gatewayErrors.firstTokenTimeout() : gatewayErrors.upstreamUnavailable();

    const retryable =
      reason === 'deadline' ||
      reason === 'status' ||
      reason === 'embedded_error' ||
      fallback?.onConnectionError === true;
    if (last || !fallback || !retryable) break;
    deps.logger.info(
      { model: ctx.model, pool: route.key, provider: provider.name, attempt: i + 1, reason, status },
      'failing over to the next provider',
    );
  }
  return lastFailure ?? gatewayErrors.upstreamUnavailable();
}
