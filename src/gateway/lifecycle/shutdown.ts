import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionTracker } from './connection-tracker.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import type { LifecycleState } from './phase.js';

/** The admin server gets its own short ceiling (spec 8: metrics server shutdown 5 s). */
export const ADMIN_CLOSE_CEILING_MS = 5_000;
/** While draining, idle keep-alive sockets are swept this often so clients stop reusing them. */
const IDLE_SWEEP_MS = 200;

export interface ShutdownDeps {
  lifecycle: LifecycleState;
  logger: Logger;
  metrics: GatewayMetrics;
  proxyServer: Server;
  proxyConnections: ConnectionTracker;
  adminServer: Server | undefined;
  delaySecs: number;
  timeoutSecs: number;
  /** Work after the proxy stops and before the admin server closes (upstream pools, tracing flush). */
  finalizers: (() => Promise<void>)[];
}

export const EXIT_OK = 0;
export const EXIT_FORCED = 1;

/**
 * Spec 3.2, step by step: readiness fails at once; requests are still served for the delay (the
 * orchestrator needs that time to stop routing to us), each answered with `Connection: close`;
 * then admission closes and accepted requests and bodies finish; past the drain deadline the rest
 * are cut, counted and the exit is non-zero. `/healthz` and `/metrics` stay up until the very end.
 */
export async function runShutdown(deps: ShutdownDeps, reason: string): Promise<number> {
  const { lifecycle, logger, proxyServer, proxyConnections } = deps;
  const startedAt = performance.now();

  lifecycle.enter('delaying');
  // Requests are still served, but every response from now on carries `Connection: close`: a
  // kept-alive connection would otherwise keep bringing requests to this process after the
  // orchestrator stopped routing new ones here, and the last of them would race the close of idle
  // connections when admission closes. Clients reconnect, and the Service sends them elsewhere.
  proxyConnections.closeAfterResponses();
  logger.info(
    { reason, delaySecs: deps.delaySecs, timeoutSecs: deps.timeoutSecs, inFlight: proxyConnections.active },
    'shutdown: readiness failing, still serving during the delay',
  );
  if (deps.delaySecs > 0) await sleep(deps.delaySecs * 1000);

  lifecycle.enter('draining');
  proxyServer.close();
  proxyServer.closeIdleConnections();
  const inFlightAtClose = proxyConnections.active;
  logger.info(
    { inFlight: inFlightAtClose, sockets: proxyConnections.openSockets },
    'shutdown: admission closed, draining',
  );
  const sweep = setInterval(() => proxyServer.closeIdleConnections(), IDLE_SWEEP_MS);

  const deadline = new AbortController();
  const drained = await Promise.race([
    proxyConnections.whenIdle().then(() => true),
    sleep(deps.timeoutSecs * 1000, false, { signal: deadline.signal }).catch(() => false),
  ]);
  deadline.abort();
  clearInterval(sweep);

  let exitCode = EXIT_OK;
  if (drained) {
    // Nothing is in progress: sockets still open are idle keep-alives and can go.
    proxyServer.closeAllConnections();
    logger.info(
      { inFlightAtClose, drainMs: Math.round(performance.now() - startedAt) },
      'shutdown: every accepted request finished',
    );
  } else {
    const stillActive = proxyConnections.active;
    const cut = proxyConnections.destroyAll();
    deps.metrics.shutdownForcedConnections.inc(cut);
    logger.error(
      { timeoutSecs: deps.timeoutSecs, inFlightAtClose, stillActive, connectionsCut: cut },
      'shutdown: drain timeout exceeded, remaining streams cut',
    );
    exitCode = EXIT_FORCED;
  }

  for (const finalize of deps.finalizers) {
    try {
      await finalize();
    } catch (error) {
      logger.warn({ err: error }, 'shutdown: a finalizer failed');
    }
  }

  if (deps.adminServer) await closeWithCeiling(deps.adminServer, ADMIN_CLOSE_CEILING_MS);
  lifecycle.enter('stopped');
  logger.info({ exitCode, totalMs: Math.round(performance.now() - startedAt) }, 'shutdown: complete');
  return exitCode;
}

async function closeWithCeiling(server: Server, ceilingMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), ceilingMs);
  await closed;
  clearTimeout(timer);
}
