import { pipeline } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ProviderRoute } from '../config/runtime.js';
import { forwardResponseHeaders } from '../http/headers.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import type { RequestContext } from './context.js';

export interface RespondDeps {
  logger: Logger;
  metrics: GatewayMetrics;
}

/** The provider's headers, minus hop-by-hop fields, with the configured `response_headers` on top. */
export function responseHeadersFor(
  provider: ProviderRoute,
  upstreamHeaders: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const headers = forwardResponseHeaders(upstreamHeaders);
  for (const [name, value] of provider.responseHeaders) headers[name] = value;
  return headers;
}

/**
 * Streams the provider's response to the client unchanged, with backpressure both ways (pipeline
 * pauses the upstream when the client is slow). If the provider's body breaks, the client's
 * response is destroyed rather than ended, so a cut stream reaches the client as a transport error
 * and never as a clean end. If the client goes away, pipeline destroys the upstream body, which
 * aborts the upstream request.
 */
export function passThrough(
  ctx: RequestContext,
  provider: ProviderRoute,
  response: Dispatcher.ResponseData,
  deps: RespondDeps,
): void {
  const { res } = ctx;
  res.writeHead(response.statusCode, responseHeadersFor(provider, response.headers));
  // Which side failed first decides: a body error while the client is still connected is the
  // provider's fault; after the client closed, it is only pipeline tearing the upstream down.
  let upstreamFailed = false;
  response.body.once('error', () => {
    if (!ctx.isClosed) upstreamFailed = true;
  });
  pipeline(response.body, res, (error) => {
    if (!error || !upstreamFailed) return;
    deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: 'body' });
    deps.logger.warn(
      { model: ctx.model, provider: provider.name, err: error.message },
      'upstream response body failed; client response cut',
    );
  });
}
