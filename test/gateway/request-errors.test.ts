import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * What the proxy port answers a request it cannot route: each says what is wrong with the request
 * (the port, the content type, the JSON, the `model`), in the error envelope of the mode.
 */

let up: RecordingUpstream;
let plain: StartedGateway;
let strict: StartedGateway;

beforeAll(async () => {
  up = await startUpstream(jsonReply(200, { id: 'ok' }));
  [plain, strict] = await Promise.all([
    startGateway({ targets: { a: { url: up.url } } }),
    startGateway({ strict_mode: true, targets: { a: { url: up.url } } }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain?.stop(), strict?.stop()]);
  await up?.close();
});
beforeEach(() => {
  up.requests.length = 0;
});

interface Answer {
  status: number;
  error: { message: string; type: string; code: string | null; param: string | null };
  keys: string[];
}

/** One raw HTTP request: exactly the headers given (no client adds a content type of its own). */
function send(
  gateway: StartedGateway,
  init: { method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<Answer & { raw: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${gateway.url}${init.path ?? '/v1/chat/completions'}`,
      { method: init.method ?? 'POST', headers: init.headers ?? {} },
      (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () => {
          let parsed: { error?: Answer['error'] } = {};
          try {
            parsed = JSON.parse(raw) as { error?: Answer['error'] };
          } catch {
            // a success body from the upstream, or not JSON: the caller looks at `raw`
          }
          resolve({
            status: res.statusCode!,
            error: parsed.error!,
            keys: parsed.error === undefined ? [] : Object.keys(parsed.error).sort(),
            raw,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

const CHAT = JSON.stringify({ model: 'a', messages: [{ role: 'user', content: 'hi' }] });
const ENVELOPE = ['code', 'message', 'param', 'type'];

describe('requests the proxy cannot route say what is wrong (standard mode)', () => {
  it('a body sent as a form (curl -d without a content type) is refused for its content type', async () => {
    const answer = await send(plain, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: CHAT,
    });
    expect(answer.status).toBe(415);
    expect(answer.keys).toEqual(ENVELOPE);
    expect(answer.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_content_type' });
    expect(answer.error.message).toContain('content-type must be application/json');
    expect(answer.error.message).toContain('`application/x-www-form-urlencoded`');

    const none = await send(plain, { body: 'model=a' });
    expect(none.status).toBe(415);
    expect(none.error.message).toContain('content-type must be application/json (the request has none)');
    expect(up.requests).toHaveLength(0);
  });

  it('JSON content types with parameters, and a JSON object without any content type, are accepted', async () => {
    const accepted: Record<string, string>[] = [
      { 'content-type': 'application/json; charset=utf-8' },
      { 'content-type': 'application/vnd.api+json' },
      {},
    ];
    for (const headers of accepted) {
      expect((await send(plain, { headers, body: CHAT })).status).toBe(200);
    }
    expect(up.requests).toHaveLength(3);
  });

  it('a body that is not JSON, or not an object, is refused as such', async () => {
    const json = { 'content-type': 'application/json' };
    const broken = await send(plain, { headers: json, body: '{"model": "a",' });
    expect(broken.status).toBe(400);
    expect(broken.keys).toEqual(ENVELOPE);
    expect(broken.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    expect(broken.error.message).toContain('request body is not valid JSON');

    const list = await send(plain, { headers: json, body: '["a"]' });
    expect(list.status).toBe(400);
    expect(list.error).toMatchObject({ code: 'invalid_body' });
    expect(list.error.message).toContain('must be a JSON object');
  });

  it('a `model` that is not a string is named as the problem', async () => {
    const answer = await send(plain, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 5, messages: [] }),
    });
    expect(answer.status).toBe(400);
    expect(answer.error).toEqual({
      message: '`model` must be a string naming an alias, not number.',
      type: 'invalid_request_error',
      code: 'invalid_model',
      param: 'model',
    });
    const metrics = await plain.metrics();
    expect(metricValue(metrics, 'gateway_rejections_total', { status: '400', code: 'invalid_model' })).toBe(
      1,
    );
  });

  it('the `model-override` header still routes a request whose body is not JSON, or that has none', async () => {
    const override = { 'model-override': 'a' };
    expect(
      (await send(plain, { headers: { ...override, 'content-type': 'text/plain' }, body: 'hello' })).status,
    ).toBe(200);
    expect((await send(plain, { method: 'GET', path: '/v1/files', headers: override })).status).toBe(200);
    expect((await send(plain, { method: 'GET', path: '/healthz', headers: override })).status).toBe(200);
    expect(up.requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v1/files', '/healthz']);
  });

  it('health and metrics paths on the proxy port name the admin port', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const answer = await send(plain, { method: 'GET', path });
      expect(answer.status).toBe(404);
      expect(answer.keys).toEqual(ENVELOPE);
      expect(answer.error).toMatchObject({ type: 'not_found_error', code: null, param: null });
      expect(answer.error.message).toBe(
        `${path} is served on the admin port (${plain.adminPort}, --metrics-port), not on the proxy port.`,
      );
    }
    expect(up.requests).toHaveLength(0);
  });
});

describe("who answered: the gateway's errors say so, a provider's pass through unmarked", () => {
  it("an unknown alias's 404 carries x-gateway-error; the provider's own 404 for a model it lacks does not", async () => {
    const vllm = await startUpstream(
      jsonReply(404, {
        object: 'error',
        message: 'The model `a` does not exist.',
        type: 'NotFoundError',
        param: null,
        code: 404,
      }),
    );
    const gateway = await startGateway({ targets: { a: { url: vllm.url } } });
    try {
      const post = (model: string) =>
        fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
        });
      const unknown = await post('nope');
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('x-gateway-error')).toBe('model_not_found');
      const provider = await post('a');
      expect(provider.status).toBe(404);
      expect(provider.headers.get('x-gateway-error')).toBeNull();
      expect(((await provider.json()) as { message: string }).message).toContain('does not exist');
    } finally {
      await gateway.stop();
      await vllm.close();
    }
  });

  it('strict mode keeps the header, naming the code its body leaves out', async () => {
    const answer = await fetch(`${strict.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(answer.status).toBe(404);
    expect(answer.headers.get('x-gateway-error')).toBe('model_not_found');
  });
});

describe('the same requests in strict mode, in its error shapes', () => {
  it('a `model` that is not a string, or is missing, is a schema error on `model`', async () => {
    const json = { 'content-type': 'application/json' };
    const wrong = await send(strict, { headers: json, body: JSON.stringify({ model: 5, messages: [] }) });
    expect(wrong.status).toBe(400);
    expect(wrong.error).toEqual({
      message: 'Invalid request: `model`: expected string, received number.',
      type: 'invalid_request_error',
      code: null,
      param: 'model',
    });
    const missing = await send(strict, { headers: json, body: JSON.stringify({ messages: [] }) });
    expect(missing.error).toEqual({
      message: 'Invalid request: `model`: required field is missing.',
      type: 'invalid_request_error',
      code: null,
      param: 'model',
    });
    const metrics = await strict.metrics();
    expect(metricValue(metrics, 'gateway_rejections_total', { status: '400', code: 'schema_mismatch' })).toBe(
      2,
    );
    expect(up.requests).toHaveLength(0);
  });

  it('a body that is not JSON keeps the strict message', async () => {
    const answer = await send(strict, { headers: { 'content-type': 'application/json' }, body: '{' });
    expect(answer.status).toBe(400);
    expect(answer.error).toMatchObject({
      message: 'Invalid request: the body is not valid JSON.',
      code: null,
    });
  });

  it('health paths on the proxy port name the admin port in the strict 404', async () => {
    const answer = await send(strict, { method: 'GET', path: '/healthz' });
    expect(answer.status).toBe(404);
    expect(answer.error).toEqual({
      message: `Not found: \`/healthz\` is served on the admin port (${strict.adminPort}, --metrics-port).`,
      type: 'not_found_error',
      code: null,
      param: null,
    });
  });
});
