import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat, readBody } from '../helpers/client.js';
import {
  completion,
  jsonReply,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';

/**
 * Standalone response sanitization (`sanitize_response: true` on a non-strict gateway, spec 4.6,
 * 7.3) end to end, and its precedence below strict mode (4.5).
 */

let up: RecordingUpstream;
let gateway: StartedGateway;
let strictGateway: StartedGateway;
let limited: StartedGateway;

beforeAll(async () => {
  up = await startUpstream();
  const targets = {
    san: { url: up.url, sanitize_response: true },
    plain: { url: up.url },
    // A pool that can fail over reads a raw stream ahead to its first data frame.
    tagged: {
      strategy: 'priority',
      fallback: { on_status: [503], aimd: false },
      providers: [
        { url: up.url, response_headers: { 'x-served-by': 'edge-a' } },
        { url: `${up.url}/second` },
      ],
    },
    // Sanitization, like trust, follows the provider that served: the first entry fails over.
    'pool-san-first': {
      sanitize_response: true,
      strategy: 'priority',
      fallback: { on_status: [503], aimd: false },
      providers: [{ url: `${up.url}/first` }, { url: `${up.url}/second`, sanitize_response: false }],
    },
    'pool-san-second': {
      strategy: 'priority',
      fallback: { on_status: [503], aimd: false },
      providers: [{ url: `${up.url}/first` }, { url: `${up.url}/second`, sanitize_response: true }],
    },
  };
  [gateway, strictGateway, limited] = await Promise.all([
    startGateway({ targets }),
    startGateway({ strict_mode: true, targets: { san: { url: up.url, sanitize_response: true } } }),
    startGateway({ targets }, { args: ['--sse-buffer-limit', '64'] }),
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), strictGateway?.stop(), limited?.stop()]);
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
  text: string;
  failed: boolean;
}

async function call(
  target: StartedGateway,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(`${target.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    redirect: 'manual',
  });
  const { bytes, failed } = await readBody(response);
  return { status: response.status, headers: response.headers, text: bytes.toString('utf8'), failed };
}

/** A provider answer full of engine-specific fields. */
function engineCompletion(model: string) {
  return completion(model, {
    kv_transfer_params: { remote_host: '10.0.0.7' },
    prompt_logprobs: null,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'hello', reasoning_content: 'PRIVATE-THOUGHTS' },
        finish_reason: 'stop',
        stop_reason: null,
        logprobs: null,
      },
    ],
  });
}

const chunkObject = (content: string, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-2',
  object: 'chat.completion.chunk',
  created: 2,
  model: 'upstream-model',
  choices: [{ index: 0, delta: { content }, finish_reason: null, ...extra }],
});

function sse(parts: readonly string[], gapMs: number): UpstreamHandler {
  return async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const part of parts) {
      if (res.destroyed) return;
      res.write(part);
      await sleep(gapMs);
    }
    res.end();
  };
}

function dataEvents(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((b) => b.length > 0)
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      const data = block.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

const REJECTED = {
  error: {
    message: 'The upstream provider rejected the request.',
    type: 'invalid_request_error',
    param: null,
    code: 'upstream_error',
  },
};
const INTERNAL = { error: { message: 'Internal server error', type: 'api_error', param: null, code: null } };

// --- success bodies ------------------------------------------------------------------------------

describe('sanitize_response on chat completions (spec 4.6)', () => {
  it('non-streaming: provider fields removed, model rewritten, exact Content-Length, no stale ETag', async () => {
    up.respondWith(jsonReply(200, engineCompletion('vendor/model-70b'), { etag: '"upstream-v1"' }));
    const reply = await call(gateway, '/v1/chat/completions', chat('san'));
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(reply.headers.get('content-length')).toBe(String(Buffer.byteLength(reply.text)));
    // The body is not the provider's: its validator would name the wrong representation.
    expect(reply.headers.get('etag')).toBeNull();
    expect(JSON.parse(reply.text)).toEqual(completion('san'));
    for (const leaked of [
      'PRIVATE-THOUGHTS',
      'kv_transfer_params',
      '10.0.0.7',
      'vendor/model',
      'stop_reason',
    ])
      expect(reply.text).not.toContain(leaked);
  });

  it('streaming: every chunk sanitized, comments dropped, [DONE] kept; the SDK consumes it', async () => {
    const frames = [
      ': keep-alive\n\n',
      `data: ${JSON.stringify(chunkObject('Hel', { stop_reason: null }))}\n\n`,
      `data: ${JSON.stringify({ ...chunkObject('lo'), choices: [{ index: 0, delta: { content: 'lo', reasoning_content: 'PRIVATE-THOUGHTS' }, finish_reason: null }] })}\n\n`,
      'data: [DONE]\n\n',
    ];
    up.respondWith(sse(frames, 5));
    const reply = await call(gateway, '/v1/chat/completions', chat('san', { stream: true }));
    expect(reply.failed).toBe(false);
    expect(reply.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(dataEvents(reply.text)).toEqual([
      { ...chunkObject('Hel'), model: 'san' },
      { ...chunkObject('lo'), model: 'san' },
      '[DONE]',
    ]);
    expect(reply.text).not.toContain('PRIVATE-THOUGHTS');
    expect(reply.text).not.toContain('keep-alive');

    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'san',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const received = [];
    for await (const chunk of stream) received.push(chunk);
    expect(received.map((c) => c.model)).toEqual(['san', 'san']);
    expect(received.map((c) => c.choices[0]!.delta.content).join('')).toBe('Hello');
  });

  it('a stream that arrives in one piece with its end is delivered whole and ends cleanly', async () => {
    const body = `data: ${JSON.stringify(chunkObject('one'))}\n\ndata: [DONE]\n\n`;
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('san', { stream: true }));
    expect(reply.failed).toBe(false);
    expect(dataEvents(reply.text)).toEqual([{ ...chunkObject('one'), model: 'san' }, '[DONE]']);
  });

  it('a target without sanitize_response passes the same answer through unchanged', async () => {
    const body = JSON.stringify(engineCompletion('vendor/model-70b'));
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    expect((await call(gateway, '/v1/chat/completions', chat('plain'))).text).toBe(body);
  });

  it.each([
    ['/v1/embeddings', { model: 'san', input: 'x' }],
    ['/v1/completions', { model: 'san', prompt: 'x' }],
    ['/v1/responses', { model: 'san', input: 'x' }],
  ])('%s is not covered: the provider answer passes through untouched', async (path, body) => {
    const raw = `{"object":"list","model":"vendor/x","data":[],"kv_transfer_params":{"a":1} }`;
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(raw);
    });
    const reply = await call(gateway, path, body);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(raw);
    expect(reply.headers.get('x-upstream')).toBe('yes');
  });

  it('a body-less request on another path is forwarded (wildcard routing) and untouched', async () => {
    up.respondWith(jsonReply(200, { object: 'list', data: [{ id: 'file-1', vendor: true }] }));
    const reply = await call(gateway, '/v1/files?purpose=batch', undefined, { 'model-override': 'san' });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text)).toEqual({ object: 'list', data: [{ id: 'file-1', vendor: true }] });
    expect(up.requests[0]).toMatchObject({ method: 'GET', url: '/v1/files?purpose=batch' });
  });

  it('no request validation: unknown and provider-native fields are forwarded unchanged', async () => {
    const raw = JSON.stringify(
      chat('san', { temprature: 2, chat_template_kwargs: { enable_thinking: true }, guided_json: {} }),
    );
    const reply = await call(gateway, '/v1/chat/completions', raw);
    expect(reply.status).toBe(200);
    expect(up.requests).toHaveLength(1);
    expect(up.requests[0]!.body).toBe(raw);
  });

  it('a 200 body that is not a chat completion is a 502 standard error, never the raw body', async () => {
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>RAW-BODY</html>');
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('san'));
    expect(reply.status).toBe(502);
    expect(reply.text).not.toContain('RAW-BODY');
    expect(JSON.parse(reply.text)).toMatchObject({ error: { type: 'api_error', param: null } });
  });

  it('an error inside a 200 body: the replacement object under the status its code names', async () => {
    up.respondWith(jsonReply(200, { error: { message: 'RAW quota detail', code: 'rate_limit_exceeded' } }));
    const reply = await call(gateway, '/v1/chat/completions', chat('san'));
    expect(reply.status).toBe(429);
    expect(JSON.parse(reply.text)).toEqual(REJECTED);
  });

  it('an error event inside a stream is replaced, and no [DONE] follows it', async () => {
    up.respondWith(
      sse(
        [
          `data: ${JSON.stringify(chunkObject('a'))}\n\n`,
          `data: ${JSON.stringify({ error: { message: 'RAW engine detail', code: 503 } })}\n\n`,
          'data: [DONE]\n\n',
        ],
        5,
      ),
    );
    const reply = await call(gateway, '/v1/chat/completions', chat('san', { stream: true }));
    expect(reply.failed).toBe(false);
    expect(dataEvents(reply.text)).toEqual([{ ...chunkObject('a'), model: 'san' }, INTERNAL]);
    expect(reply.text).not.toContain('RAW engine detail');
  });

  it('a provider stream cut mid-way ends the client stream with a transport error', async () => {
    up.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunkObject('a'))}\n\n`);
      await sleep(30);
      res.socket?.destroy();
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('san', { stream: true }));
    expect(reply.failed).toBe(true);
    expect(dataEvents(reply.text)).toEqual([{ ...chunkObject('a'), model: 'san' }]);
  });

  it('--sse-buffer-limit applies to standalone sanitization: an oversized unfinished event is a body error', async () => {
    const large = `data: ${JSON.stringify(chunkObject('z'.repeat(300)))}\n\n`;
    up.respondWith(
      sse([`data: ${JSON.stringify(chunkObject('a'))}\n\n`, large.slice(0, 120), large.slice(120)], 40),
    );
    const reply = await call(limited, '/v1/chat/completions', chat('san', { stream: true }));
    expect(reply.failed).toBe(true);
    expect(dataEvents(reply.text)).toEqual([{ ...chunkObject('a'), model: 'san' }]);
  });
});

