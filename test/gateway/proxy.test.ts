import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, gatewaysPerTest, type StartedGateway } from '../helpers/gateway.js';
import { jsonReply, sseReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { untilEquals } from '../helpers/wait.js';

let a: RecordingUpstream;
let b: RecordingUpstream;
const startGateway = gatewaysPerTest();

beforeAll(async () => {
  [a, b] = await Promise.all([startUpstream(), startUpstream()]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});
afterEach(async () => {
  for (const upstream of [a, b]) {
    upstream.requests.length = 0;
    upstream.respondWith(jsonReply(200, { id: 'cmpl', object: 'chat.completion' }));
  }
});

async function gatewayWith(config: unknown, args: string[] = []): Promise<StartedGateway> {
  const gateway = await startGateway(config, { args });
  return gateway;
}

interface Call {
  model?: string;
  headers?: Record<string, string>;
  body?: unknown;
  path?: string;
  method?: string;
}

async function call(
  gateway: StartedGateway,
  init: Call = {},
): Promise<{ status: number; headers: Headers; body: string }> {
  const method = init.method ?? 'POST';
  const response = await fetch(`${gateway.url}${init.path ?? '/v1/chat/completions'}`, {
    method,
    headers: { 'content-type': 'application/json', ...init.headers },
    body:
      method === 'GET' || method === 'HEAD'
        ? undefined
        : JSON.stringify(
            init.body ?? { model: init.model ?? 'a', messages: [{ role: 'user', content: 'hi' }] },
          ),
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function errorOf(body: string): { message: string; type: string; code: string | null; param: string | null } {
  return (
    JSON.parse(body) as {
      error: { message: string; type: string; code: string | null; param: string | null };
    }
  ).error;
}

describe('routing and forwarding', () => {
  it('takes the alias from model-override before the body model', async () => {
    const gateway = await gatewayWith({ targets: { a: { url: a.url }, b: { url: b.url } } });
    expect((await call(gateway, { model: 'a' })).status).toBe(200);
    expect(a.requests).toHaveLength(1);
    expect((await call(gateway, { model: 'a', headers: { 'model-override': 'b' } })).status).toBe(200);
    expect(b.requests).toHaveLength(1);
    expect(a.requests).toHaveLength(1);
    // The routing header is the gateway's: it does not reach the provider.
    expect(b.requests[0]!.headers['model-override']).toBeUndefined();
  });

  it('forwards the body bytes unchanged, or with model replaced by gateway_model', async () => {
    const gateway = await gatewayWith({
      targets: { a: { url: a.url }, b: { url: b.url, gateway_model: 'upstream-model' } },
    });
    const raw = '{"model":"a",  "messages":[{"role":"user","content":"h\\u00e9"}],"x_extra":{"n":1}}';
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    });
    expect(response.status).toBe(200);
    expect(a.requests[0]!.body).toBe(raw);

    await call(gateway, { body: { model: 'b', messages: [], temperature: 0.5 } });
    expect(JSON.parse(b.requests[0]!.body)).toEqual({
      model: 'upstream-model',
      messages: [],
      temperature: 0.5,
    });
  });

  it('forwards any path and method, body-less requests included, keeping the query string', async () => {
    const gateway = await gatewayWith({
      targets: { a: { url: `${a.url}/v1` }, b: { url: `${b.url}/openai` } },
    });
    const listed = await call(gateway, {
      method: 'GET',
      path: '/v1/files?purpose=batch',
      headers: { 'model-override': 'a' },
    });
    expect(listed.status).toBe(200);
    expect(a.requests[0]!).toMatchObject({ method: 'GET', url: '/v1/files?purpose=batch', body: '' });

    await call(gateway, { path: '/v1/chat/completions', model: 'b' });
    expect(b.requests[0]!.url).toBe('/openai/v1/chat/completions');
  });

  it('answers 404 model_not_found and 400 missing_model, and counts them as rejections', async () => {
    const gateway = await gatewayWith({ targets: { a: { url: a.url } } });
    const unknown = await call(gateway, { model: 'nope' });
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown.body)).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
    const missing = await call(gateway, { body: { messages: [] } });
    expect(missing.status).toBe(400);
    expect(errorOf(missing.body).code).toBe('missing_model');
    const metrics = await gateway.metrics();
    expect(
      metricValue(metrics, 'gateway_rejections_total', {
        model: '',
        status: '404',
        code: 'model_not_found',
        traffic: 'realtime',
      }),
    ).toBe(1);
    expect(a.requests).toHaveLength(0);
  });

  it('lists the configured aliases, only those the caller may use', async () => {
    const gateway = await gatewayWith({
      auth: { key_definitions: { team: { key: 'team-key' } } },
      targets: {
        open: { url: a.url },
        secret: { url: a.url, keys: ['team'] },
        other: { url: a.url, keys: ['x-key'] },
      },
    });
    const anonymous = await fetch(`${gateway.url}/v1/models`).then((r) => r.json());
    expect(anonymous).toMatchObject({
      object: 'list',
      data: [{ id: 'open', object: 'model', owned_by: 'gateway' }],
    });
    const team = (await fetch(`${gateway.url}/v1/models`, {
      headers: { authorization: 'Bearer team-key' },
    }).then((r) => r.json())) as { data: { id: string }[] };
    expect(team.data.map((m) => m.id)).toEqual(['open', 'secret']);
    expect(a.requests).toHaveLength(0);
  });

  it('rejects a body over --max-body-bytes with 413 and never contacts the provider', async () => {
    const gateway = await gatewayWith({ targets: { a: { url: a.url } } }, ['--max-body-bytes', '1024']);
    const big = await call(gateway, {
      body: { model: 'a', messages: [{ role: 'user', content: 'x'.repeat(5000) }] },
    });
    expect(big.status).toBe(413);
    expect(errorOf(big.body).code).toBe('request_too_large');
    expect(a.requests).toHaveLength(0);
  });

  it('answers 503 upstream_unavailable when the provider refuses connections', async () => {
    const gateway = await gatewayWith({ targets: { a: { url: 'http://127.0.0.1:1' } } });
    const response = await call(gateway);
    expect(response.status).toBe(503);
    expect(errorOf(response.body).code).toBe('upstream_unavailable');
  });
});

describe('headers', () => {
  it('sends the upstream key in every header variant and never the client key', async () => {
    const gateway = await gatewayWith({
      targets: {
        plain: { url: a.url, gateway_key: 'up-1', keys: ['client-key'] },
        named: { url: a.url, gateway_key: 'up-2', upstream_auth_header_name: 'X-Api-Key' },
        bare: {
          url: a.url,
          gateway_key: 'up-3',
          upstream_auth_header_name: 'api-key',
          upstream_auth_header_prefix: '',
        },
        nokey: { url: a.url, keys: ['client-key'] },
      },
    });
    for (const model of ['plain', 'named', 'bare', 'nokey']) {
      expect((await call(gateway, { model, headers: { authorization: 'Bearer client-key' } })).status).toBe(
        200,
      );
    }
    const [plain, named, bare, nokey] = a.requests;
    expect(plain!.headers.authorization).toBe('Bearer up-1');
    expect(named!.headers['x-api-key']).toBe('Bearer up-2');
    expect(named!.headers.authorization).toBeUndefined();
    expect(bare!.headers['api-key']).toBe('up-3');
    expect(nokey!.headers.authorization).toBeUndefined();
    for (const request of a.requests) expect(JSON.stringify(request.headers)).not.toContain('client-key');
  });

  it("merges response_headers (provider wins), drops hop-by-hop fields, passes the client's request id and keeps the provider's", async () => {
    a.respondWith((_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-request-id': 'upstream-id',
        'x-b': 'from-upstream',
        connection: 'x-hop',
        'x-hop': 'must-not-pass',
      });
      res.end('{}');
    });
    const gateway = await gatewayWith({
      targets: {
        a: {
          response_headers: { 'X-A': 'pool', 'X-B': 'pool' },
          providers: [{ url: a.url, response_headers: { 'x-b': 'provider' } }],
        },
      },
    });
    // node:http, not fetch: fetch silently drops `connection` and `te`, which this test needs to send.
    const response = await new Promise<{ headers: Headers }>((resolve, reject) => {
      const payload = JSON.stringify({ model: 'a', messages: [] });
      const req = httpRequest(
        `${gateway.url}/v1/chat/completions`,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-request-id': 'client-id',
            connection: 'keep-alive, x-client-hop',
            'x-client-hop': 'drop me',
            te: 'trailers',
            'proxy-authorization': 'Basic c2VjcmV0',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const headers = new Headers();
            for (const [name, value] of Object.entries(res.headers))
              if (typeof value === 'string') headers.set(name, value);
            resolve({ headers });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
    expect(response.headers.get('x-a')).toBe('pool');
    expect(response.headers.get('x-b')).toBe('provider');
    expect(response.headers.get('x-request-id')).toBe('client-id');
    expect(response.headers.get('x-upstream-request-id')).toBe('upstream-id');
    expect(response.headers.get('x-hop')).toBeNull();
    const seen = a.requests[0]!.headers;
    expect(seen['x-request-id']).toBe('client-id');
    expect(seen['x-client-hop']).toBeUndefined();
    expect(seen.te).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
  });
  it('drops the fields each Connection header names, request by request', async () => {
    const gateway = await gatewayWith({ targets: { a: { url: a.url } } });
    // node:http, not fetch (fetch drops `connection`). Two lists in turn, then the first again.
    const send = (connection: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          `${gateway.url}/v1/chat/completions`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', connection, 'x-one': '1', 'x-two': '2' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'a', messages: [] }));
      });
    for (const connection of ['keep-alive, x-one', 'keep-alive, X-Two', 'keep-alive, x-one']) {
      expect(await send(connection)).toBe(200);
    }
    const seen = a.requests.map((r) => [r.headers['x-one'], r.headers['x-two']]);
    expect(seen).toEqual([
      [undefined, '2'],
      ['1', undefined],
      [undefined, '2'],
    ]);
  });

  it('asks for an uncompressed response only from a provider whose response the gateway reads', async () => {
    a.respondWith(
      jsonReply(200, {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      }),
    );
    const gateway = await gatewayWith({
      targets: { raw: { url: a.url }, read: { url: a.url, sanitize_response: true } },
    });
    for (const model of ['raw', 'read']) {
      expect((await call(gateway, { model, headers: { 'accept-encoding': 'gzip' } })).status).toBe(200);
    }
    const [raw, read] = a.requests;
    expect(raw!.headers['accept-encoding']).toBe('gzip');
    expect(read!.headers['accept-encoding']).toBeUndefined();
  });
});

describe('authentication (spec 5)', () => {
  const config = () => ({
    auth: {
      global_keys: ['global-key'],
      key_definitions: { team: { key: 'team-key', labels: { account: 'acme' } } },
    },
    targets: {
      keyed: { url: a.url, keys: ['team', 'literal-key'] },
      open: { url: a.url },
    },
  });

  it('accepts target, named and global keys; 401 for missing or wrong ones; open targets need none', async () => {
    const gateway = await gatewayWith(config());
    const as = (key: string | undefined, model = 'keyed') =>
      call(gateway, { model, headers: key === undefined ? {} : { authorization: `Bearer ${key}` } }).then(
        (r) => r.status,
      );
    expect(await as('team-key')).toBe(200);
    expect(await as('literal-key')).toBe(200);
    expect(await as('global-key')).toBe(200);
    expect(await as(undefined)).toBe(401);
    expect(await as('wrong')).toBe(401);
    expect(await as(undefined, 'open')).toBe(200);
    const rejected = await call(gateway, { model: 'keyed', headers: { authorization: 'Bearer nope' } });
    expect(errorOf(rejected.body)).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    const log = gateway.program.logs.find((l) => l.msg === 'request rejected' && l.status === 401);
    expect(log).toMatchObject({ code: 'invalid_api_key', model: 'keyed' });
    // Keys never appear in logs or metrics.
    const everything = JSON.stringify(gateway.program.logs) + (await gateway.metrics());
    for (const key of ['team-key', 'literal-key', 'global-key', 'nope'])
      expect(everything).not.toContain(key);
  });
});

describe('limits (spec 7.1, 8)', () => {
  it('checks the key bucket before the target bucket; 429 rate_limit', async () => {
    const gateway = await gatewayWith({
      auth: {
        key_definitions: {
          limited: { key: 'k1', rate_limit: { requests_per_second: 0.001, burst_size: 1 } },
          free: { key: 'k2' },
        },
      },
      targets: {
        a: {
          url: a.url,
          keys: ['limited', 'free'],
          rate_limit: { requests_per_second: 0.001, burst_size: 2 },
        },
      },
    });
    const as = (key: string) => call(gateway, { headers: { authorization: `Bearer ${key}` } });
    expect((await as('k1')).status).toBe(200);
    const keyRefused = await as('k1');
    expect(keyRefused.status).toBe(429);
    expect(errorOf(keyRefused.body)).toMatchObject({ code: 'rate_limit', type: 'rate_limit_error' });
    expect(errorOf(keyRefused.body).message).toContain('key limit');
    // The key refusal did not spend a target token: one is left for the other key.
    expect((await as('k2')).status).toBe(200);
    const targetRefused = await as('k2');
    expect(targetRefused.status).toBe(429);
    expect(errorOf(targetRefused.body).message).toContain('target limit');
    const metrics = await gateway.metrics();
    expect(
      metricValue(metrics, 'gateway_rejections_total', {
        model: 'a',
        status: '429',
        code: 'rate_limit',
        traffic: 'realtime',
      }),
    ).toBe(2);
  });

  it('refuses a second concurrent request with concurrency_limit_exceeded and frees the permit after', async () => {
    a.respondWith(async (_req, res) => {
      await sleep(500);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    const gateway = await gatewayWith({
      targets: { a: { url: a.url, concurrency_limit: { max_concurrent_requests: 1 } } },
    });
    const first = call(gateway);
    await sleep(100);
    const second = await call(gateway);
    expect(second.status).toBe(429);
    expect(errorOf(second.body).code).toBe('concurrency_limit_exceeded');
    expect((await first).status).toBe(200);
    expect((await call(gateway)).status).toBe(200);
  });

  it('caps in-flight requests per account with Retry-After: 1, and keys without an account are not counted', async () => {
    // Streams last about 2 s, so the ones that must overlap do, even on a loaded machine.
    a.respondWith(sseReply([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }], 500));
    const gateway = await gatewayWith({
      auth: {
        key_definitions: {
          one: { key: 'acme-1', labels: { account: 'acme' } },
          two: { key: 'acme-2', labels: { account: 'acme' } },
          vip: { key: 'vip-1', labels: { account: 'vip' } },
          anon: { key: 'anon-1' },
        },
      },
      targets: {
        a: {
          url: a.url,
          keys: ['one', 'two', 'vip', 'anon'],
          inflight_limit: 1,
          account_inflight_limits: { vip: 2 },
        },
      },
    });
    const stream = (key: string) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'a', messages: [], stream: true }),
      });
    const held = await stream('acme-1');
    expect(held.status).toBe(200);
    const refused = await stream('acme-2'); // same account, other key
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(errorOf(await refused.text()).code).toBe('inflight_limit_exceeded');
    const vip = await Promise.all([stream('vip-1'), stream('vip-1')]);
    expect(vip.map((r) => r.status)).toEqual([200, 200]);
    const anon = await Promise.all([stream('anon-1'), stream('anon-1')]);
    expect(anon.map((r) => r.status)).toEqual([200, 200]);
    await Promise.all([held, ...vip, ...anon].map((r) => r.text()));
    // Released at the end of the body: the account may go again.
    const again = await stream('acme-2');
    expect(again.status).toBe(200);
    await again.text();
  });

  it('caps dispatched traffic with 529 batch_capacity_exceeded when enforcement is on', async () => {
    a.respondWith(async (_req, res) => {
      await sleep(400);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    const config = { targets: { a: { url: a.url, batch_inflight_limit: 1, inflight_limit: 1 } } };
    const dispatched = { 'x-gateway-dispatched': '1' };

    const loadedOnly = await gatewayWith(config);
    const unenforced = await Promise.all([
      call(loadedOnly, { headers: dispatched }),
      call(loadedOnly, { headers: dispatched }),
    ]);
    expect(unenforced.map((r) => r.status)).toEqual([200, 200]);

    const enforcing = await gatewayWith(config, ['--enforce-batch-inflight']);
    const [first, second, realtime] = await Promise.all([
      call(enforcing, { headers: dispatched }),
      sleep(100).then(() => call(enforcing, { headers: dispatched })),
      sleep(100).then(() => call(enforcing)),
    ]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(529);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(errorOf(second.body)).toMatchObject({ type: 'overloaded_error', code: 'batch_capacity_exceeded' });
    // Realtime traffic never counts against the batch cap.
    expect(realtime.status).toBe(200);
    const metrics = await enforcing.metrics();
    expect(metricValue(metrics, 'gateway_batch_inflight_refusals_total', { model: 'a' })).toBe(1);
    expect(
      metricValue(metrics, 'gateway_rejections_total', {
        code: 'batch_capacity_exceeded',
        traffic: 'dispatched',
      }),
    ).toBe(1);
  });

  it('keeps limiter state across a reload that leaves the limit unchanged', async () => {
    const limited = { url: a.url, rate_limit: { requests_per_second: 0.001, burst_size: 2 } };
    const gateway = await gatewayWith({ targets: { a: limited } });
    expect((await call(gateway)).status).toBe(200);
    await gateway.writeConfig({ targets: { a: limited, b: { url: b.url } } });
    await gateway.waitForReloads(1);
    expect((await call(gateway)).status).toBe(200);
    expect((await call(gateway)).status).toBe(429); // a fresh bucket would have allowed this one
  });
});

describe('in-flight slots are released', () => {
  const config = () => ({
    auth: { key_definitions: { one: { key: 'k', labels: { account: 'acme' } } } },
    targets: { a: { url: a.url, keys: ['one'], inflight_limit: 1 } },
  });
  const headers = { authorization: 'Bearer k' };

  async function inflight(gateway: StartedGateway): Promise<number | undefined> {
    return metricValue(await gateway.metrics(), 'gateway_model_inflight', { model: 'a' });
  }

  const eventuallyZero = (gateway: StartedGateway) =>
    untilEquals(() => inflight(gateway), 0, 'gateway_model_inflight', 5_000);

  it('on normal end, on upstream error and on client disconnect mid-stream', async () => {
    const gateway = await gatewayWith(config());
    // Normal end.
    expect((await call(gateway, { headers })).status).toBe(200);
    await eventuallyZero(gateway);

    // Upstream dies mid-stream: the client sees a broken stream, the slot comes back.
    a.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const cut = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a', stream: true }),
    });
    await expect(cut.text()).rejects.toThrow();
    await eventuallyZero(gateway);

    // Client disconnects mid-stream: the slot comes back and the upstream request is aborted.
    let upstreamClosed = false;
    a.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      const timer = setInterval(() => res.write('data: {"n":2}\n\n'), 50);
      res.on('close', () => {
        clearInterval(timer);
        upstreamClosed = true;
      });
    });
    const socket = connect(gateway.port, '127.0.0.1');
    const payload = JSON.stringify({ model: 'a', stream: true });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\ncontent-length: ${payload.length}\r\n\r\n${payload}`,
    );
    await new Promise((resolve) => socket.once('data', resolve));
    expect(await inflight(gateway)).toBe(1);
    socket.destroy();
    await eventuallyZero(gateway);
    for (let i = 0; i < 40 && !upstreamClosed; i++) await sleep(50);
    expect(upstreamClosed).toBe(true);
    a.respondWith(jsonReply(200, {}));
    expect((await call(gateway, { headers })).status).toBe(200);
  });
});

describe('streaming pass-through', () => {
  it('delivers every chunk unchanged to the official openai SDK', async () => {
    const chunks = Array.from({ length: 20 }, (_, i) => ({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'upstream-model',
      choices: [
        {
          index: 0,
          delta: i === 0 ? { role: 'assistant', content: '' } : { content: `tok${i} é` },
          finish_reason: null,
        },
      ],
    }));
    a.respondWith(sseReply(chunks, 5));
    const gateway = await gatewayWith({ targets: { a: { url: `${a.url}/v1` } } });
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'a',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const received: unknown[] = [];
    for await (const chunk of stream) received.push(chunk);
    expect(received).toEqual(chunks);
  });
});
