import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNTRUSTED_ERROR_ROWS } from '../fixtures/strict-errors.js';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat } from '../helpers/client.js';
import { completion, jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Strict mode end to end (spec 4.5, 4.7, 6, 7.1, 7.2): the real gateway in front of a recording
 * upstream. Every assertion is on what the client received (status, headers, bytes), what the
 * upstream received, and the metrics text.
 */

let up: RecordingUpstream;
let gateway: StartedGateway;

const REJECT_LIST = ['guided_json', 'min_tokens'];

/**
 * Pools share the one recording upstream: provider entries are told apart by a path prefix
 * (`/first`, `/second`), so a handler can answer per provider and the log of requests shows which
 * provider was tried.
 */
function pool(trusted: boolean | undefined, second: boolean | undefined): Record<string, unknown> {
  return {
    ...(trusted === undefined ? {} : { trusted }),
    strategy: 'priority',
    fallback: { on_status: [503], aimd: false },
    providers: [
      { url: `${up.url}/first` },
      { url: `${up.url}/second`, ...(second === undefined ? {} : { trusted: second }) },
    ],
  };
}

beforeAll(async () => {
  up = await startUpstream();
  gateway = await startGateway({
    strict_mode: true,
    reject_unsupported_params: REJECT_LIST,
    targets: {
      u: { url: up.url },
      t: { url: up.url, trusted: true },
      keyed: { url: up.url, keys: ['client-key'] },
      // Trusted pool whose second provider is not; untrusted pool whose second provider is.
      'pool-trusted': pool(true, false),
      'pool-untrusted': pool(undefined, true),
    },
  });
});

afterAll(async () => {
  await gateway?.stop();
  await up?.close();
});

beforeEach(() => {
  up.requests.length = 0;
  up.respondWith(jsonReply(200, completion('upstream-model')));
});

// --- helpers -------------------------------------------------------------------------------------

interface Reply {
  status: number;
  headers: Headers;
  bytes: Buffer;
  text: string;
}

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<Reply> {
  const payload =
    body === undefined
      ? undefined
      : typeof body === 'string' || Buffer.isBuffer(body)
        ? body
        : JSON.stringify(body);
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: payload,
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes, text: bytes.toString('utf8') };
}

interface StandardError {
  error: { message: string; type: string; param: string | null; code: string | number | null };
}

function standard(message: string, type: string): StandardError {
  return { error: { message, type, param: null, code: null } };
}

function parseError(reply: Reply): StandardError['error'] {
  const parsed = JSON.parse(reply.text) as StandardError;
  // The standard object of spec 2.7: exactly these four fields.
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  return parsed.error;
}

/** Sum of every series of `name` whose labels include `labels` (0 when none). */
function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.indexOf('}');
    const parsed: Record<string, string> = {};
    for (const m of line.slice(name.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      parsed[m[1]!] = m[2]!;
    if (Object.entries(labels).every(([k, v]) => parsed[k] === v)) sum += Number(line.slice(close + 1));
  }
  return sum;
}

/** Reads a counter before and after `action`; returns the increase. */
async function counted(
  name: string,
  labels: Record<string, string>,
  action: () => Promise<void>,
): Promise<number> {
  const before = metricSum(await gateway.metrics(), name, labels);
  await action();
  return metricSum(await gateway.metrics(), name, labels) - before;
}

function expectContentLength(reply: Reply): void {
  expect(reply.headers.get('content-length')).toBe(String(reply.bytes.length));
}

// --- endpoints -----------------------------------------------------------------------------------

describe('strict endpoints (spec 4.5)', () => {
  it.each([
    ['POST', '/v1/completions'],
    ['POST', '/v1/audio/speech'],
    ['GET', '/v1/files'],
    ['GET', '/v1/chat/completions'],
  ])('%s %s -> 404 in the standard shape, not forwarded', async (method, path) => {
    const reply = await post(
      path,
      method === 'GET' ? undefined : chat('u'),
      { 'model-override': 'u' },
      method,
    );
    expect(reply.status).toBe(404);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expectContentLength(reply);
    const error = parseError(reply);
    expect(error).toMatchObject({ type: 'not_found_error', param: null, code: null });
    expect(up.requests).toHaveLength(0);
  });

  it('serves /v1/models', async () => {
    const response = await fetch(`${gateway.url}/v1/models`);
    expect(response.status).toBe(200);
    const list = (await response.json()) as { object: string; data: { id: string; object: string }[] };
    expect(list.object).toBe('list');
    expect(list.data.map((m) => m.id)).toEqual(expect.arrayContaining(['u', 't', 'pool-trusted']));
    expect(list.data.every((m) => m.object === 'model')).toBe(true);
    expect(up.requests).toHaveLength(0);
  });

  it("the gateway's own errors keep the standard shape (401 on a keyed target)", async () => {
    const reply = await post('/v1/chat/completions', chat('keyed'));
    expect(reply.status).toBe(401);
    expect(parseError(reply)).toMatchObject({ type: 'authentication_error', param: null });
    expect(up.requests).toHaveLength(0);
    expect(
      (await post('/v1/chat/completions', chat('keyed'), { authorization: 'Bearer client-key' })).status,
    ).toBe(200);
  });
});

