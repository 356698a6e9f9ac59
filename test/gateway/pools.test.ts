import { until } from '../helpers/wait.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, gatewaysPerTest, type StartedGateway } from '../helpers/gateway.js';
import {
  jsonReply,
  sseReply,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';

let a: RecordingUpstream;
let b: RecordingUpstream;
let c: RecordingUpstream;
const startGateway = gatewaysPerTest();
const ok = (id: string): UpstreamHandler => jsonReply(200, { id });

beforeAll(async () => {
  [a, b, c] = await Promise.all([startUpstream(ok('a')), startUpstream(ok('b')), startUpstream(ok('c'))]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close(), c.close()]);
});
afterEach(async () => {
  for (const [upstream, id] of [
    [a, 'a'],
    [b, 'b'],
    [c, 'c'],
  ] as const) {
    upstream.requests.length = 0;
    upstream.respondWith(ok(id));
  }
});

async function gatewayWith(
  pool: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  args: string[] = [],
) {
  return startGateway({ ...extra, targets: { p: pool } }, { args });
}

/** A priority pool with `fallback` over `providers` (a, then b, by default). */
const priority = (
  fallback: Record<string, unknown>,
  providers: Record<string, unknown>[] = [{ url: a.url }, { url: b.url }],
) => ({ strategy: 'priority', fallback, providers });

async function chat(gateway: StartedGateway, body: Record<string, unknown> = {}) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'p', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const chunk = (content: string, model = 'upstream') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model,
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

describe('strategies', () => {
  it('priority always starts with the first provider while it is healthy', async () => {
    const gateway = await gatewayWith({ strategy: 'priority', providers: [{ url: a.url }, { url: b.url }] });
    for (let i = 0; i < 20; i++) expect((await chat(gateway)).text).toContain('"a"');
    expect(b.requests).toHaveLength(0);
  });

  it('weighted_random picks in proportion to weight', async () => {
    const gateway = await gatewayWith({
      strategy: 'weighted_random',
      providers: [
        { url: a.url, weight: 3 },
        { url: b.url, weight: 1 },
      ],
    });
    const total = 400;
    for (let i = 0; i < total; i++) await chat(gateway);
    // Expected 300 vs 100; the bounds are many standard deviations wide.
    expect(a.requests.length).toBeGreaterThan(240);
    expect(a.requests.length).toBeLessThan(350);
    expect(a.requests.length + b.requests.length).toBe(total);
  });
});

