import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { OK_COMPLETION, jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { startSim } from '../helpers/sim.js';
import { latency, postJson, rawExchange, scrape, simCapacity, simModels, sumOf, waitFor } from './support.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * Regressions found by the reliability suites: each case once failed, and each fix is asserted here
 * (deep bodies, header-unsafe keys, keys echoed into logs, engine error frames in non-strict pools,
 * upstream work after the client left, heads that never left the gateway).
 */

let up: RecordingUpstream;
const gateways: StartedGateway[] = [];

beforeAll(async () => {
  up = await startUpstream(jsonReply(200, OK_COMPLETION));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await up?.close();
});

async function gateway(config: unknown, env: Record<string, string> = {}): Promise<StartedGateway> {
  const g = await startGateway(config, { env });
  gateways.push(g);
  return g;
}

const depth = 10_000;
const deep = '['.repeat(depth) + ']'.repeat(depth);

describe('a deeply nested body on a target that rewrites the body is refused cleanly', () => {
  // bodyFor() (src/gateway/pipeline/attempt.ts) re-serializes the parsed body with JSON.stringify,
  // which is recursive: ~20 KB of nesting throws RangeError inside send(), outside its try. The
  // exception escapes dispatch(): the client gets 500 internal_error, and the attempt's provider
  // grants (taken in dispatch) and share-controller probe are never released.
  it('is a 400, not a 500, and leaks no provider permit or share-controller slot', async () => {
    const g = await gateway({
      targets: {
        p: {
          strategy: 'priority',
          fallback: { aimd: {} },
          providers: [
            {
              url: up.url,
              name: 'a',
              gateway_model: 'real',
              concurrency_limit: { max_concurrent_requests: 1 },
            },
            { url: up.url, name: 'b' },
          ],
        },
      },
    });
    const hostile = await postJson(g.url, '/v1/chat/completions', `{"model":"p","messages":[],"x":${deep}}`);
    expect.soft(hostile.status).toBe(400);
    for (let i = 0; i < 3; i++) {
      const next = await postJson(g.url, '/v1/chat/completions', { model: 'p', messages: [] });
      expect(next.status, next.text).toBe(200);
    }
    await sleep(100);
    expect(sumOf(await scrape(g.adminUrl), 'gateway_aimd_in_flight', { model: 'p' })).toBe(0);
    expect(g.program.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('strict mode: a deep value where the schema allows any JSON (tool parameters) is not a 500', async () => {
    const g = await gateway({ strict_mode: true, targets: { rew: { url: up.url, gateway_model: 'real' } } });
    const tools = `{"model":"rew","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"p":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}}]}`;
    const got = await postJson(g.url, '/v1/chat/completions', tools);
    expect(got.status).toBeLessThan(500);
  });
});

describe('gateway_key refuses line breaks and NUL', () => {
  // src/gateway/config/schema/target.ts: `gateway_key` is NonEmptyString, while the header prefix is
  // checked for line breaks and NUL. Such a key can never be sent (undici refuses the header), so
  // every request to the target fails with 503 "upstream provider could not be reached" and
  // `gateway_upstream_errors_total{reason="UND_ERR_INVALID_ARG"}`: a configuration error reported as
  // an outage. `gateway validate` says "valid".
  it.each([
    ['CRLF', 'sk-abc\r\nX-Injected: 1'],
    ['LF', 'sk-abc\nX-Injected: 1'],
    ['NUL', 'sk-abc\u0000def'],
  ])('%s: refused by `gateway validate` with the field path', (_name, key) => {
    const dir = tempDir('pending-');
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ targets: { a: { url: up.url, gateway_key: key } } }));
    const result = spawnSync(process.execPath, [join(ROOT, 'bin/gateway.js'), 'validate', file], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(1);
    expect(result.stdout + result.stderr).toContain('targets.a.gateway_key');
  });
});

describe("debug logs redact a provider's echo of the upstream key", () => {
  // logAndDropErrorBody (src/gateway/pipeline/commit.ts) logs up to 2 KiB of an upstream error body at
  // debug. Providers quote the credential they rejected ("Incorrect API key provided: ..."), so the
  // configured gateway_key lands in the logs (DESIGN 8: a log line never contains a key).
  it('no configured key appears in any log line, at debug either', async () => {
    const upstreamKey = 'sk-upstream-echoed-4d9c1b';
    const echo = await startUpstream((req, res) => {
      const body = JSON.stringify({
        error: { message: `Incorrect API key provided: ${String(req.headers.authorization)}` },
      });
      res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    try {
      const g = await gateway(
        {
          targets: {
            s: { url: echo.url, gateway_key: upstreamKey, sanitize_response: true },
          },
        },
        { LOG_LEVEL: 'debug' },
      );
      const got = await postJson(g.url, '/v1/chat/completions', { model: 's', messages: [] });
      expect(got.status).toBe(401);
      await sleep(200);
      const lines = g.program.logs.map((l) => JSON.stringify(l));
      expect(lines.filter((l) => l.includes(upstreamKey))).toEqual([]);
    } finally {
      await echo.close();
    }
  });
});

describe('a non-strict pool fails over on a vLLM-style error as the first frame', () => {
  // serveRawStream (src/gateway/pipeline/serve.ts) only reads `error` of the first data frame
  // (embeddedErrorOf). vLLM's in-stream error object is `{"object":"error","code":400,...}` (the
  // simulator's error_400_in_sse); the strict transform recognizes it, so with `on_status: [400]` a
  // strict pool fails over and a non-strict pool commits the error to the client.
  it('fails over like strict mode does', async () => {
    const first = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        'data: {"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}\n\n',
      );
    });
    const second = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        'data: {"id":"b","object":"chat.completion.chunk","created":1,"model":"b","choices":[{"index":0,"delta":{"content":"B"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
      );
    });
    try {
      const pool = {
        strategy: 'priority',
        fallback: { on_status: [400], aimd: false },
        providers: [
          { url: first.url, name: 'a' },
          { url: second.url, name: 'b' },
        ],
      };
      const [plain, strict] = await Promise.all([
        gateway({ targets: { p: pool } }),
        gateway({ strict_mode: true, targets: { p: pool } }),
      ]);
      const body = { model: 'p', messages: [{ role: 'user', content: 'x' }], stream: true };
      const strictAnswer = await postJson(strict.url, '/v1/chat/completions', body);
      expect(strictAnswer.text).toContain('"content":"B"');
      const plainAnswer = await postJson(plain.url, '/v1/chat/completions', body);
      expect(plainAnswer.text).toContain('"content":"B"');
      expect(second.requests).toHaveLength(2);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe('a client that leaves before the first data frame stops the upstream', () => {
  // RequestContext.close() (src/gateway/pipeline/context.ts) releases its grants before it aborts.
  // Once a provider has answered with headers, one of those grants is the attempt's finishAttempt
  // (dispatch.ts), whose Attempt.dispose() unlinks the listener that ties the attempt's abort
  // controller to the client's; the abort that follows reaches nothing. While the gateway holds the
  // stream until the first data frame (strict and standalone sanitization, any target; raw pools that
  // can still fail over), the upstream request keeps running: to the first frame and then, in strict
  // mode, to the end (pumpTransformed listens for the response's 'close' after it already happened),
  // or up to the 300 s body timeout when the provider stalls. Exactly when clients give up (long
  // queues, slow first tokens), the provider keeps generating for nobody.
  it.each([
    ['strict, single provider', true, 'late'],
    ['non-strict pool', false, 'pool'],
  ])(
    '%s: the provider request ends within a second of the client leaving',
    async (_name, strictMode, model) => {
      const models = simModels({ late: `${latency(2_500, 20, 200)}` });
      const sim = await startSim(['--model', models.late!]);
      try {
        const provider = { url: `${sim.baseUrl}/v1`, gateway_model: 'late' };
        const g = await gateway({
          strict_mode: strictMode,
          targets: {
            late: provider,
            pool: {
              strategy: 'priority',
              fallback: { aimd: false },
              providers: [
                { ...provider, name: 'a' },
                { ...provider, name: 'b' },
              ],
            },
          },
        });
        const body = { model, messages: [{ role: 'user', content: 'x' }], stream: true };
        const left = await postJson(g.url, '/v1/chat/completions', body, {}, { giveUpMs: 300 });
        expect(left.end).toBe('gave_up');
        // The first token is 2.5 s away: an aborted request leaves the simulator at once.
        await waitFor(
          'the simulator to drop the request',
          async () =>
            (await simCapacity(sim.baseUrl)).every((r) => r.running + r.waiting === 0) ? true : undefined,
          1_000,
        );
      } finally {
        await sim.stop();
      }
    },
  );
});

describe('an event stream head leaves the gateway at the commit point', () => {
  // passThrough (src/gateway/pipeline/commit.ts) calls writeHead at the commit point, but Node sends
  // the head only with the first body byte. A provider that answers headers and then stalls leaves the
  // client with nothing at all (it cannot tell a slow first token from a dead connection), and when it
  // gives up, finish() (handler.ts) sees headersSent and records the status the client never got:
  // gateway_requests_total{status="200"} instead of the 499 of a client gone before any response.
  it('the client sees the head at the commit point, or the request is counted as 499', async () => {
    const { createServer } = await import('node:net');
    const stalling = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () =>
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n',
        ),
      );
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    try {
      const address = stalling.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const g = await gateway({ targets: { s: { url: `http://127.0.0.1:${port}` } } });
      const got = await postJson(
        g.url,
        '/v1/chat/completions',
        { model: 's', messages: [], stream: true },
        {},
        { giveUpMs: 1_000 },
      );
      await sleep(200);
      const metrics = await scrape(g.adminUrl);
      const counted200 = sumOf(metrics, 'gateway_requests_total', { model: 's', status: '200' });
      expect(
        got.status === 200 || counted200 === 0,
        `client saw ${got.status}, counted as 200: ${counted200}`,
      ).toBe(true);
    } finally {
      stalling.close();
    }
  });

  // When the first event arrives with the head, the head is not flushed on its own: it leaves in the
  // same write as that event. Whichever way it leaves, a provider that then stalls must not keep
  // the event (or the head) from the client, passed through or re-emitted by strict mode.
  it.each([
    ['passed through', {}],
    ['re-emitted by strict mode', { strict_mode: true }],
  ])(
    'the first event sent with the head reaches the client though the provider stalls (%s)',
    async (_, mode) => {
      const { createServer } = await import('node:net');
      const frame =
        'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",' +
        '"choices":[{"index":0,"delta":{"role":"assistant","content":"first-token"},"finish_reason":null}]}\n\n';
      const stalling = createServer((socket) => {
        socket.on('error', () => {});
        socket.once('data', () =>
          socket.write(
            'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n' +
              `${Buffer.byteLength(frame).toString(16)}\r\n${frame}\r\n`,
          ),
        );
      });
      await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
      try {
        const address = stalling.address();
        const port = typeof address === 'object' && address ? address.port : 0;
        const g = await gateway({ ...mode, targets: { s: { url: `http://127.0.0.1:${port}` } } });
        const body = JSON.stringify({
          model: 's',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
        });
        const got = await rawExchange(
          g.port,
          [
            `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
              `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          ],
          { timeoutMs: 3_000, untilText: 'first-token' },
        );
        expect(got.text).toMatch(/^HTTP\/1\.1 200 /);
        expect(got.text).toContain('first-token');
        expect(got.hung, 'the first event never reached the client').toBe(false);
      } finally {
        stalling.close();
      }
    },
  );
});
