import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { OK_COMPLETION, jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import type { HostileInputResults } from './report.ts';
import {
  SOAK,
  alive,
  exchange,
  labelsOf,
  parseMetrics,
  postJson,
  rawExchange,
  rawStatus,
  writeResults,
  type Exchange,
  type RawResult,
} from './support.js';

/**
 * Hostile input at the proxy port: malformed and truncated JSON, wrong content types, huge bodies,
 * huge and many headers, invalid UTF-8, deep nesting, header injection, request smuggling, slow
 * clients. Each must get a clear error or a closed socket: never a crash, never a hang, never a 5xx
 * the gateway made up, never an upstream request the input should not cause.
 */

const HEADER_TIMEOUT_S = 1;
const REQUEST_TIMEOUT_S = 2;
const MAX_BODY = 65_536;
/** Header/request timers are enforced on a 1 s sweep: the longest a slow client may hold a socket. */
const SLOW_CLIENT_BOUND_MS = (REQUEST_TIMEOUT_S + 1) * 1000 + 1_500;
const KEY = 'sk-hostile-0b3d5e';

/** A provider that keeps each request's exact bytes and answers valid OpenAI shapes. */
let upstream: RecordingUpstream;
let plain: StartedGateway;
let strict: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, OK_COMPLETION));
  const args = [
    '--header-timeout-secs',
    String(HEADER_TIMEOUT_S),
    '--request-timeout-secs',
    String(REQUEST_TIMEOUT_S),
    '--max-body-bytes',
    String(MAX_BODY),
  ];
  [plain, strict] = await Promise.all([
    startGateway(
      {
        targets: {
          m: { url: upstream.url },
          rew: { url: upstream.url, gateway_model: 'real"\n\u2028model' },
          keyed: { url: upstream.url, keys: [KEY] },
        },
      },
      { args },
    ),
    startGateway({ strict_mode: true, targets: { m: { url: upstream.url } } }, { args }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([plain?.stop(), strict?.stop()]);
  await upstream?.close();
});

// --- bookkeeping ---------------------------------------------------------------------------------

const tally: HostileInputResults = {
  categories: {},
  inputs: 0,
  crashes: 0,
  hangs: 0,
  serverErrors: 0,
  unexpectedUpstreamRequests: 0,
};
let category = '';
let upstreamBefore = 0;

function count(n = 1): void {
  tally.inputs += n;
  tally.categories[category] = (tally.categories[category] ?? 0) + n;
}

beforeEach(() => {
  upstreamBefore = upstream.requests.length;
});

/** The inputs of this test caused no upstream request at all (checked after in-flight work settles). */
async function expectNoUpstream(): Promise<void> {
  await sleep(100);
  const extra = upstream.requests.length - upstreamBefore;
  tally.unexpectedUpstreamRequests += extra;
  expect(extra, 'upstream requests caused by hostile input').toBe(0);
}

function checkAnswer(got: Exchange, status: number, where: string): void {
  count();
  if (got.status !== null && got.status >= 500) tally.serverErrors++;
  expect(got.end, `${where}: ${got.error}`).toBe('clean');
  expect(got.status, `${where}: ${got.text.slice(0, 200)}`).toBe(status);
  // The gateway's own errors are the standard object with a JSON body.
  const body = JSON.parse(got.text) as { error?: { message?: unknown; type?: unknown } };
  expect(typeof body.error?.message, where).toBe('string');
}

function checkRaw(result: RawResult, statuses: readonly number[], where: string): void {
  count();
  if (result.hung) tally.hangs++;
  expect(result.hung, `${where}: the connection was left open`).toBe(false);
  expect(statuses, `${where}: ${result.text.slice(0, 120)}`).toContain(rawStatus(result.text));
}

const post = (
  g: StartedGateway,
  body: string | Buffer,
  headers: Record<string, string> = {},
  path = '/v1/chat/completions',
) =>
  exchange(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

const rawRequest = (head: string[], body = ''): string => `${head.join('\r\n')}\r\n\r\n${body}`;

// --- the cases -----------------------------------------------------------------------------------

describe('malformed and truncated JSON', () => {
  beforeEach(() => {
    category = 'malformed JSON';
  });

  it('gets 400 (or the status of what it names) and reaches no provider', async () => {
    const cases: [body: string, status: number, strictStatus: number][] = [
      ['{', 400, 400],
      ['{"model":"m",', 400, 400],
      ['{"model":"m","messages":[}', 400, 400],
      ['{"model": "m" "messages": []}', 400, 400],
      ['{"model":"m"}}', 400, 400],
      ['nul', 400, 400],
      ['\u0000', 400, 400],
      ['[]', 400, 400],
      ['"m"', 400, 400],
      ['123', 400, 400],
      ['null', 400, 400],
      ['{"model":null}', 400, 400],
      ['{"model":123,"messages":[]}', 400, 400],
      ['{"model":["m"],"messages":[]}', 400, 400],
      ['{"model":{"$ne":""},"messages":[]}', 400, 400],
      ['{"model":"__proto__","messages":[]}', 404, 404],
      ['{"model":"constructor","messages":[]}', 404, 404],
      // Duplicate keys: the last wins, and it names a keyed target: no key, no upstream.
      ['{"model":"m","model":"keyed","messages":[]}', 401, 404],
    ];
    for (const [body, status, strictStatus] of cases) {
      checkAnswer(await post(plain, body), status, `plain ${body}`);
      checkAnswer(await post(strict, body), strictStatus, `strict ${body}`);
    }
    await expectNoUpstream();
  });

  it('a body shorter than its Content-Length: closed by the client, or timed out with 408; nothing forwarded', async () => {
    const head = [
      'POST /v1/chat/completions HTTP/1.1',
      'Host: x',
      'Content-Type: application/json',
      'Content-Length: 60',
    ];
    const partial = '{"model":"m","messages":[';
    for (const g of [plain, strict]) {
      // The client gives up after a partial body: the gateway drops it.
      await rawExchange(g.port, [rawRequest(head, partial)], { timeoutMs: 300 });
      count();
      // The client waits: the request timeout answers 408 and closes.
      const waited = await rawExchange(g.port, [rawRequest(head, partial)], {
        timeoutMs: SLOW_CLIENT_BOUND_MS,
      });
      checkRaw(waited, [408], 'truncated body');
      expect(waited.closed).toBe(true);
    }
    await expectNoUpstream();
  });
});

describe('wrong content types', () => {
  beforeEach(() => {
    category = 'content types';
  });

  it('are not read as JSON by the non-strict gateway, refused on strict /v1/responses', async () => {
    const valid = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'image/png',
    ]) {
      // Non-strict: only a JSON content type (or none) makes the body a JSON document to route by;
      // another one is refused for what it is.
      checkAnswer(await post(plain, valid, { 'content-type': type }), 415, `plain ${type}`);
      checkAnswer(
        await post(
          strict,
          JSON.stringify({ model: 'm', input: 'hi' }),
          { 'content-type': type },
          '/v1/responses',
        ),
        400,
        `strict responses ${type}`,
      );
    }
    checkAnswer(
      await post(plain, 'model=m&messages=x', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'form',
    );
    await expectNoUpstream();
  });
});

describe('huge bodies', () => {
  beforeEach(() => {
    category = 'huge bodies';
  });

  it('get 413 before the upload is read, and the connection is closed', async () => {
    for (const g of [plain, strict]) {
      // Declared too large: answered at once, without waiting for (or reading) the body.
      const declared = await rawExchange(
        g.port,
        [
          rawRequest([
            'POST /v1/chat/completions HTTP/1.1',
            'Host: x',
            'Content-Type: application/json',
            'Content-Length: 10000000',
          ]),
        ],
        { timeoutMs: 5_000 },
      );
      checkRaw(declared, [413], 'declared 10 MB');
      expect(declared.closed).toBe(true);
      // Chunked, no declared size: refused at the first byte past the limit.
      const chunk = Buffer.alloc(16_384, 0x61);
      const parts: (string | Buffer)[] = [
        rawRequest([
          'POST /v1/chat/completions HTTP/1.1',
          'Host: x',
          'Content-Type: application/json',
          'Transfer-Encoding: chunked',
        ]),
      ];
      for (let i = 0; i < 64; i++) parts.push(`4000\r\n`, chunk, '\r\n');
      const chunked = await rawExchange(g.port, parts, { timeoutMs: 5_000, gapMs: 2 });
      checkRaw(chunked, [413], 'chunked 1 MB');
      expect(chunked.closed).toBe(true);
      checkAnswer(await post(g, Buffer.alloc(MAX_BODY + 1, 0x20)), 413, 'one byte over');
    }
    await expectNoUpstream();
  });

  it('a body of exactly the limit is forwarded whole', async () => {
    const head = '{"model":"m","messages":[{"role":"user","content":"';
    const tail = '"}]}';
    const body = head + 'x'.repeat(MAX_BODY - head.length - tail.length) + tail;
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    const got = await post(plain, body);
    count();
    expect(got.status).toBe(200);
    expect(upstream.requests.at(-1)!.bytes.equals(Buffer.from(body))).toBe(true);
  });
});

describe('huge and many headers', () => {
  beforeEach(() => {
    category = 'headers';
  });

  it('get 431 and a closed connection; a long URL too', async () => {
    const base = ['GET /v1/anything HTTP/1.1', 'Host: x', 'model-override: m'];
    const many = (n: number) => Array.from({ length: n }, (_, i) => `x-h${i}: v`);
    for (const g of [plain, strict]) {
      checkRaw(
        await rawExchange(g.port, [rawRequest([...base, `x-big: ${'a'.repeat(40_000)}`])]),
        [431],
        'one 40 KB header',
      );
      checkRaw(await rawExchange(g.port, [rawRequest([...base, ...many(300)])]), [431], '300 headers');
      checkRaw(await rawExchange(g.port, [rawRequest([...base, ...many(3_000)])]), [431], '3000 headers');
      checkRaw(
        await rawExchange(g.port, [
          rawRequest([`GET /v1/${'a'.repeat(40_000)} HTTP/1.1`, 'Host: x', 'model-override: m']),
        ]),
        [414, 431],
        '40 KB URL',
      );
    }
    await expectNoUpstream();
  });

  it('many headers under the limits are forwarded, hop-by-hop and gateway headers stripped', async () => {
    const head = [
      'GET /v1/anything HTTP/1.1',
      'Host: evil.example',
      'model-override: m',
      'Authorization: Bearer client-secret',
      'Connection: x-hop, close',
      'x-hop: must-not-pass',
      'Proxy-Authorization: Basic c2VjcmV0',
      'TE: trailers',
      'Upgrade: websocket',
      'Keep-Alive: timeout=1',
      ...Array.from({ length: 150 }, (_, i) => `x-h${i}: v${i}`),
    ];
    const result = await rawExchange(plain.port, [rawRequest(head)]);
    count();
    expect(rawStatus(result.text)).toBe(200);
    const received = upstream.requests.at(-1)!;
    expect(received.headers['x-h149']).toBe('v149');
    for (const name of [
      'model-override',
      'authorization',
      'x-hop',
      'proxy-authorization',
      'te',
      'upgrade',
      'keep-alive',
    ]) {
      expect(received.headers[name], name).toBeUndefined();
    }
    expect(received.headers.host).toBe(new URL(upstream.url).host);
  });
});

describe('invalid UTF-8', () => {
  beforeEach(() => {
    category = 'invalid UTF-8';
  });

  const invalid = Buffer.concat([
    Buffer.from('{"model":"m","messages":[{"role":"user","content":"'),
    Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80, 0xf0, 0x28, 0x8c, 0x28]),
    Buffer.from('"}]}'),
  ]);

  it('strict: 400 and nothing forwarded', async () => {
    checkAnswer(await post(strict, invalid), 400, 'strict invalid UTF-8');
    await expectNoUpstream();
  });

  it('non-strict: the body is forwarded byte for byte; an invalid model name is a plain 404', async () => {
    const got = await post(plain, invalid);
    count();
    expect(got.status).toBe(200);
    expect(upstream.requests.at(-1)!.bytes.equals(invalid)).toBe(true);
    const badName = Buffer.concat([
      Buffer.from('{"model":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","messages":[]}'),
    ]);
    upstreamBefore = upstream.requests.length;
    checkAnswer(await post(plain, badName), 404, 'invalid UTF-8 model name');
    await expectNoUpstream();
  });
});

