import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat, readBody } from '../helpers/client.js';
import {
  chatChunkEvent,
  completion,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

/**
 * Upstream timeouts (`timeouts: { connect_ms, headers_ms, idle_ms, total_ms }` at the top level, on a
 * target and on a pool's provider entry) through a real gateway: before the commit a timeout fails
 * the attempt over or ends in 504 `upstream_timeout`; after it the response is cut and counted so.
 */

/** The upstream's behaviour, chosen by the model the gateway sends (each entry's `gateway_model`). */
const ANSWERS: Record<string, UpstreamHandler> = {
  ok: (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(completion('ok')));
  },
  // Accepts the request, never answers: no headers ever.
  silent: () => {},
  // Headers and a first frame, then nothing.
  stalls: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chatChunkEvent('Hel'));
  },
  // Headers at once, then the body one byte every 100 ms: never idle, never done.
  trickles: (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    const timer = setInterval(() => res.write(' '), 100);
    res.once('close', () => clearInterval(timer));
  },
};

let upstream: RecordingUpstream;
let gateway: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream((req, res, raw) => {
    const model = (JSON.parse(req.body) as { model: string }).model;
    return ANSWERS[model]!(req, res, raw);
  });
  const provider = (model: string, extra: Record<string, unknown> = {}) => ({
    url: upstream.url,
    name: model,
    gateway_model: model,
    ...extra,
  });
  gateway = await startGateway({
    // The top level's value: what `alone` (which sets none) gets.
    timeouts: { headers_ms: 300 },
    targets: {
      // The pool allows a minute; its silent entry overrides that with 300 ms.
      pool: {
        strategy: 'priority',
        // Defaults: fail over on connection errors, and so on timeouts.
        fallback: {},
        timeouts: { headers_ms: 60_000 },
        providers: [provider('silent', { timeouts: { headers_ms: 300 } }), provider('ok')],
      },
      alone: { url: upstream.url, gateway_model: 'silent' },
      // A pool that does not fail over on connection errors does not on timeouts either.
      noFailover: {
        strategy: 'priority',
        fallback: { on_connection_error: false },
        providers: [provider('silent'), provider('ok')],
      },
      stalls: { url: upstream.url, gateway_model: 'stalls', timeouts: { idle_ms: 300 } },
      // A total beyond connect + headers is armed when the head arrives with the body still to come.
      trickles: {
        url: upstream.url,
        gateway_model: 'trickles',
        timeouts: { connect_ms: 200, headers_ms: 300, total_ms: 1_000 },
      },
    },
  });
}, 30_000);

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

async function post(model: string, body: Record<string, unknown> = {}) {
  const started = performance.now();
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chat(model, body)),
  });
  const read = await readBody(response);
  return { status: response.status, ...read, ms: performance.now() - started };
}

const hits = (model: string): number =>
  upstream.requests.filter((r) => (JSON.parse(r.body) as { model: string }).model === model).length;

async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
  let value: number | undefined;
  await until(async () => {
    value = metricValue(await gateway.metrics(), name, labels);
    return value !== undefined;
  });
  return value;
}

describe('upstream timeouts', () => {
  it('a provider that never sends headers, in a pool of two: the second serves within headers_ms', async () => {
    const silentBefore = hits('silent');
    const got = await post('pool');
    console.log(`pool: served by the second provider after ${got.ms.toFixed(0)} ms (headers_ms 300)`);
    expect(got.status).toBe(200);
    expect(JSON.parse(got.bytes.toString('utf8')).choices[0].message.content).toBeDefined();
    expect(got.ms).toBeGreaterThanOrEqual(290);
    expect(got.ms).toBeLessThan(5_000);
    expect(hits('silent') - silentBefore).toBe(1);
    expect(
      await metric('gateway_upstream_attempts_total', {
        model: 'pool',
        provider: 'silent',
        outcome: 'timeout',
      }),
    ).toBe(1);
    expect(await metric('gateway_upstream_errors_total', { model: 'pool', reason: 'headers_timeout' })).toBe(
      1,
    );
    expect(await metric('gateway_requests_total', { model: 'pool', outcome: 'completed' })).toBe(1);
  });

  it('alone: 504 with code upstream_timeout after the top-level headers_ms, counted as a timeout', async () => {
    const got = await post('alone');
    console.log(`alone: 504 after ${got.ms.toFixed(0)} ms (headers_ms 300)`);
    expect(got.status).toBe(504);
    expect(JSON.parse(got.bytes.toString('utf8')).error).toMatchObject({
      type: 'api_error',
      code: 'upstream_timeout',
    });
    expect(got.ms).toBeLessThan(5_000);
    expect(await metric('gateway_requests_total', { model: 'alone', outcome: 'timeout' })).toBe(1);
  });

  it('a pool with on_connection_error: false answers the timeout itself: 504, the second never tried', async () => {
    const okBefore = hits('ok');
    const got = await post('noFailover');
    expect(got.status).toBe(504);
    expect(JSON.parse(got.bytes.toString('utf8')).error.code).toBe('upstream_timeout');
    expect(hits('ok')).toBe(okBefore);
  });

  it('the official openai SDK reads the 504 as an error with its code', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: 'alone', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ status: 504, code: 'upstream_timeout' });
  });

  it('a stream that stalls after the commit is cut after idle_ms: never a clean end', async () => {
    const got = await post('stalls', { stream: true });
    console.log(`stalls: cut after ${got.ms.toFixed(0)} ms (idle_ms 300)`);
    expect(got.status).toBe(200);
    expect(got.bytes.toString('utf8')).toContain('Hel');
    expect(got.bytes.toString('utf8')).not.toContain('[DONE]');
    expect(got.failed).toBe(true);
    expect(await metric('gateway_requests_total', { model: 'stalls', outcome: 'upstream_cut' })).toBe(1);
    expect(await metric('gateway_upstream_errors_total', { model: 'stalls', reason: 'idle_timeout' })).toBe(
      1,
    );
  });

  it('total_ms ends a body that keeps trickling: cut after the commit, counted as a total timeout', async () => {
    const got = await post('trickles');
    console.log(`trickles: cut after ${got.ms.toFixed(0)} ms (total_ms 1000)`);
    expect(got.status).toBe(200);
    expect(got.failed).toBe(true);
    expect(got.ms).toBeGreaterThanOrEqual(990);
    expect(got.ms).toBeLessThan(5_000);
    expect(await metric('gateway_requests_total', { model: 'trickles', outcome: 'upstream_cut' })).toBe(1);
    expect(
      await metric('gateway_upstream_errors_total', { model: 'trickles', reason: 'total_timeout' }),
    ).toBe(1);
  });
});