describe('strict authentication errors', () => {
  it('a wrong or missing key gets the 401 row of the standardization table, counted as invalid_api_key', async () => {
    const before = metricValue(await gateway.metrics(), 'gateway_rejections_total', {
      model: 'keyed',
      status: '401',
      code: 'invalid_api_key',
    });
    const wrong = await post('/v1/chat/completions', chat('keyed'), { authorization: 'Bearer not-the-key' });
    const missing = await post('/v1/chat/completions', chat('keyed'));
    for (const reply of [wrong, missing]) {
      expect(reply.status).toBe(401);
      expect(JSON.parse(reply.text)).toEqual({
        error: { message: 'Authentication failed', type: 'authentication_error', param: null, code: null },
      });
    }
    const after = metricValue(await gateway.metrics(), 'gateway_rejections_total', {
      model: 'keyed',
      status: '401',
      code: 'invalid_api_key',
    });
    expect((after ?? 0) - (before ?? 0)).toBe(2);
    expect(up.requests).toHaveLength(0);
  });
});

// --- request validation --------------------------------------------------------------------------

describe('request validation (spec 4.5, 6, 7.1)', () => {
  const cases: {
    name: string;
    path: string;
    body: string | Buffer;
    contentType: string;
    code: string;
    model: string;
  }[] = [
    {
      name: 'chat without messages',
      path: '/v1/chat/completions',
      body: JSON.stringify({ model: 'u' }),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'chat with an unknown field',
      path: '/v1/chat/completions',
      body: JSON.stringify(chat('u', { temprature: 0.2 })),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'chat with a mistyped field',
      path: '/v1/chat/completions',
      body: JSON.stringify(chat('u', { temperature: 'hot' })),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'chat with a malformed message',
      path: '/v1/chat/completions',
      body: JSON.stringify({ model: 'u', messages: [{ role: 'wizard', content: 'x' }] }),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'chat body that is not JSON',
      path: '/v1/chat/completions',
      body: '{"model":"u","messages":[',
      contentType: 'application/json',
      code: 'invalid_json',
      model: '',
    },
    {
      name: 'chat body that is a JSON array',
      path: '/v1/chat/completions',
      body: '[{"model":"u"}]',
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: '',
    },
    {
      name: 'embeddings with an engine extension',
      path: '/v1/embeddings',
      body: JSON.stringify({ model: 'u', input: 'x', truncate_prompt_tokens: 5 }),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'embeddings without input',
      path: '/v1/embeddings',
      body: JSON.stringify({ model: 'u' }),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'streaming responses request',
      path: '/v1/responses',
      body: JSON.stringify({ model: 'u', input: 'x', stream: true }),
      contentType: 'application/json',
      code: 'schema_mismatch',
      model: 'u',
    },
    {
      name: 'responses with a non-JSON content type',
      path: '/v1/responses',
      body: JSON.stringify({ model: 'u', input: 'x' }),
      contentType: 'text/plain',
      code: 'invalid_content_type',
      model: '',
    },
    {
      name: 'responses with bytes that are not UTF-8',
      path: '/v1/responses',
      body: Buffer.concat([
        Buffer.from('{"model":"u","input":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]),
      contentType: 'application/json',
      code: 'invalid_body',
      model: '',
    },
    {
      name: 'responses body that is not JSON',
      path: '/v1/responses',
      body: '{"model":',
      contentType: 'application/json',
      code: 'invalid_json',
      model: '',
    },
  ];

  it.each(cases)('$name -> 400 $code, never forwarded', async ({ path, body, contentType, code, model }) => {
    let reply: Reply | undefined;
    const increase = await counted(
      'gateway_rejections_total',
      { model, status: '400', code, traffic: 'realtime' },
      async () => {
        reply = await post(path, body, { 'content-type': contentType });
      },
    );
    expect(reply!.status).toBe(400);
    expect(reply!.headers.get('content-type')).toBe('application/json');
    expectContentLength(reply!);
    const error = parseError(reply!);
    expect(error.type).toBe('invalid_request_error');
    expect(error.code).toBeNull();
    expect(error.message.startsWith('Invalid request')).toBe(true);
    expect(up.requests).toHaveLength(0);
    expect(increase).toBe(1);
  });

  it('names the offending field in message and param', async () => {
    const reply = await post('/v1/chat/completions', chat('u', { temprature: 0.2 }));
    expect(parseError(reply)).toMatchObject({ param: 'temprature', code: null });
    expect(parseError(reply).message).toContain('`temprature`');
  });

  it('a non-UTF-8 chat body is invalid_json (the body-read label is the Responses surface only)', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"model":"u","messages":[{"role":"user","content":"'),
      Buffer.from([0xc3]),
      Buffer.from('"}]}'),
    ]);
    const increase = await counted(
      'gateway_rejections_total',
      { status: '400', code: 'invalid_json' },
      async () => {
        expect((await post('/v1/chat/completions', bytes)).status).toBe(400);
      },
    );
    expect(increase).toBe(1);
    expect(up.requests).toHaveLength(0);
  });

  it('checks the schema before unsupported parameters (spec 4.4 rule 6)', async () => {
    const metrics = await gateway.metrics();
    const unsupportedBefore = metricSum(metrics, 'gateway_unsupported_params_total', { model: 'u' });
    const schemaBefore = metricSum(metrics, 'gateway_rejections_total', { code: 'schema_mismatch' });
    const paramBefore = metricSum(metrics, 'gateway_rejections_total', { code: 'unsupported_parameter' });

    // A rejected catalog parameter, a refused one and a schema error in one body: the schema answers.
    const reply = await post(
      '/v1/chat/completions',
      chat('u', {
        guided_json: { type: 'object' },
        chat_template_kwargs: { enable_thinking: true },
        temprature: 1,
      }),
    );
    expect(reply.status).toBe(400);
    expect(parseError(reply)).toMatchObject({ code: null, param: 'temprature' });

    const after = await gateway.metrics();
    expect(metricSum(after, 'gateway_rejections_total', { code: 'schema_mismatch' })).toBe(schemaBefore + 1);
    expect(metricSum(after, 'gateway_rejections_total', { code: 'unsupported_parameter' })).toBe(paramBefore);
    // The parameter stage never ran: nothing counted for the catalog parameter.
    expect(metricSum(after, 'gateway_unsupported_params_total', { model: 'u' })).toBe(unsupportedBefore);
    expect(up.requests).toHaveLength(0);
  });

  it('accepts explicit nulls for optional reference fields and forwards the body bytes unchanged', async () => {
    const raw =
      '{"model":"u",  "messages":[{"role":"user","content":"h\\u00e9"}],"temperature":null,"user":"x"}';
    const reply = await post('/v1/chat/completions', raw);
    expect(reply.status).toBe(200);
    expect(up.requests).toHaveLength(1);
    expect(up.requests[0]!.body).toBe(raw);
  });
});

describe('model-override in strict mode (spec 4.4 rules 1-2)', () => {
  it('a valid body routed by the header is validated, served and sanitized under the header alias', async () => {
    up.respondWith(jsonReply(200, completion('upstream', { vendor: 1 })));
    const reply = await post('/v1/chat/completions', chat('t'), { 'model-override': 'u' });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text)).toEqual(completion('u'));
    expect(up.requests).toHaveLength(1);
  });

  it('a client cannot dodge masking: body names the trusted alias, the header an untrusted one', async () => {
    up.respondWith(errorReply(401));
    const reply = await post('/v1/chat/completions', chat('t'), { 'model-override': 'u' });
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.text)).toEqual(standard('Bad gateway', 'api_error'));
    expect(reply.text).not.toContain('UPSTREAM-DETAIL');
  });

  it('the header names the trusted alias: that provider served, so its error passes through', async () => {
    up.respondWith(errorReply(401));
    const reply = await post('/v1/chat/completions', chat('u'), { 'model-override': 't' });
    expect(reply.status).toBe(401);
    expect(reply.text).toBe(upstreamErrorBody(401));
  });

  it('the body is still validated, with the same labels, when the header names the alias', async () => {
    const schema = await counted(
      'gateway_rejections_total',
      { status: '400', code: 'schema_mismatch' },
      async () => {
        const reply = await post('/v1/chat/completions', chat('u', { temprature: 1 }), {
          'model-override': 'u',
        });
        expect(reply.status).toBe(400);
      },
    );
    const json = await counted(
      'gateway_rejections_total',
      { status: '400', code: 'invalid_json' },
      async () => {
        expect((await post('/v1/chat/completions', '{"model":', { 'model-override': 'u' })).status).toBe(400);
      },
    );
    const refused = await counted(
      'gateway_rejections_total',
      { status: '400', code: 'unsupported_parameter' },
      async () => {
        const body = chat('u', { chat_template_kwargs: {} });
        expect((await post('/v1/chat/completions', body, { 'model-override': 'u' })).status).toBe(400);
      },
    );
    expect([schema, json, refused]).toEqual([1, 1, 1]);
    expect(up.requests).toHaveLength(0);
  });
});

