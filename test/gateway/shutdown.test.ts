import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/gateway/http/admin-server.js';
import { ConnectionTracker } from '../../src/gateway/http/connection-tracker.js';
import { LifecycleState } from '../../src/gateway/lifecycle/phase.js';
import { runShutdown } from '../../src/gateway/lifecycle/shutdown.js';
import { createLogger } from '../../src/gateway/telemetry/logger.js';
import { GatewayMetrics } from '../../src/gateway/telemetry/metrics.js';
import { metricValue } from '../helpers/gateway.js';

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

function openStream(port: number): Promise<{ ended: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (res) => {
      const ended = new Promise<string>((done) => {
        res.on('data', () => {});
        res.on('end', () => done('end'));
        res.on('error', (e) => done(`error: ${e.message}`));
        res.on('aborted', () => done('aborted'));
      });
      resolve({ ended });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('runShutdown', () => {
  it('counts every connection cut at the drain deadline and returns a failing exit code', async () => {
    const s = await setup();
    const streams = await Promise.all([openStream(s.port), openStream(s.port)]);
    const code = await runShutdown(
      {
        lifecycle: s.lifecycle,
        logger,
        metrics: s.metrics,
        proxyServer: s.proxyServer,
        proxyConnections: s.tracker,
        adminServer: s.adminServer,
        delaySecs: 0,
        timeoutSecs: 0.3,
        finalizers: [],
      },
      'test',
    );
    expect(code).toBe(1);
    expect(metricValue(await s.metrics.render(), 'gateway_shutdown_forced_connections_total')).toBe(2);
    for (const stream of streams) expect(await stream.ended).not.toBe('end');
    expect(s.lifecycle.phase).toBe('stopped');
  });

  it('returns 0 when nothing is in flight and runs finalizers before closing the admin server', async () => {
    const s = await setup();
    const order: string[] = [];
    s.adminServer.on('close', () => order.push('admin closed'));
    const code = await runShutdown(
      {
        lifecycle: s.lifecycle,
        logger,
        metrics: s.metrics,
        proxyServer: s.proxyServer,
        proxyConnections: s.tracker,
        adminServer: s.adminServer,
        delaySecs: 0,
        timeoutSecs: 5,
        finalizers: [async () => void order.push('finalizer')],
      },
      'test',
    );
    expect(code).toBe(0);
    expect(order).toEqual(['finalizer', 'admin closed']);
    expect(metricValue(await s.metrics.render(), 'gateway_shutdown_forced_connections_total')).toBe(0);
  });
});