describe('failover', () => {
  it('moves on for a configured status (exact and prefix wildcard) and not for others', async () => {
    a.respondWith(jsonReply(503, { error: { message: 'busy' } }));
    const exact = await gatewayWith(priority({ on_status: [503] }));
    expect(await chat(exact)).toMatchObject({ status: 200, text: '{"id":"b"}' });

    a.respondWith(jsonReply(502, { error: { message: 'bad' } }));
    const wildcard = await gatewayWith(priority({ on_status: [5] }));
    expect((await chat(wildcard)).status).toBe(200);

    a.respondWith(jsonReply(400, { error: { message: 'bad request' } }));
    const notListed = await chat(wildcard);
    expect(notListed.status).toBe(400);
    expect(notListed.text).toContain('bad request');
  });

  it("rewrites the body for each attempt's provider: the next attempt still has the parsed request", async () => {
    a.respondWith(jsonReply(503, { error: { message: 'busy' } }));
    const gateway = await gatewayWith(
      priority({ on_status: [503] }, [
        { url: a.url, gateway_model: 'model-a' },
        { url: b.url, gateway_model: 'model-b' },
      ]),
    );
    expect(await chat(gateway)).toMatchObject({ status: 200, text: '{"id":"b"}' });
    expect(JSON.parse(a.requests[0]!.body)).toMatchObject({
      model: 'model-a',
      messages: [{ content: 'hi' }],
    });
    expect(JSON.parse(b.requests[0]!.body)).toMatchObject({
      model: 'model-b',
      messages: [{ content: 'hi' }],
    });
  });

  it('moves on when a provider refuses connections, unless on_connection_error is false', async () => {
    const refusing = 'http://127.0.0.1:1';
    const on = await gatewayWith(priority({}, [{ url: refusing }, { url: b.url }]));
    expect(await chat(on)).toMatchObject({ status: 200, text: '{"id":"b"}' });
    const metrics = await on.metrics();
    expect(
      metricValue(metrics, 'gateway_upstream_attempts_total', {
        pool: 'p',
        provider: refusing,
        outcome: 'connection_error',
      }),
    ).toBe(1);
    expect(
      metricValue(metrics, 'gateway_upstream_attempts_total', { provider: b.url, outcome: 'committed' }),
    ).toBe(1);

    const off = await gatewayWith(
      priority({ on_connection_error: false }, [{ url: refusing }, { url: b.url }]),
    );
    const refused = await chat(off);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'upstream_unavailable' } });
  });

  it('moves on when a provider limit refuses, only with on_rate_limit', async () => {
    const providers = [
      { url: a.url, rate_limit: { requests_per_second: 0.001, burst_size: 1 } },
      { url: b.url },
    ];
    const withFlag = await gatewayWith({
      strategy: 'priority',
      fallback: { on_rate_limit: true },
      providers,
    });
    expect((await chat(withFlag)).text).toBe('{"id":"a"}');
    expect((await chat(withFlag)).text).toBe('{"id":"b"}');

    const withoutFlag = await gatewayWith({ strategy: 'priority', fallback: {}, providers });
    expect((await chat(withoutFlag)).status).toBe(200);
    const refused = await chat(withoutFlag);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'rate_limit' } });
  });

  it('stops after max_attempts', async () => {
    for (const upstream of [a, b, c]) upstream.respondWith(jsonReply(503, { error: { message: 'busy' } }));
    const gateway = await gatewayWith(
      priority({ on_status: [503], max_attempts: 2 }, [{ url: a.url }, { url: b.url }, { url: c.url }]),
    );
    expect((await chat(gateway)).status).toBe(503);
    expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([1, 1, 0]);
  });

  it('fails over on an error embedded in a 200: first SSE frame and JSON body', async () => {
    a.respondWith(sseReply([{ error: { message: 'overloaded', code: 503 } }]));
    b.respondWith(sseReply([chunk('from b')]));
    const gateway = await gatewayWith(priority({ on_status: [503] }));
    const streamed = await chat(gateway, { stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.text).toContain('from b');
    expect(streamed.text).not.toContain('overloaded');

    a.respondWith(jsonReply(200, { error: { message: 'rate limited', code: 'rate_limit_exceeded' } }));
    b.respondWith(ok('b'));
    const gateway429 = await gatewayWith(priority({ on_status: [429] }));
    expect((await chat(gateway429)).text).toBe('{"id":"b"}');
  });

  it('treats a failed Responses object in a 200 as an error in both modes, trusted or not: failover, then the error', async () => {
    const response = (status: string, extra: Record<string, unknown> = {}) => ({
      id: 'resp_1',
      object: 'response',
      created_at: 1,
      model: 'upstream',
      status,
      output: [],
      usage: { input_tokens: 2, output_tokens: 0, total_tokens: 2 },
      ...extra,
    });
    const failed = response('failed', { error: { code: 'server_error', message: 'engine crashed' } });
    const post = (gateway: StartedGateway) =>
      fetch(`${gateway.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'p', input: 'hi' }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

    // A trusted provider's error is passed through verbatim when it is the answer, but it is an
    // error all the same: it fails over like an untrusted one's.
    for (const [strict, trusted] of [
      [false, false],
      [true, false],
      [true, true],
    ] as const) {
      a.respondWith(jsonReply(200, failed));
      b.respondWith(jsonReply(200, response('completed', { error: null })));
      const pool = await gatewayWith(
        {
          strategy: 'priority',
          fallback: { on_status: [5] },
          providers: [{ url: a.url, trusted }, { url: b.url }],
        },
        { strict_mode: strict },
      );
      const served = await post(pool);
      expect({ strict, trusted, status: served.status, state: served.body.status }).toEqual({
        strict,
        trusted,
        status: 200,
        state: 'completed',
      });
      expect(
        metricValue(await pool.metrics(), 'gateway_upstream_attempts_total', {
          provider: a.url,
          outcome: 'embedded_error',
        }),
      ).toBe(1);
    }

    // Nothing left to try: transparent without strict mode, the standardized error with it.
    a.respondWith(jsonReply(200, failed));
    const plain = await post(await gatewayWith({ strategy: 'priority', providers: [{ url: a.url }] }));
    expect(plain).toMatchObject({ status: 200, body: { status: 'failed' } });
    const strict = await post(
      await gatewayWith({ strategy: 'priority', providers: [{ url: a.url }] }, { strict_mode: true }),
    );
    expect(strict.status).toBe(500);
    expect(strict.body).toMatchObject({ error: { type: expect.any(String) } });
    expect(JSON.stringify(strict.body)).not.toContain('engine crashed');
  });

  it('abandons an attempt at the first-token deadline and serves from the next provider, unspliced', async () => {
    // a: headers at once, then nothing for a long time (a stalled stream).
    a.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keep-alive\n\n');
      await sleep(3_000);
      res.end(`data: ${JSON.stringify(chunk('late from a'))}\n\ndata: [DONE]\n\n`);
    });
    b.respondWith(sseReply([chunk('one'), chunk('two')]));
    const gateway = await gatewayWith(priority({ first_token_timeout_ms: 300, aimd: false }));
    const started = Date.now();
    const streamed = await chat(gateway, { stream: true });
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(streamed.status).toBe(200);
    expect(streamed.text).not.toContain('keep-alive');
    expect(streamed.text).not.toContain('late from a');
    expect(streamed.text.match(/^data: \{/gm)).toHaveLength(2);
    expect(streamed.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const metrics = await gateway.metrics();
    expect(
      metricValue(metrics, 'gateway_upstream_attempts_total', { provider: a.url, outcome: 'deadline' }),
    ).toBe(1);
  });

  it('answers 504 first_token_timeout when the only attempt misses its deadline', async () => {
    a.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      await sleep(3_000);
      res.end('data: [DONE]\n\n');
    });
    const gateway = await gatewayWith(
      priority({ first_token_timeout_ms: 300, max_attempts: 1, aimd: false }),
    );
    const response = await chat(gateway, { stream: true });
    expect(response.status).toBe(504);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: 'first_token_timeout' } });
  });

  it('lets the last attempt run past the deadline rather than cutting it', async () => {
    a.respondWith(jsonReply(503, {}));
    b.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      await sleep(700);
      res.end(`data: ${JSON.stringify(chunk('slow but served'))}\n\ndata: [DONE]\n\n`);
    });
    const gateway = await gatewayWith(
      priority({ on_status: [503], first_token_timeout_ms: 200, aimd: false }),
    );
    const response = await chat(gateway, { stream: true });
    expect(response.status).toBe(200);
    expect(response.text).toContain('slow but served');
  });

  it('takes response headers from the provider that finally served', async () => {
    a.respondWith(jsonReply(503, {}));
    const gateway = await gatewayWith({
      strategy: 'priority',
      fallback: { on_status: [503] },
      response_headers: { 'x-pool': 'yes', 'x-served-by': 'pool' },
      providers: [
        { url: a.url, response_headers: { 'x-served-by': 'a' } },
        { url: b.url, response_headers: { 'x-served-by': 'b' } },
      ],
    });
    const response = await chat(gateway);
    expect(response.headers.get('x-served-by')).toBe('b');
    expect(response.headers.get('x-pool')).toBe('yes');
  });

  it('holds the account in-flight slot across attempts and releases it once', async () => {
    a.respondWith(jsonReply(503, {}));
    b.respondWith(async (_req, res) => {
      await sleep(300);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":"b"}');
    });
    const gateway = await gatewayWith(
      {
        strategy: 'priority',
        keys: ['k'],
        inflight_limit: 1,
        fallback: { on_status: [503] },
        providers: [{ url: a.url }, { url: b.url }],
      },
      { auth: { key_definitions: { k: { key: 'key-1', labels: { account: 'acme' } } } } },
    );
    const call = () =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer key-1' },
        body: JSON.stringify({ model: 'p', messages: [] }),
      });
    const first = call();
    await sleep(100);
    expect((await call()).status).toBe(429); // the slot is still held while b serves
    expect((await first).status).toBe(200);
    expect((await call()).status).toBe(200);
    expect(metricValue(await gateway.metrics(), 'gateway_model_inflight', { model: 'p' })).toBe(0);
  });
});

describe('share controller (AIMD) end to end', () => {
  it('lowers the preferred share under induced first-token latency and restores it when latency returns', async () => {
    let slow = true;
    const stream = async (_req: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (slow) await sleep(120);
      res.write(`data: ${JSON.stringify(chunk('x'))}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    a.respondWith(stream);
    b.respondWith(sseReply([chunk('y')]));
    const gateway = await gatewayWith(
      {
        strategy: 'priority',
        fallback: {
          aimd: {
            latency_budget_ms: 60,
            window_samples: 10,
            min_samples: 5,
            breach_rate_target: 0.1,
            recovery_breach_rate: 0.0,
            share_decay: 0.5,
            share_step: 0.25,
            share_floor: 0.1,
            dwell_ms: 300,
            idle_recovery_ms: 0,
          },
        },
        providers: [
          { url: a.url, name: 'slow-a' },
          { url: b.url, name: 'fast-b' },
        ],
      },
      { strict_mode: true },
    );
    const share = async () =>
      metricValue(await gateway.metrics(), 'gateway_provider_share', { model: 'p', pool: 'p' });
    expect(await share()).toBe(1);
    expect(metricValue(await gateway.metrics(), 'gateway_aimd_active', { model: 'p', pool: 'p' })).toBe(1);

    for (let i = 0; i < 12; i++) await chat(gateway, { stream: true });
    const lowered = (await share())!;
    expect(lowered).toBeLessThan(1);
    const afterSlow = await gateway.metrics();
    expect(
      metricValue(afterSlow, 'gateway_share_adjustments_total', { direction: 'decrease' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(afterSlow, 'gateway_first_token_breaches_total', {
        model: 'p',
        pool: 'p',
        role: 'preferred',
      }),
    ).toBeGreaterThanOrEqual(5);

    slow = false;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (await share())! <= lowered) {
      for (let i = 0; i < 10; i++) await chat(gateway, { stream: true });
      await sleep(100);
    }
    expect((await share())!).toBeGreaterThan(lowered);
    expect(
      metricValue(await gateway.metrics(), 'gateway_share_adjustments_total', { direction: 'increase' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('exports every controller metric with model and pool labels', async () => {
    const gateway = await gatewayWith(priority({}));
    const text = await gateway.metrics();
    for (const name of [
      'gateway_provider_share',
      'gateway_aimd_active',
      'gateway_aimd_window_samples',
      'gateway_aimd_window_breach_rate',
      'gateway_aimd_in_flight',
      'gateway_aimd_unknown_total',
    ]) {
      expect(metricValue(text, name, { model: 'p', pool: 'p' }), name).toBeDefined();
    }
    expect(text).toMatch(/gateway_first_token_seconds_bucket\{le="10",model="p",pool="p",role="preferred"\}/);
  });
});

describe('attempt outcomes before the commit point', () => {
  async function attempts(gateway: StartedGateway, provider: string, outcome: string) {
    return metricValue(await gateway.metrics(), 'gateway_upstream_attempts_total', { provider, outcome });
  }

  for (const sanitize of [false, true]) {
    it(`counts a client that leaves while the first data frame is awaited as client_gone (${sanitize ? 'sanitized' : 'raw'})`, async () => {
      let upstreamClosed = false;
      a.respondWith(async (_req, res) => {
        res.on('close', () => {
          upstreamClosed = true;
        });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': keep-alive\n\n');
        await sleep(5_000);
        res.end('data: [DONE]\n\n');
      });
      const gateway = await gatewayWith(
        priority({}, [
          { url: a.url, sanitize_response: sanitize },
          { url: b.url, sanitize_response: sanitize },
        ]),
      );
      const client = new AbortController();
      const request = fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'p', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        signal: client.signal,
      }).then((response) => response.text());
      await until(async () => a.requests.length === 1);
      await sleep(100);
      client.abort();
      await expect(request).rejects.toThrow();
      await until(async () => (await attempts(gateway, a.url, 'client_gone')) === 1);
      await until(async () => upstreamClosed);
      expect(await attempts(gateway, a.url, 'connection_error')).toBeUndefined();
      expect(await attempts(gateway, a.url, 'committed')).toBeUndefined();
      expect(b.requests).toHaveLength(0);
    });
  }

  it('counts, logs and fails over a non-streamed body cut before it ends', async () => {
    a.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      res.write('{"secret-body-content":');
      setTimeout(() => res.destroy(), 50);
    });
    const gateway = await gatewayWith(priority({}));
    expect(await chat(gateway)).toMatchObject({ status: 200, text: '{"id":"b"}' });
    expect(await attempts(gateway, a.url, 'connection_error')).toBe(1);
    expect(await attempts(gateway, b.url, 'committed')).toBe(1);
    expect(
      metricValue(await gateway.metrics(), 'gateway_upstream_errors_total', { model: 'p', reason: 'body' }),
    ).toBe(1);
    const warned = gateway.program.logs.find(
      (l) => l.level === 'warn' && l.msg === 'upstream response failed before the commit point',
    );
    expect(warned).toMatchObject({ provider: a.url, attempt: 1 });
    expect(JSON.stringify(gateway.program.logs)).not.toContain('secret-body-content');
  });

  for (const sanitize of [false, true]) {
    it(`counts, logs and fails over a stream that breaks before its first data frame (${sanitize ? 'sanitized' : 'raw'})`, async () => {
      a.respondWith((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': secret-comment\n\n');
        setTimeout(() => res.destroy(), 50);
      });
      b.respondWith(sseReply([chunk('from b')]));
      const gateway = await gatewayWith(
        priority({}, [
          { url: a.url, sanitize_response: sanitize },
          { url: b.url, sanitize_response: sanitize },
        ]),
      );
      const streamed = await chat(gateway, { stream: true });
      expect(streamed.status).toBe(200);
      expect(streamed.text).toContain('from b');
      expect(await attempts(gateway, a.url, 'connection_error')).toBe(1);
      const warned = gateway.program.logs.find(
        (l) => l.level === 'warn' && l.msg === 'upstream response failed before the commit point',
      );
      expect(warned).toMatchObject({ provider: a.url, attempt: 1 });
      expect(JSON.stringify(gateway.program.logs)).not.toContain('secret-comment');
    });
  }
});