// --- unsupported parameters ----------------------------------------------------------------------

describe('unsupported parameters (spec 4.7)', () => {
  const series = (param: string, action: string) => ({ param, model: 'u', traffic: 'realtime', action });

  it('a catalog parameter outside the reject list is forwarded unchanged, counted as logged, logged by name only', async () => {
    const raw = JSON.stringify(chat('u', { guided_regex: 'SECRET-REGEX-VALUE-42', top_k: 7 }));
    const before = await gateway.metrics();
    const reply = await post('/v1/chat/completions', raw);
    expect(reply.status).toBe(200);
    expect(up.requests).toHaveLength(1);
    expect(up.requests[0]!.body).toBe(raw);

    const after = await gateway.metrics();
    for (const param of ['guided_regex', 'top_k']) {
      expect(metricSum(after, 'gateway_unsupported_params_total', series(param, 'logged'))).toBe(
        metricSum(before, 'gateway_unsupported_params_total', series(param, 'logged')) + 1,
      );
      expect(metricSum(after, 'gateway_unsupported_params_total', series(param, 'rejected'))).toBe(0);
    }
    const log = await gateway.program.waitForLog(
      (l) =>
        l.msg === 'unsupported parameters in a strict request' &&
        Array.isArray(l.params) &&
        (l.params as string[]).includes('guided_regex'),
    );
    expect(log).toMatchObject({ level: 'info', params: ['guided_regex', 'top_k'], rejected: [], model: 'u' });
    // Values (and bodies) are never logged, at any level.
    expect(JSON.stringify(gateway.program.logs)).not.toContain('SECRET-REGEX-VALUE-42');
  });

  it('a parameter in the reject list refuses the whole request with the backticked message', async () => {
    let reply: Reply | undefined;
    const rejections = await counted(
      'gateway_rejections_total',
      { model: 'u', status: '400', code: 'unsupported_parameter', traffic: 'realtime' },
      async () => {
        const before = await gateway.metrics();
        reply = await post(
          '/v1/chat/completions',
          chat('u', { min_tokens: 4, guided_json: { type: 'object' }, repetition_penalty: 1.2 }),
        );
        const after = await gateway.metrics();
        const delta = (param: string, action: string) =>
          metricSum(after, 'gateway_unsupported_params_total', series(param, action)) -
          metricSum(before, 'gateway_unsupported_params_total', series(param, action));
        expect(delta('guided_json', 'rejected')).toBe(1);
        expect(delta('min_tokens', 'rejected')).toBe(1);
        // Also refused requests count the parameters that were only observed.
        expect(delta('repetition_penalty', 'logged')).toBe(1);
        expect(delta('guided_json', 'logged')).toBe(0);
      },
    );
    expect(reply!.status).toBe(400);
    expectContentLength(reply!);
    expect(parseError(reply!)).toEqual({
      message: 'Unsupported parameter(s): `guided_json`, `min_tokens`',
      type: 'invalid_request_error',
      param: 'guided_json',
      code: 'unsupported_parameter',
    });
    expect(rejections).toBe(1);
    expect(up.requests).toHaveLength(0);
  });

  it('chat_template_kwargs is refused outright, whatever the reject list', async () => {
    const increase = await counted(
      'gateway_rejections_total',
      { model: 'u', status: '400', code: 'unsupported_parameter' },
      async () => {
        const reply = await post(
          '/v1/chat/completions',
          chat('u', { chat_template_kwargs: { enable_thinking: false } }),
        );
        expect(reply.status).toBe(400);
        const error = parseError(reply);
        expect(error).toMatchObject({ code: 'unsupported_parameter', param: 'chat_template_kwargs' });
        expect(error.message).toContain('`chat_template_kwargs`');
        expect(error.message).toContain('`reasoning_effort`');
      },
    );
    expect(increase).toBe(1);
    expect(up.requests).toHaveLength(0);
  });

  it('values that count as absent are not counted and the request is forwarded', async () => {
    const before = await gateway.metrics();
    const raw = JSON.stringify(
      chat('u', { n: 1, logprobs: false, top_logprobs: 0, min_tokens: 0, guided_json: null }),
    );
    const reply = await post('/v1/chat/completions', raw);
    expect(reply.status).toBe(200);
    expect(up.requests[0]!.body).toBe(raw);
    const after = await gateway.metrics();
    for (const param of ['n', 'logprobs', 'top_logprobs', 'min_tokens', 'guided_json']) {
      expect(metricSum(after, 'gateway_unsupported_params_total', { param })).toBe(
        metricSum(before, 'gateway_unsupported_params_total', { param }),
      );
    }
  });

  it('n above 1 and logprobs true are counted (reference fields that are catalog entries)', async () => {
    const before = await gateway.metrics();
    const reply = await post('/v1/chat/completions', chat('u', { n: 2, logprobs: true, top_logprobs: 3 }));
    expect(reply.status).toBe(200);
    const after = await gateway.metrics();
    for (const param of ['n', 'logprobs', 'top_logprobs']) {
      expect(
        metricSum(after, 'gateway_unsupported_params_total', series(param, 'logged')) -
          metricSum(before, 'gateway_unsupported_params_total', series(param, 'logged')),
      ).toBe(1);
    }
  });

  it('embeddings and responses are not checked for catalog parameters', async () => {
    up.respondWith(jsonReply(200, embeddings('m')));
    const before = await gateway.metrics();
    expect((await post('/v1/embeddings', { model: 'u', input: ['a'] })).status).toBe(200);
    expect(metricSum(await gateway.metrics(), 'gateway_unsupported_params_total', {})).toBe(
      metricSum(before, 'gateway_unsupported_params_total', {}),
    );
  });
});