describe('deeply nested JSON', () => {
  beforeEach(() => {
    category = 'deep nesting';
  });

  const depth = 5_000;
  const deepArray = '['.repeat(depth) + ']'.repeat(depth);
  const deepObject = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

  it('forwarded unchanged by a non-strict target that does not rewrite the body', async () => {
    const body = `{"model":"m","messages":[],"x":${deepArray},"y":${deepObject}}`;
    const got = await post(plain, body);
    count();
    expect(got.status).toBe(200);
    expect(upstream.requests.at(-1)!.body).toBe(body);
  });

  it('strict: refused where the schema has no place for it, forwarded where it has', async () => {
    checkAnswer(
      await post(strict, `{"model":"m","messages":[],"x":${deepArray}}`),
      400,
      'unknown deep field',
    );
    checkAnswer(
      await post(strict, `{"model":"m","messages":[{"role":"user","content":${deepObject}}]}`),
      400,
      'deep content',
    );
    checkAnswer(await post(strict, deepArray), 400, 'deep array body');
    checkAnswer(await post(plain, deepArray), 400, 'deep array body, non-strict');
    await expectNoUpstream();
    const tools = `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"p":${deepObject}}}}]}`;
    const got = await post(strict, tools);
    count();
    expect(got.status).toBe(200);
    expect(upstream.requests.at(-1)!.body).toBe(tools);
  });
});

