import type { Dispatcher } from 'undici';
import type { ProviderRoute } from '../config/runtime.js';
import { forwardRequestHeaders } from '../http/headers.js';
import { upstreamPath, type UpstreamClient } from '../http/upstream.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import type { RequestContext } from './context.js';
import { gatewayErrors, refusalError, type GatewayError } from './errors.js';
import { passThrough } from './respond.js';
import { isPromise } from '../limits/types.js';

export interface DispatchDeps {
  upstream: UpstreamClient;
  logger: Logger;
  metrics: GatewayMetrics;
}

/** What one upstream attempt produced. */
export type AttemptOutcome =
  | { kind: 'response'; response: Dispatcher.ResponseData }
  | { kind: 'connection_error'; error: Error & { code?: string } }
  | { kind: 'client_gone' };

const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

/**
 * The body to send to a provider: the client's bytes unchanged, unless the provider has a
 * `gateway_model` (spec 4.4 rule 3) and the body is a JSON object, in which case `model` is
 * replaced and the object re-serialized.
 */
export function bodyFor(ctx: RequestContext, provider: ProviderRoute): Buffer | undefined {
  if (ctx.body.length === 0) return undefined;
  if (provider.gatewayModel === undefined || ctx.json === undefined) return ctx.body;
  return Buffer.from(JSON.stringify({ ...ctx.json, model: provider.gatewayModel }));
}

/** Sends the request to one provider; never throws. */
export async function attempt(
  ctx: RequestContext,
  provider: ProviderRoute,
  deps: DispatchDeps,
): Promise<AttemptOutcome> {
  const method = ctx.req.method ?? 'GET';
  const headers = forwardRequestHeaders(ctx.req.headers, undefined);
  if (provider.authHeader) headers[provider.authHeader[0]] = provider.authHeader[1];
  const body = BODYLESS_METHODS.has(method) ? undefined : bodyFor(ctx, provider);
  try {
    const response = await deps.upstream.request({
      origin: provider.endpoint.origin,
      path: upstreamPath(provider.endpoint, ctx.req.url ?? '/'),
      method: method as Dispatcher.HttpMethod,
      headers,
      body: body ?? null,
      signal: ctx.abort.signal,
    });
    if (ctx.isClosed) {
      response.body.destroy();
      return { kind: 'client_gone' };
    }
    return { kind: 'response', response };
  } catch (error) {
    if (ctx.isClosed) return { kind: 'client_gone' };
    return { kind: 'connection_error', error: error as Error & { code?: string } };
  }
}

function connectionErrorToGateway(error: Error & { code?: string }): GatewayError {
  return error.code === 'UND_ERR_HEADERS_TIMEOUT'
    ? gatewayErrors.upstreamTimeout()
    : gatewayErrors.upstreamUnavailable();
}

/**
 * Sends the request to the route's provider and streams the answer back. Provider-level limits are
 * checked here, per attempt, because they belong to whichever provider is tried.
 */
export async function dispatch(ctx: RequestContext, deps: DispatchDeps): Promise<GatewayError | undefined> {
  const route = ctx.route!;
  const provider = route.providers[0]!;

  for (const limiter of [provider.rateLimit, provider.concurrencyLimit]) {
    if (!limiter) continue;
    const answer = limiter.acquire();
    const settled = isPromise(answer) ? await answer : answer;
    if (!settled.ok) return refusalError(settled);
    ctx.hold(settled);
  }

  const outcome = await attempt(ctx, provider, deps);
  switch (outcome.kind) {
    case 'client_gone':
      return undefined;
    case 'connection_error':
      deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: outcome.error.code ?? 'error' });
      deps.logger.warn(
        { model: ctx.model, provider: provider.name, code: outcome.error.code, err: outcome.error.message },
        'upstream request failed',
      );
      return connectionErrorToGateway(outcome.error);
    case 'response':
      passThrough(ctx, provider, outcome.response, deps);
      return undefined;
  }
}
