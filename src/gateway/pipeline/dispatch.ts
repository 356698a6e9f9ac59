import { attemptOrder } from '../balance/strategies.js';
import type { ProviderRoute } from '../config/runtime.js';
import type { UpstreamClient } from '../http/upstream.js';
import { UpstreamExchange, UpstreamResponse } from '../http/upstream-exchange.js';
import { setAttemptStatus } from '../telemetry/tracing.js';
import { GrantSet } from '../limits/grant-set.js';
import { isPromise, type Refusal } from '../limits/types.js';
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
 * rejects: the request path does not wait for it (one async frame and one promise fewer held by
 * every request while its provider answers).
 */
export async function dispatch(ctx: RequestContext, deps: DispatchDeps): Promise<void> {
  try {
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

      let grants: GrantSet | undefined;
      if (provider.rateLimit !== undefined || provider.concurrencyLimit !== undefined) {
        grants = new GrantSet();
        const refusal = await acquireProviderLimits(provider, grants);
        if (refusal) {
          grants.release();
          countAttempt(ctx, deps, provider, 'local_refusal');
          if (!last && fallback?.onRateLimit) continue;
          return deps.answer(ctx, refusalError(refusal));
        }
      }
      if (ctx.isClosed) {
        grants?.release();
        return;
      }

      const attempt = new Attempt(
        ctx,
        {
          provider,
          number: i + 1,
          last,
          mode: responseModeFor(ctx, provider),
          deadlineMs: last && attempts > 1 ? undefined : deadline,
        },
        grants,
      );

      // The response head is awaited here, not in `send`: one async frame less per request.
      const sending = send(ctx, attempt, deps.upstream);
      // Only another attempt would read the parsed body again (to rewrite it for its provider):
      // after the last one is sent it is let go, not kept alive (and copied by every young
      // collection) for as long as the response takes.
      if (last) ctx.json = undefined;
      let sent: UpstreamResponse | SendFailure;
      if (sending instanceof UpstreamExchange) {
        try {
          sent = await sending.response;
          setAttemptStatus(attempt.span, sent.statusCode);
        } catch (error) {
          sent = sendFailed(attempt, error);
        }
      } else {
        sent = sending;
      }
      let reason: AbandonReason;
      let status: number | undefined;
      if (!(sent instanceof UpstreamResponse)) {
        if (sent.kind === 'unserializable') {
          attempt.probe?.unknown();
          attempt.release();
          return deps.answer(ctx, gatewayErrors.bodyTooDeep());
        }
        if (ctx.isClosed) {
          attempt.probe?.unknown();
          attempt.release();
          countAttempt(ctx, deps, provider, 'client_gone');
          return;
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
        ctx.hold(attempt);
        let served: ServeOutcome;
        try {
          const serving = serveResponse(ctx, attempt, sent, !last, deps);
          served = isPromise(serving) ? await serving : serving;
        } catch (error) {
          attempt.release();
          throw error;
        }
        if (served.kind === 'committed') {
          countAttempt(ctx, deps, provider, 'committed');
          return;
        }
        reason = served.reason;
        status = served.status;
        if (reason === 'connection_error') attempt.probe?.unknown();
      }

      if (reason === 'deadline') attempt.probe?.deadlineExpired(attempt.elapsedMs());
      attempt.release();
      countAttempt(ctx, deps, provider, reason);
      if (ctx.isClosed) return;
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
    deps.answer(ctx, lastFailure ?? gatewayErrors.upstreamUnavailable());
  } catch (error) {
    deps.failUnexpectedly(ctx, error);
  }
}