describe('header injection', () => {
  beforeEach(() => {
    category = 'header injection';
  });

  it('through model-override: CR, LF, NUL and folding are refused by the parser; the header never goes upstream', async () => {
    for (const g of [plain, strict]) {
      for (const value of ['m\rX-Injected: 1', 'm\nX-Injected: 1', 'm\u0000', 'm\r\n folded']) {
        const result = await rawExchange(g.port, [
          rawRequest(
            [
              'POST /v1/chat/completions HTTP/1.1',
              'Host: x',
              `model-override: ${value}`,
              'Content-Length: 2',
            ],
            '{}',
          ),
        ]);
        checkRaw(result, [400], JSON.stringify(value));
      }
    }
    await expectNoUpstream();
  });

  it('through model-override: any other text is a JSON-escaped 404, never a routing or upstream effect', async () => {
    for (const value of ['m", "model": "keyed', 'm\tx', '../m', 'm?x=1', '%6d', 'm'.repeat(10_000)]) {
      const got = await exchange(`${plain.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'model-override': value, 'content-type': 'application/json' },
        body: '{"model":"m","messages":[]}',
      });
      checkAnswer(got, 404, `override ${value.slice(0, 20)}`);
    }
    await expectNoUpstream();
  });

  it('through values written upstream: gateway_model is JSON-escaped into the body', async () => {
    const got = await post(plain, JSON.stringify({ model: 'rew', messages: [] }));
    count();
    expect(got.status).toBe(200);
    const sent = JSON.parse(upstream.requests.at(-1)!.body) as { model: string };
    expect(sent.model).toBe('real"\n\u2028model');
    expect(Object.keys(upstream.requests.at(-1)!.headers)).not.toContain('x-injected');
  });
});

describe('request smuggling', () => {
  beforeEach(() => {
    category = 'smuggling';
  });

  const chat = '{"model":"m","messages":[]}';

  it('conflicting framing is refused with 400 and a closed connection; nothing reaches the provider', async () => {
    const post = 'POST /v1/chat/completions HTTP/1.1';
    const attempts: [string, string[], string][] = [
      [
        'CL and TE',
        [post, 'Host: x', `Content-Length: ${chat.length}`, 'Transfer-Encoding: chunked'],
        `0\r\n\r\n${chat}`,
      ],
      [
        'TE and CL',
        [post, 'Host: x', 'Transfer-Encoding: chunked', 'Content-Length: 4'],
        `${chat.length.toString(16)}\r\n${chat}\r\n0\r\n\r\n`,
      ],
      ['two different CL', [post, 'Host: x', 'Content-Length: 5', `Content-Length: ${chat.length}`], chat],
      ['TE xchunked', [post, 'Host: x', 'Transfer-Encoding: xchunked'], `0\r\n\r\n`],
      [
        'TE with a space before the colon',
        [post, 'Host: x', 'Transfer-Encoding : chunked', 'Content-Length: 3'],
        'abc',
      ],
      ['TE chunked, identity', [post, 'Host: x', 'Transfer-Encoding: chunked, identity'], `0\r\n\r\n`],
      ['bad chunk size', [post, 'Host: x', 'Transfer-Encoding: chunked'], `zz\r\n${chat}\r\n0\r\n\r\n`],
      [
        'chunk size overflow',
        [post, 'Host: x', 'Transfer-Encoding: chunked'],
        `ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n`,
      ],
      ['negative CL', [post, 'Host: x', 'Content-Length: -1'], chat],
      ['CL with a sign', [post, 'Host: x', `Content-Length: +${chat.length}`], chat],
      [
        'HTTP/1.0 with TE',
        [
          'POST /v1/chat/completions HTTP/1.0',
          'Host: x',
          'Transfer-Encoding: chunked',
          `Content-Length: ${chat.length}`,
        ],
        chat,
      ],
    ];
    for (const g of [plain, strict]) {
      for (const [name, head, body] of attempts) {
        const result = await rawExchange(g.port, [rawRequest([...head, 'model-override: m'], body)]);
        checkRaw(result, [400, 501], name);
        expect(result.closed, name).toBe(true);
      }
    }
    await expectNoUpstream();
  });

  it('bytes after a body are the next request on the client connection, never a second upstream request', async () => {
    // The body embeds a complete request, and another follows it: the gateway forwards exactly one
    // request with exactly the declared body, re-framed by its own client.
    const embedded = JSON.stringify({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: 'x\r\n\r\nPOST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}',
        },
      ],
    });
    const next = rawRequest(['GET /v1/models HTTP/1.1', 'Host: x', 'Connection: close']);
    const result = await rawExchange(plain.port, [
      rawRequest(
        [
          'POST /v1/chat/completions HTTP/1.1',
          'Host: x',
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(embedded)}`,
        ],
        embedded,
      ) + next,
    ]);
    count();
    expect(result.closed).toBe(true);
    expect(result.text.match(/HTTP\/1\.1 200 OK\r\n/g), result.text).toHaveLength(2);
    expect(result.text).toContain('"object":"list"');
    expect(upstream.requests.length - upstreamBefore).toBe(1);
    const forwarded = upstream.requests.at(-1)!;
    expect(forwarded.body).toBe(embedded);
    expect(forwarded.headers['content-length']).toBe(String(Buffer.byteLength(embedded)));
    expect(forwarded.headers['transfer-encoding']).toBeUndefined();
  });
});