// --- response sanitization -----------------------------------------------------------------------

function embeddings(model: string, extra: Record<string, unknown> = {}) {
  return {
    object: 'list',
    model,
    data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5] }],
    usage: { prompt_tokens: 2, total_tokens: 2 },
    ...extra,
  };
}

function responseObject(model: string, extra: Record<string, unknown> = {}) {
  return {
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    model,
    status: 'completed',
    output: [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'hello', annotations: [] }],
      },
    ],
    usage: { input_tokens: 2, output_tokens: 1, total_tokens: 3 },
    ...extra,
  };
}

describe('response sanitization, non-streaming (spec 4.5)', () => {
  it('chat completion: provider fields dropped at every depth, model rewritten, exact Content-Length', async () => {
    const upstream = completion('vendor/secret-model-7b', {
      kv_transfer_params: { remote: 'x' },
      prompt_logprobs: null,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'hello',
            reasoning_content: 'private chain',
            tool_calls: [],
          },
          finish_reason: 'stop',
          stop_reason: 128001,
          logprobs: null,
        },
      ],
    });
    up.respondWith(jsonReply(200, upstream, { 'x-upstream-header': 'kept' }));
    const reply = await post('/v1/chat/completions', chat('u'));
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expectContentLength(reply);
    expect(JSON.parse(reply.text)).toEqual({
      ...completion('u'),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'hello', tool_calls: [] },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
    });
    for (const leaked of [
      'secret-model',
      'private chain',
      'kv_transfer_params',
      'stop_reason',
      'prompt_logprobs',
    ])
      expect(reply.text).not.toContain(leaked);
  });

  it('embeddings: extras dropped, model rewritten', async () => {
    up.respondWith(
      jsonReply(200, embeddings('bge-upstream', { id: 'embd-1', created: 5, kv_transfer_params: {} })),
    );
    const reply = await post('/v1/embeddings', { model: 'u', input: 'x' });
    expect(reply.status).toBe(200);
    expectContentLength(reply);
    expect(JSON.parse(reply.text)).toEqual(embeddings('u'));
  });

  it('responses: extras dropped, model rewritten', async () => {
    up.respondWith(jsonReply(200, responseObject('upstream-r', { vendor_trace: { id: 1 } })));
    const reply = await post('/v1/responses', { model: 'u', input: 'hi' });
    expect(reply.status).toBe(200);
    expectContentLength(reply);
    expect(JSON.parse(reply.text)).toEqual(responseObject('u'));
  });

  it.each([
    [
      'a completion missing its choices',
      'application/json',
      '{"id":"x","object":"chat.completion","created":1,"secret":"RAW-BODY"}',
    ],
    ['an HTML page', 'text/html', '<html>RAW-BODY from a proxy</html>'],
    ['truncated JSON', 'application/json', '{"id":"x","object":"chat.completion","RAW-BODY'],
    ['an embeddings body on the chat path', 'application/json', JSON.stringify(embeddings('RAW-BODY'))],
  ])('%s -> 502 standard error, never the raw body', async (_name, contentType, body) => {
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    for (const model of ['u', 't']) {
      const reply = await post('/v1/chat/completions', chat(model));
      expect(reply.status).toBe(502);
      expectContentLength(reply);
      expect(JSON.parse(reply.text)).toEqual(standard('Bad gateway', 'api_error'));
      expect(reply.text).not.toContain('RAW-BODY');
    }
  });

  it.each([
    [
      '/v1/embeddings',
      { model: 'u', input: 'x' },
      { object: 'list', data: [{ index: 0, vector: 'RAW-BODY' }] },
    ],
    [
      '/v1/responses',
      { model: 'u', input: 'x' },
      responseObject('RAW-BODY', { output: [{ type: 'hologram' }] }),
    ],
    ['/v1/responses', { model: 'u', input: 'x' }, completion('RAW-BODY')],
  ])(
    '%s: an answer that is not the reference object -> 502 standard error',
    async (path, request, answer) => {
      up.respondWith(jsonReply(200, answer));
      const reply = await post(path, request);
      expect(reply.status).toBe(502);
      expectContentLength(reply);
      expect(JSON.parse(reply.text)).toEqual(standard('Bad gateway', 'api_error'));
      expect(reply.text).not.toContain('RAW-BODY');
    },
  );

  it('an error inside a 200 body: masked status for an untrusted provider, unchanged for a trusted one', async () => {
    const body = JSON.stringify({
      error: { message: 'RAW quota detail for account 42', type: 'quota', code: 429 },
    });
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const untrusted = await post('/v1/chat/completions', chat('u'));
    expect(untrusted.status).toBe(429);
    expect(JSON.parse(untrusted.text)).toEqual(standard('Rate limit exceeded', 'rate_limit_error'));
    const trusted = await post('/v1/chat/completions', chat('t'));
    expect(trusted.status).toBe(200);
    expect(trusted.text).toBe(body);
  });
});

