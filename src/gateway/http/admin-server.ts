import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from './node-http.js';
import type { LifecycleState } from '../lifecycle/phase.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';

export interface AdminServerDeps {
  metrics: GatewayMetrics;
  metricsEnabled: boolean;
  lifecycle: LifecycleState;
  logger: Logger;
  /** The proxy listener's port (bound, once it listens): named to clients asking this port for it. */
  proxyPort?: () => number;
}

const ADMIN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

function plain(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/**
 * The admin listener (spec 4.2): metrics and health routes, unauthenticated, never on the proxy
 * port. Health routes report process state only; they never probe upstreams.
 */
export function createAdminServer({
  metrics,
  metricsEnabled,
  lifecycle,
  logger,
  proxyPort,
}: AdminServerDeps): Server {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (!ADMIN_PATHS.has(path)) {
      // Most likely an API request sent to the wrong port: say which one serves it.
      const proxy = proxyPort === undefined ? 'the proxy port' : `the proxy port (${proxyPort()}, --port)`;
      plain(
        res,
        404,
        `${path} is not served on the admin port (only /healthz, /readyz, /metrics); ${proxy} serves the API\n`,
      );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      plain(res, 405, 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/healthz':
        plain(res, 200, 'ok\n');
        return;
      case '/readyz':
        if (lifecycle.ready) plain(res, 200, 'ready\n');
        else plain(res, 503, `not ready: ${lifecycle.notReadyReason}\n`);
        return;
      case '/metrics':
        if (!metricsEnabled) {
          plain(res, 404, 'metrics are disabled (--metrics false)\n');
          return;
        }
        metrics.render().then(
          (text) => {
            res.writeHead(200, { 'content-type': metrics.contentType(), 'cache-control': 'no-store' });
            res.end(text);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'metrics rendering failed');
            plain(res, 500, 'metrics rendering failed\n');
          },
        );
        return;
    }
  });
  // Scrapers and probes send small requests: bound what a slow client can hold.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  return server;
}
