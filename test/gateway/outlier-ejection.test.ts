import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat } from '../helpers/client.js';
import { completion, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

/**
 * Outlier ejection (`outlier_detection` on a pool) through a real gateway: a provider that resets
 * every connection is ejected after `consecutive_failures` failed attempts, skipped by selection
 * (it sees no more connections), and returns on probation after the ejection time.
 */

/** A provider that accepts each connection and resets it at once; counts the connections. */
async function startResetting(): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.resetAndDestroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
  };
}

let dead: Awaited<ReturnType<typeof startResetting>>;
let alsoDead: Awaited<ReturnType<typeof startResetting>>;
let thirdDead: Awaited<ReturnType<typeof startResetting>>;
let healthy: RecordingUpstream;
/** Answers with the statuses queued in `script`, one per request (200 when it is empty). */
let scripted: RecordingUpstream;
const script: number[] = [];
let gateway: StartedGateway;

beforeAll(async () => {
  dead = await startResetting();
  alsoDead = await startResetting();
  thirdDead = await startResetting();
  healthy = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(completion('ok')));
  });
  scripted = await startUpstream((_req, res) => {
    const status = script.shift() ?? 200;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(status === 200 ? JSON.stringify(completion('ok')) : `{"error":{"message":"status ${status}"}}`);
  });
  gateway = await startGateway({
    targets: {
      // Statuses: 5xx fail over and count, 4xx (429 included) are served and count neither way.
      statuses: {
        strategy: 'priority',
        fallback: { on_status: [5] },
        outlier_detection: { consecutive_failures: 2 },
        providers: [
          { name: 'scripted', url: scripted.url },
          { name: 'healthy', url: healthy.url },
        ],
      },
      // Priority with fallback: the share controller runs on this pool by default.
      pool: {
        strategy: 'priority',
        fallback: {},
        outlier_detection: { consecutive_failures: 2, base_ejection_ms: 1_000, max_ejection_ms: 2_500 },
        providers: [
          { name: 'dead', url: dead.url },
          { name: 'healthy', url: healthy.url },
        ],
      },
      // Both providers dead, every one ejectable: the last one is never ejected.
      bothDead: {
        strategy: 'priority',
        fallback: {},
        outlier_detection: { consecutive_failures: 1, max_ejected_percent: 100 },
        providers: [
          { name: 'first', url: alsoDead.url },
          { name: 'second', url: thirdDead.url },
        ],
      },
    },
  });
}, 30_000);

afterAll(async () => {
  await gateway?.stop();
  await healthy?.close();
  await scripted?.close();
  for (const server of [dead?.server, alsoDead?.server, thirdDead?.server]) server?.close();
});

async function post(model: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chat(model)),
  });
  await response.arrayBuffer();
  return response.status;
}

const gauge = async (pool: string, provider: string): Promise<number | undefined> =>
  metricValue(await gateway.metrics(), 'gateway_provider_ejected', { model: pool, pool, provider });
const ejections = async (pool: string, provider: string): Promise<number | undefined> =>
  metricValue(await gateway.metrics(), 'gateway_provider_ejections_total', { model: pool, pool, provider });

describe('outlier ejection', () => {
  it('ejects the preferred provider after consecutive failures, skips it, and returns it on probation', async () => {
    expect(await gauge('pool', 'dead')).toBe(0);
    // The gateway's start-up reachability check opens one connection (which this provider accepts,
    // then resets); requests' connections are counted after it.
    await until(() => dead.connections() >= 1, 5_000);
    const probe = dead.connections();
    const connections = (): number => dead.connections() - probe;
    // Two requests, each failing over from the dead provider to the healthy one.
    expect(await post('pool')).toBe(200);
    expect(await post('pool')).toBe(200);
    expect(connections()).toBe(2);
    expect(await gauge('pool', 'dead')).toBe(1);
    expect(await ejections('pool', 'dead')).toBe(1);

    // Ejected: the priority order and the share controller would try it first; selection skips it.
    const share = async () =>
      metricValue(await gateway.metrics(), 'gateway_provider_share', { model: 'pool', pool: 'pool' });
    const shareBefore = await share();
    expect(shareBefore).toBeDefined();
    const servedBefore = healthy.requests.length;
    for (let i = 0; i < 5; i++) expect(await post('pool')).toBe(200);
    expect(connections()).toBe(2);
    expect(healthy.requests.length - servedBefore).toBe(5);
    const attemptsOnDead = metricValue(await gateway.metrics(), 'gateway_upstream_attempts_total', {
      pool: 'pool',
      provider: 'dead',
      outcome: 'connection_error',
    });
    expect(attemptsOnDead).toBe(2);
    // The share controller heard nothing from the ejected preferred provider: its share is unchanged.
    expect(await share()).toBe(shareBefore);

    // Back after the ejection time (1,000 ms), on probation: the next failure ejects it again, for
    // twice as long.
    await until(async () => (await gauge('pool', 'dead')) === 0, 5_000);
    expect(await post('pool')).toBe(200);
    expect(connections()).toBe(3);
    expect(await gauge('pool', 'dead')).toBe(1);
    expect(await ejections('pool', 'dead')).toBe(2);
    const ejectedLines = gateway.program.logs.filter(
      (line) => line.msg === 'provider ejected from its pool after consecutive failures',
    );
    expect(ejectedLines.map((line) => line.ejectionMs)).toEqual([1_000, 2_000]);
    // A third time: 3 x 1,000 ms, capped by max_ejection_ms (2,500).
    await until(async () => (await gauge('pool', 'dead')) === 0, 5_000);
    expect(await post('pool')).toBe(200);
    expect(await ejections('pool', 'dead')).toBe(3);
    expect(
      gateway.program.logs
        .filter((line) => line.msg === 'provider ejected from its pool after consecutive failures')
        .map((line) => line.ejectionMs),
    ).toEqual([1_000, 2_000, 2_500]);
    expect(
      gateway.program.logs.some((line) => line.msg === 'provider returned to its pool on probation'),
    ).toBe(true);
  });

  it('counts a 5xx (529 included) as a failure, a 4xx (429 included) as nothing, a 2xx as a success', async () => {
    // 500, then a 200 that clears the count, then 529: one failure in a row, not ejected.
    script.push(500, 200, 529);
    for (const expected of [200, 200, 200]) expect(await post('statuses')).toBe(expected);
    expect(await gauge('statuses', 'scripted')).toBe(0);
    // 429 and 400 in between count neither way: 529, 429, 400 after the earlier 529 make two in a row.
    script.push(429, 400, 503);
    expect(await post('statuses')).toBe(429);
    expect(await post('statuses')).toBe(400);
    expect(await gauge('statuses', 'scripted')).toBe(0);
    expect(await post('statuses')).toBe(200);
    expect(await gauge('statuses', 'scripted')).toBe(1);
    expect(script).toEqual([]);
  });

  it('never ejects the last provider of a pool, whatever max_ejected_percent allows', async () => {
    for (let i = 0; i < 3; i++) expect(await post('bothDead')).toBe(503);
    const ejected = [await gauge('bothDead', 'first'), await gauge('bothDead', 'second')];
    expect(ejected.sort()).toEqual([0, 1]);
    // The one left is still tried on every request.
    const before = alsoDead.connections() + thirdDead.connections();
    expect(await post('bothDead')).toBe(503);
    expect(alsoDead.connections() + thirdDead.connections() - before).toBe(1);
  });
});