// --- error standardization -----------------------------------------------------------------------

/** Spec 7.2: masking (untrusted) then the status table; outside the spec's tables, the gateway's rows. */
const ERROR_TABLE: (readonly [status: number, surfaced: number, type: string, message: string])[] = [
  ...UNTRUSTED_ERROR_ROWS,
  // Outside the spec's tables: masking sends any other 4xx to 502; 504 and 529 have their own rows.
  [409, 502, 'api_error', 'Bad gateway'],
  [504, 504, 'api_error', 'Gateway timeout'],
  [529, 529, 'overloaded_error', 'Overloaded'],
];

/** An upstream error answer whose bytes no serializer would produce, so a re-encoding shows. */
const upstreamErrorBody = (status: number): string =>
  `{ "error" : {"message":"UPSTREAM-DETAIL ${status}: account 42 suspended, key sk-live-123",  "type":"vendor_error","code":"acct_${status}"} }\n`;

function errorReply(status: number): (req: unknown, res: ServerResponse) => void {
  return (_req, res) => {
    const body = upstreamErrorBody(status);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-upstream-trace': `trace-${status}`,
    });
    res.end(body);
  };
}

describe('error standardization (spec 7.2)', () => {
  it.each(ERROR_TABLE)(
    'untrusted upstream %i -> %i %s "%s", upstream body never shown',
    async (status, surfaced, type, message) => {
      up.respondWith(errorReply(status));
      for (const [path, body] of [
        ['/v1/chat/completions', chat('u')],
        ['/v1/embeddings', { model: 'u', input: 'x' }],
        ['/v1/responses', { model: 'u', input: 'x' }],
      ] as const) {
        const reply = await post(path, body);
        expect(reply.status).toBe(surfaced);
        expect(reply.headers.get('content-type')).toBe('application/json');
        expectContentLength(reply);
        expect(JSON.parse(reply.text)).toEqual(standard(message, type));
        expect(reply.text).not.toContain('UPSTREAM-DETAIL');
        expect(reply.text).not.toContain('sk-live');
      }
      // An upstream error is a report, not a gateway decision: not a rejection.
      expect(
        metricSum(await gateway.metrics(), 'gateway_rejections_total', {
          model: 'u',
          status: String(surfaced),
          code: '',
        }),
      ).toBe(0);
    },
  );

  it.each(ERROR_TABLE.map(([status]) => status))(
    'trusted upstream %i -> the same status, headers and body bytes',
    async (status) => {
      up.respondWith(errorReply(status));
      for (const [path, body] of [
        ['/v1/chat/completions', chat('t')],
        ['/v1/responses', { model: 't', input: 'x' }],
      ] as const) {
        const reply = await post(path, body);
        expect(reply.status).toBe(status);
        expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(reply.headers.get('x-upstream-trace')).toBe(`trace-${status}`);
        expect(reply.text).toBe(upstreamErrorBody(status));
      }
    },
  );

  it('upstream error details are kept out of info-level logs', async () => {
    up.respondWith(errorReply(402));
    await post('/v1/chat/completions', chat('u'));
    const visible = gateway.program.logs.filter((l) => l.level !== 'debug' && l.level !== 'trace');
    expect(JSON.stringify(visible)).not.toContain('UPSTREAM-DETAIL');
  });
});