describe('--sse-buffer-limit on a raw stream', () => {
  it('an oversized first event cuts the stream after the same head as any committed response', async () => {
    up.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'provider-req-7' });
      res.write(`data: {"pad":"${'x'.repeat(200)}`);
    });
    const reply = await call(limited, '/v1/chat/completions', chat('tagged', { stream: true }), {
      'x-request-id': 'client-req-1',
    });
    expect(reply.status).toBe(200);
    expect(reply.failed).toBe(true);
    expect(reply.text).toBe('');
    expect(reply.headers.get('x-request-id')).toBe('client-req-1');
    expect(reply.headers.get('x-upstream-request-id')).toBe('provider-req-7');
    expect(reply.headers.get('x-served-by')).toBe('edge-a');
    expect(reply.headers.get('content-type')).toBe('text/event-stream');
  });
});

// --- error bodies --------------------------------------------------------------------------------

describe('upstream errors under sanitize_response (spec 4.6, 7.3)', () => {
  const detail = (status: number) =>
    `{"error":{"message":"UPSTREAM-DETAIL ${status} for key sk-live-9","code":"x"}}`;

  it.each([400, 401, 402, 403, 404, 408, 413, 422, 429, 451])(
    '%i: status preserved, body replaced by the fixed rejection object',
    async (status) => {
      up.respondWith((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(detail(status));
      });
      for (const stream of [false, true]) {
        const reply = await call(gateway, '/v1/chat/completions', chat('san', { stream }));
        expect(reply.status).toBe(status);
        expect(reply.headers.get('content-type')).toBe('application/json');
        expect(reply.text).toBe(JSON.stringify(REJECTED));
        expect(reply.headers.get('content-length')).toBe(String(reply.text.length));
      }
    },
  );

  it.each([500, 501, 502, 503, 504, 529, 302])(
    '%i: status preserved, body replaced by the generic internal-error object',
    async (status) => {
      up.respondWith((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json', location: `${up.url}/elsewhere` });
        res.end(detail(status));
      });
      const reply = await call(gateway, '/v1/chat/completions', chat('san'));
      expect(reply.status).toBe(status);
      expect(JSON.parse(reply.text)).toEqual(INTERNAL);
      expect(reply.text).not.toContain('UPSTREAM-DETAIL');
    },
  );

  it('a target without sanitize_response passes error bodies through', async () => {
    up.respondWith((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(detail(401));
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('plain'));
    expect(reply.status).toBe(401);
    expect(reply.text).toBe(detail(401));
  });

  it('an error on another path of a sanitizing target is not replaced', async () => {
    up.respondWith((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(detail(400));
    });
    const reply = await call(gateway, '/v1/embeddings', { model: 'san', input: 'x' });
    expect(reply.status).toBe(400);
    expect(reply.text).toBe(detail(400));
  });
});

// --- routing and precedence ----------------------------------------------------------------------

describe('who decides: the serving provider, and strict mode over sanitize_response', () => {
  const unauthorized = (_req: unknown, res: ServerResponse): void => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"UPSTREAM-DETAIL revoked key"}}');
  };

  it('model-override naming a sanitizing alias sanitizes, whatever the body model says', async () => {
    up.respondWith(jsonReply(200, engineCompletion('vendor/x')));
    const reply = await call(gateway, '/v1/chat/completions', chat('plain'), { 'model-override': 'san' });
    expect(JSON.parse(reply.text)).toEqual(completion('san'));

    up.respondWith(unauthorized);
    const error = await call(gateway, '/v1/chat/completions', chat('plain'), { 'model-override': 'san' });
    expect(error.status).toBe(401);
    expect(JSON.parse(error.text)).toEqual(REJECTED);
  });

  it('failover from a sanitizing provider to one that is not: the served answer is raw', async () => {
    up.respondWith((req, res) => {
      if (req.url.startsWith('/first/')) {
        res.writeHead(503).end();
        return;
      }
      unauthorized(req, res);
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('pool-san-first'));
    expect(up.requests.map((r) => r.url)).toEqual([
      '/first/v1/chat/completions',
      '/second/v1/chat/completions',
    ]);
    expect(reply.status).toBe(401);
    expect(reply.text).toContain('UPSTREAM-DETAIL');
  });

  it('failover to a provider with sanitize_response: the served answer is sanitized', async () => {
    up.respondWith((req, res) => {
      if (req.url.startsWith('/first/')) {
        res.writeHead(503).end();
        return;
      }
      unauthorized(req, res);
    });
    const reply = await call(gateway, '/v1/chat/completions', chat('pool-san-second'));
    expect(up.requests).toHaveLength(2);
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.text)).toEqual(REJECTED);
  });

  it('strict mode wins: masking and the standard table instead of the standalone bodies', async () => {
    up.respondWith(unauthorized);
    const masked = await call(strictGateway, '/v1/chat/completions', chat('san'));
    expect(masked.status).toBe(502);
    expect(JSON.parse(masked.text)).toEqual({
      error: { message: 'Bad gateway', type: 'api_error', param: null, code: null },
    });

    up.respondWith((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"UPSTREAM-DETAIL"}}');
    });
    const rejected = await call(strictGateway, '/v1/chat/completions', chat('san'));
    expect(rejected.status).toBe(400);
    expect(JSON.parse(rejected.text)).toEqual({
      error: { message: 'Invalid request', type: 'invalid_request_error', param: null, code: null },
    });

    // Strict request validation applies too, which standalone sanitization never does.
    up.requests.length = 0;
    const invalid = await call(strictGateway, '/v1/chat/completions', chat('san', { temprature: 1 }));
    expect(invalid.status).toBe(400);
    expect(up.requests).toHaveLength(0);

    // And strict covers the other endpoints standalone sanitization leaves alone.
    up.respondWith(
      jsonReply(200, {
        object: 'list',
        model: 'vendor',
        data: [{ object: 'embedding', index: 0, embedding: [1] }],
        extra: 1,
      }),
    );
    const embedded = await call(strictGateway, '/v1/embeddings', { model: 'san', input: 'x' });
    expect(JSON.parse(embedded.text)).toEqual({
      object: 'list',
      model: 'san',
      data: [{ object: 'embedding', index: 0, embedding: [1] }],
    });
  });
});
