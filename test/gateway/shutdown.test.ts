import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/gateway/http/admin-server.js';
import { ConnectionTracker } from '../../src/gateway/lifecycle/connection-tracker.js';
import { LifecycleState } from '../../src/gateway/lifecycle/phase.js';
import { runShutdown } from '../../src/gateway/lifecycle/shutdown.js';
import { createLogger } from '../../src/gateway/telemetry/logger.js';
import { GatewayMetrics } from '../../src/gateway/telemetry/metrics.js';
import { metricValue } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';

const logger = createLogger({ level: 'silent' });
const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** A proxy-like server whose responses never end, and the pieces runShutdown works with. */
async function setup() {
  const lifecycle = new LifecycleState();
  const metrics = new GatewayMetrics('gateway');
  const proxyServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {}\n\n');
  });
  const tracker = new ConnectionTracker();
  tracker.watch(proxyServer);
  proxyServer.on('request', (req, res) => {
    tracker.opened(req, res);
    res.on('close', () => tracker.closed(req, res));
  });
  const adminServer = createAdminServer({ metrics, metricsEnabled: true, lifecycle, logger });
  proxyServer.listen(0, '127.0.0.1');
  adminServer.listen(0, '127.0.0.1');
  await Promise.all([once(proxyServer, 'listening'), once(adminServer, 'listening')]);
  lifecycle.enter('serving');
  cleanups.push(() => {
    proxyServer.closeAllConnections();
    proxyServer.close();
    adminServer.close();
  });
  return {
    lifecycle,
    metrics,
    proxyServer,
    tracker,
    adminServer,
    port: (proxyServer.address() as AddressInfo).port,
  };
}

function openStream(port: number): Promise<{ ended: Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (res) => {
      const ended = new Promise<string>((done) => {
        res.on('data', () => {});
        res.on('end', () => done('end'));
        res.on('error', (e) => done(`error: ${e.message}`));
        res.on('aborted', () => done('aborted'));
      });
      resolve({ ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Polls `condition` every 10 ms for up to 2 s. */
/** Runs the shutdown with no delay and a drain deadline of `timeoutSecs`. */
function shutdownWithin(
  s: Awaited<ReturnType<typeof setup>>,
  timeoutSecs: number,
  finalizers: (() => Promise<void>)[] = [],
): Promise<number> {
  return runShutdown(
    {
      lifecycle: s.lifecycle,
      logger,
      metrics: s.metrics,
      proxyServer: s.proxyServer,
      proxyConnections: s.tracker,
      adminServer: s.adminServer,
      delaySecs: 0,
      timeoutSecs,
      finalizers,
    },
    'test',
  );
}

describe('runShutdown', () => {
  it('counts every connection cut at the drain deadline and returns a failing exit code', async () => {
    const s = await setup();
    const streams = await Promise.all([openStream(s.port), openStream(s.port)]);
    const code = await shutdownWithin(s, 0.3);
    expect(code).toBe(1);
    expect(metricValue(await s.metrics.render(), 'gateway_shutdown_forced_connections_total')).toBe(2);
    for (const stream of streams) expect(await stream.ended).not.toBe('end');
    expect(s.lifecycle.phase).toBe('stopped');
  });

  it('forgets the connections that closed, whichever order they close in, and cuts the rest', async () => {
    const s = await setup();
    const streams = await Promise.all(Array.from({ length: 5 }, () => openStream(s.port)));
    await until(() => s.tracker.openSockets === 5, 2_000, 10);
    // The first closes (the last one takes its place in the tracker), then that moved one.
    streams[0]!.close();
    await until(() => s.tracker.openSockets === 4, 2_000, 10);
    streams[4]!.close();
    await until(() => s.tracker.openSockets === 3, 2_000, 10);
    const code = await shutdownWithin(s, 0.3);
    expect(code).toBe(1);
    expect(metricValue(await s.metrics.render(), 'gateway_shutdown_forced_connections_total')).toBe(3);
    for (const stream of streams.slice(1, 4)) expect(await stream.ended).not.toBe('end');
    await until(() => s.tracker.openSockets === 0, 2_000, 10);
  });

  it('returns 0 when nothing is in flight and runs finalizers before closing the admin server', async () => {
    const s = await setup();
    const order: string[] = [];
    s.adminServer.on('close', () => order.push('admin closed'));
    const code = await shutdownWithin(s, 5, [async () => void order.push('finalizer')]);
    expect(code).toBe(0);
    expect(order).toEqual(['finalizer', 'admin closed']);
    expect(metricValue(await s.metrics.render(), 'gateway_shutdown_forced_connections_total')).toBe(0);
  });
});