// --- trust in pools ------------------------------------------------------------------------------

describe('trust follows the provider that finally served (spec 2.2 rule 1, 4.4 rule 2)', () => {
  /** First provider answers `first`, the second answers 401 with a detailed body. */
  function providers(first: number): void {
    up.respondWith((req, res) => {
      if (req.url.startsWith('/first/')) return errorReply(first)(req, res);
      return errorReply(401)(req, res);
    });
  }

  it('trusted pool, failover to a provider marked untrusted: masked', async () => {
    providers(503);
    const reply = await post('/v1/chat/completions', chat('pool-trusted'));
    expect(up.requests.map((r) => r.url)).toEqual([
      '/first/v1/chat/completions',
      '/second/v1/chat/completions',
    ]);
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.text)).toEqual(standard('Bad gateway', 'api_error'));
    expect(reply.text).not.toContain('UPSTREAM-DETAIL');
  });

  it('trusted pool, its (trusted) first provider serves the error: passed through', async () => {
    providers(401);
    const reply = await post('/v1/chat/completions', chat('pool-trusted'));
    expect(up.requests).toHaveLength(1);
    expect(reply.status).toBe(401);
    expect(reply.text).toBe(upstreamErrorBody(401));
  });

  it('untrusted pool, failover to a provider marked trusted: passed through', async () => {
    providers(503);
    const reply = await post('/v1/chat/completions', chat('pool-untrusted'));
    expect(up.requests).toHaveLength(2);
    expect(reply.status).toBe(401);
    expect(reply.text).toBe(upstreamErrorBody(401));
  });

  it('untrusted pool, its first provider serves the error: masked', async () => {
    providers(403);
    const reply = await post('/v1/chat/completions', chat('pool-untrusted'));
    expect(up.requests).toHaveLength(1);
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.text)).toEqual(standard('Bad gateway', 'api_error'));
  });

  it('the untrusted last provider answering the failover status itself is masked too', async () => {
    up.respondWith(errorReply(503));
    const reply = await post('/v1/chat/completions', chat('pool-trusted'));
    expect(up.requests).toHaveLength(2);
    expect(reply.status).toBe(503);
    expect(JSON.parse(reply.text)).toEqual(standard('Service unavailable', 'api_error'));
  });

  it('success responses of a trusted provider are still sanitized', async () => {
    up.respondWith(jsonReply(200, completion('upstream', { vendor: 1 })));
    const reply = await post('/v1/chat/completions', chat('t'));
    expect(JSON.parse(reply.text)).toEqual(completion('t'));
  });
});