describe('slow clients', () => {
  beforeEach(() => {
    category = 'slow clients';
  });

  it('slowloris headers, a trickled body and an idle connection are closed in bounded time while others are served', async () => {
    const clients = SOAK ? 200 : 30;
    const trickle = (i: number): (string | Buffer)[] => {
      const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-slow-${i}: ${'a'.repeat(200)}`;
      return [...head].map((c) => c);
    };
    const slowHeaders = Array.from({ length: clients }, (_, i) =>
      rawExchange(plain.port, trickle(i), { timeoutMs: SLOW_CLIENT_BOUND_MS + 2_000, gapMs: 100 }),
    );
    const slowBody = rawExchange(
      plain.port,
      [
        rawRequest([
          'POST /v1/chat/completions HTTP/1.1',
          'Host: x',
          'Content-Type: application/json',
          'Content-Length: 1000',
        ]),
        ...'{"model":"m","messages":[]'.split(''),
      ],
      { timeoutMs: SLOW_CLIENT_BOUND_MS + 2_000, gapMs: 150 },
    );
    const idle = rawExchange(plain.port, [], { timeoutMs: SLOW_CLIENT_BOUND_MS + 2_000 });

    // Meanwhile the gateway answers everyone else promptly.
    for (let i = 0; i < 5; i++) {
      const got = await postJson(
        plain.url,
        '/v1/chat/completions',
        { model: 'm', messages: [] },
        {},
        { giveUpMs: 3_000 },
      );
      expect(got.status).toBe(200);
      await sleep(200);
    }
    const results = await Promise.all([...slowHeaders, slowBody, idle]);
    for (const [i, result] of results.entries()) {
      count();
      if (result.hung) tally.hangs++;
      expect(result.closed, `slow client ${i} still open`).toBe(true);
      expect(result.ms, `slow client ${i}`).toBeLessThan(SLOW_CLIENT_BOUND_MS + 1_000);
      // Whatever reached a slow client is the 408, never another answer.
      if (result.text.length > 0) expect(rawStatus(result.text), `slow client ${i}`).toBe(408);
    }
    // The server writes the 408 and closes at once. A client still trickling bytes can race that
    // close: bytes arriving at a closed socket make the kernel answer with a reset, and a reset can
    // drop the 408 from the client's receive queue before the client reads it. The idle client
    // writes nothing and must see its 408; nearly all the trickling ones do.
    expect(rawStatus(results.at(-1)!.text), 'idle client').toBe(408);
    const answered = results.filter((r) => rawStatus(r.text) === 408).length;
    expect(answered).toBeGreaterThanOrEqual(Math.ceil(results.length * 0.9));
    expect(upstream.requests.length - upstreamBefore).toBe(5);
  });
});

describe('after all of it', () => {
  it('both gateways are alive, healthy, and logged no unexpected error', async () => {
    for (const g of [plain, strict]) {
      const running = alive(g.program.proc.pid);
      if (!running) tally.crashes++;
      expect(running).toBe(true);
      expect((await exchange(`${g.adminUrl}/healthz`)).status).toBe(200);
      expect(
        (
          await postJson(g.url, '/v1/chat/completions', {
            model: 'm',
            messages: [{ role: 'user', content: 'hi' }],
          })
        ).status,
      ).toBe(200);
      expect(g.program.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
      // Metric labels stay bounded by configuration: no alias a client made up became a series.
      for (const key of parseMetrics(await (await fetch(`${g.adminUrl}/metrics`)).text()).keys()) {
        const model = labelsOf(key).model;
        if (key.startsWith('gateway_') && model !== undefined)
          expect(['', 'm', 'rew', 'keyed'], key).toContain(model);
      }
    }
    expect(tally.serverErrors).toBe(0);
    expect(tally.hangs).toBe(0);
    writeResults('hostile-input', tally);
  });
});
