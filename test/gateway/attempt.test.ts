import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamExchange, type UpstreamResponse } from '../../src/gateway/http/upstream-exchange.js';
import type { AliasRoute, ProviderRoute, RuntimeTable } from '../../src/gateway/runtime/table.js';
import { Attempt, type AbandonReason } from '../../src/gateway/pipeline/attempt.js';
import type { AttemptProbe } from '../../src/gateway/balance/aimd.js';
import { RequestContext } from '../../src/gateway/pipeline/context.js';
import { respond } from '../../src/gateway/pipeline/respond.js';
import type { ResponseMode } from '../../src/gateway/pipeline/response-mode.js';
import { createLogger } from '../../src/gateway/telemetry/logger.js';
import { GatewayMetrics } from '../../src/gateway/telemetry/metrics.js';

/**
 * The attempt and the commit rules of the response path, with the provider played by hand: an
 * `UpstreamExchange` driven through its undici handler callbacks (status, chunks, end or failure, in
 * the order a test chooses) and a real client response on loopback, so what reaches the client is
 * read off the wire.
 */

const RAW: ResponseMode = { kind: 'raw' };
const STRICT: ResponseMode = { kind: 'strict', endpoint: 'chat_completions', trusted: false };

/** A dispatch controller that records pauses and reports an abort back as undici does. */
class HandController {
  paused = false;
  aborted = false;
  readonly reason = null;
  readonly #exchange: () => UpstreamExchange;
  constructor(exchange: () => UpstreamExchange) {
    this.#exchange = exchange;
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  abort(error: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    queueMicrotask(() => this.#exchange().onResponseError(this as never, error));
  }
}

/** A provider answer played by hand: the head now, chunks and the end when the test says. */
function handPlayedResponse(
  status: number,
  contentType: string,
): Promise<{
  response: UpstreamResponse;
  chunk(text: string): void;
  end(): void;
  fail(): void;
  controller: HandController;
  exchange: UpstreamExchange;
}> {
  return new Promise((resolve, reject) => {
    const controller = new HandController(() => exchange);
    const exchange: UpstreamExchange = new UpstreamExchange({
      headArrived: (response) =>
        resolve({
          response,
          controller,
          exchange,
          chunk: (text) => exchange.onResponseData(controller as never, Buffer.from(text)),
          end: () => exchange.onResponseEnd(),
          fail: () =>
            exchange.onResponseError(
              controller as never,
              Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
            ),
        }),
      headFailed: reject,
    });
    exchange.onRequestStart(controller as unknown as Dispatcher.DispatchController);
    exchange.onResponseStart(controller as never, status, { 'content-type': contentType });
  });
}

const route = {
  key: 'pool',
  model: 'pool',
  share: undefined,
  fallback: {
    onStatus: (status: number) => status >= 500,
    onRateLimit: false,
    onConnectionError: true,
    maxAttempts: 2,
    firstTokenTimeoutMs: undefined,
  },
} as unknown as AliasRoute;

const provider = {
  name: 'a',
  index: 0,
  responseHeaders: [],
  gatewayKey: undefined,
  propagateTraceContext: false,
  timeouts: {
    connectMs: 10_000,
    headersMs: 300_000,
    idleMs: 300_000,
    totalMs: 600_000,
    streamTotalMs: undefined,
  },
} as unknown as ProviderRoute;

interface Case {
  attempt: Attempt;
  ctx: RequestContext;
  abandoned: { reason: AbandonReason; status: number | undefined }[];
  metrics: GatewayMetrics;
  /** What the client received: status (undefined: no head) and body, once its response closed. */
  received: Promise<{ status: number | undefined; body: string; complete: boolean }>;
}

let server: Server;
let pending: ((req: IncomingMessage, res: ServerResponse) => void)[] = [];

beforeAll(async () => {
  server = createServer((req, res) => pending.shift()!(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** A request context with a real client response, and an attempt on it. */
async function attemptCase(options: {
  last: boolean;
  mode?: ResponseMode;
  deadlineMs?: number;
  totalMs?: number;
  /** The share controller's probe of the attempt. */
  probe?: AttemptProbe;
}): Promise<Case> {
  const arrived = new Promise<[IncomingMessage, ServerResponse]>((resolve) =>
    pending.push((req, res) => resolve([req, res])),
  );
  const received = new Promise<{ status: number | undefined; body: string; complete: boolean }>((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      method: 'POST',
      path: '/v1/chat/completions',
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => (body += text));
      res.on('end', () => resolve({ status: res.statusCode, body, complete: true }));
      res.on('error', () => resolve({ status: res.statusCode, body, complete: false }));
    });
    req.on('error', () => resolve({ status: undefined, body: '', complete: false }));
    req.end('{}');
  });
  const [req, res] = await arrived;
  const ctx = new RequestContext(
    req,
    res,
    { strictMode: false } as RuntimeTable,
    'realtime',
    '/v1/chat/completions',
  );
  ctx.route = options.probe
    ? ({ ...route, share: { startAttempt: () => options.probe } } as unknown as AliasRoute)
    : route;
  ctx.modelLabel = 'pool';
  res.once('close', () => ctx.close());
  const metrics = new GatewayMetrics('gateway');
  const abandoned: Case['abandoned'] = [];
  const attempt = new Attempt(
    ctx,
    {
      // A configured `total_ms` (shorter than connect + headers: armed when the attempt starts).
      provider:
        options.totalMs === undefined
          ? provider
          : ({
              ...provider,
              timeouts: { ...provider.timeouts, streamTotalMs: options.totalMs },
            } as ProviderRoute),
      number: 1,
      last: options.last,
      mode: options.mode ?? RAW,
      deadlineMs: options.deadlineMs,
    },
    undefined,
    { attemptAbandoned: (_attempt, reason, status) => abandoned.push({ reason, status }) },
    { metrics, logger: createLogger({ level: 'silent' }) },
  );
  return { attempt, ctx, abandoned, metrics, received };
}

async function outcomes(metrics: GatewayMetrics): Promise<Record<string, number>> {
  const text = await metrics.registry.metrics();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^gateway_upstream_attempts_total\{[^}]*outcome="(\w+)"\} (\d+)$/gm))
    counts[match[1]!] = Number(match[2]);
  return counts;
}

/** Ends the client's response from the gateway side when a test gave it up without an answer. */
function closeUnanswered(c: Case): void {
  if (!c.ctx.res.headersSent) c.ctx.res.destroy();
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
const chunk = (content: string) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

describe('Attempt: exactly one of commit() or abandon()', () => {
  it('commit counts the attempt as committed; a later abandon is a bug and throws', async () => {
    const c = await attemptCase({ last: true });
    c.attempt.commit();
    expect(() => c.attempt.abandon('status', 503)).toThrow(/abandoned after it was committed/);
    expect(() => c.attempt.commit()).toThrow(/committed after it was committed/);
    expect(await outcomes(c.metrics)).toEqual({ committed: 1 });
    expect(c.abandoned).toEqual([]);
    closeUnanswered(c);
    c.ctx.res.end();
  });

  it('abandon tells the attempt loop once, with its reason and status, and counts it', async () => {
    const c = await attemptCase({ last: false });
    c.attempt.abandon('status', 503);
    expect(() => c.attempt.commit()).toThrow(/committed after it was abandoned/);
    expect(c.abandoned).toEqual([{ reason: 'status', status: 503 }]);
    expect(await outcomes(c.metrics)).toEqual({ status: 1 });
    closeUnanswered(c);
  });

  it("a failure is the client's when it left, the deadline's when it fired, else the provider's", async () => {
    const gone = await attemptCase({ last: false });
    gone.ctx.res.destroy();
    await once(gone.ctx.res, 'close');
    gone.attempt.failed(Object.assign(new Error('aborted'), { code: 'UND_ERR_ABORTED' }), 'body');
    expect(gone.abandoned).toEqual([{ reason: 'client_gone', status: undefined }]);
    expect(await gone.metrics.registry.metrics()).not.toMatch(/^gateway_upstream_errors_total\{/m);

    const late = await attemptCase({ last: false, deadlineMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    late.attempt.failed(Object.assign(new Error('aborted'), { code: 'UND_ERR_ABORTED' }), 'head');
    expect(late.abandoned).toEqual([{ reason: 'deadline', status: undefined }]);
    closeUnanswered(late);

    const broken = await attemptCase({ last: false });
    broken.attempt.failed(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }), 'body');
    expect(broken.abandoned).toEqual([{ reason: 'connection_error', status: undefined }]);
    expect(await broken.metrics.registry.metrics()).toMatch(
      /^gateway_upstream_errors_total\{model="pool",reason="body"\} 1$/m,
    );
    expect(await outcomes(broken.metrics)).toEqual({ connection_error: 1 });
    closeUnanswered(broken);
  });
});

describe('Attempt: timeouts', () => {
  const undiciError = (code: string) => Object.assign(new Error(code), { code });

  it("undici's connect, headers and idle timeouts abandon the attempt as `timeout`, counted by kind", async () => {
    for (const [code, kind] of [
      ['UND_ERR_CONNECT_TIMEOUT', 'connect'],
      ['UND_ERR_HEADERS_TIMEOUT', 'headers'],
      ['UND_ERR_BODY_TIMEOUT', 'idle'],
    ] as const) {
      const c = await attemptCase({ last: false });
      c.attempt.failed(undiciError(code), kind === 'idle' ? 'body' : 'head');
      expect(c.abandoned).toEqual([{ reason: 'timeout', status: undefined }]);
      expect(await outcomes(c.metrics)).toEqual({ timeout: 1 });
      expect(await c.metrics.registry.metrics()).toMatch(
        new RegExp(`^gateway_upstream_errors_total\\{model="pool",reason="${kind}_timeout"\\} 1$`, 'm'),
      );
      closeUnanswered(c);
    }
  });

  it('the share controller hears a connect timeout as unknown, the others as an expired deadline', async () => {
    for (const [code, heard] of [
      ['UND_ERR_CONNECT_TIMEOUT', 'unknown'],
      ['UND_ERR_HEADERS_TIMEOUT', 'deadlineExpired'],
      ['UND_ERR_BODY_TIMEOUT', 'deadlineExpired'],
    ] as const) {
      const calls: string[] = [];
      const probe = {
        role: 'preferred',
        firstToken: () => undefined,
        deadlineExpired: (elapsedMs: number) => {
          calls.push(`deadlineExpired ${elapsedMs >= 0}`);
          return undefined;
        },
        status: () => undefined,
        unknown: () => {
          calls.push('unknown');
          return undefined;
        },
        end: () => undefined,
      } satisfies AttemptProbe;
      const c = await attemptCase({ last: false, probe });
      c.attempt.failed(undiciError(code), 'head');
      expect(calls, code).toEqual([heard === 'unknown' ? 'unknown' : 'deadlineExpired true']);
      closeUnanswered(c);
    }
  });

  it('`total_ms` aborts the attempt: the failure that abort causes is a `total` timeout', async () => {
    const c = await attemptCase({ last: false, totalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    c.attempt.failed(undiciError('UND_ERR_ABORTED'), 'head');
    expect(c.abandoned).toEqual([{ reason: 'timeout', status: undefined }]);
    expect(await c.metrics.registry.metrics()).toMatch(
      /^gateway_upstream_errors_total\{model="pool",reason="total_timeout"\} 1$/m,
    );
    closeUnanswered(c);
  });

  it('after the commit, `total_ms` cuts the response: counted as a total timeout, never completed', async () => {
    const c = await attemptCase({ last: true, totalMs: 30 });
    const upstream = await handPlayedResponse(200, 'text/event-stream');
    c.attempt.bindExchange(upstream.exchange);
    await respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk(frame(chunk('Hel')));
    const received = await c.received;
    expect(received.status).toBe(200);
    expect(received.complete).toBe(false);
    expect(upstream.controller.aborted).toBe(true);
    expect(await c.metrics.registry.metrics()).toMatch(
      /^gateway_upstream_errors_total\{model="pool",reason="total_timeout"\} 1$/m,
    );
  });
});

describe('respond: the commit point', () => {
  it('a fallback status with another attempt left is abandoned; nothing reaches the client', async () => {
    const c = await attemptCase({ last: false });
    const upstream = await handPlayedResponse(503, 'application/json');
    await respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    expect(c.abandoned).toEqual([{ reason: 'status', status: 503 }]);
    expect(c.ctx.res.headersSent).toBe(false);
    expect(upstream.controller.aborted).toBe(true);
    closeUnanswered(c);
  });

  it('the same status on the last attempt is committed and passed through', async () => {
    const c = await attemptCase({ last: true });
    const upstream = await handPlayedResponse(503, 'application/json');
    await respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk('{"error":{"message":"busy"}}');
    upstream.end();
    expect(await c.received).toEqual({ status: 503, body: '{"error":{"message":"busy"}}', complete: true });
    expect(await outcomes(c.metrics)).toEqual({ committed: 1 });
  });

  it('a stream is held until its first data frame; an error in that frame is failed over', async () => {
    const c = await attemptCase({ last: false });
    const upstream = await handPlayedResponse(200, 'text/event-stream');
    const responding = respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk(': keep-alive\n\n');
    await tick();
    expect(c.ctx.res.headersSent).toBe(false);
    upstream.chunk(frame({ error: { message: 'overloaded', code: 'server_error' } }));
    await responding;
    expect(c.abandoned).toEqual([{ reason: 'embedded_error', status: 500 }]);
    expect(c.ctx.res.headersSent).toBe(false);
    closeUnanswered(c);
  });

  it("the first data frame commits: an error after it is the served stream's, passed on unchanged", async () => {
    const c = await attemptCase({ last: false });
    const upstream = await handPlayedResponse(200, 'text/event-stream');
    const responding = respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk(frame(chunk('Hel')));
    await responding;
    expect(c.ctx.res.headersSent).toBe(true);
    upstream.chunk(frame({ error: { message: 'overloaded', code: 'server_error' } }));
    upstream.end();
    const received = await c.received;
    expect(received.body).toBe(
      frame(chunk('Hel')) + frame({ error: { message: 'overloaded', code: 'server_error' } }),
    );
    expect(c.abandoned).toEqual([]);
    expect(await outcomes(c.metrics)).toEqual({ committed: 1 });
  });

  it('a body that breaks before the commit point is a connection error, never an answer', async () => {
    const c = await attemptCase({ last: false, mode: STRICT });
    const upstream = await handPlayedResponse(200, 'application/json');
    const responding = respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk('{"id":"c","object":"chat.comp');
    upstream.fail();
    await responding;
    expect(c.abandoned).toEqual([{ reason: 'connection_error', status: undefined }]);
    expect(c.ctx.res.headersSent).toBe(false);
    closeUnanswered(c);
  });

  it('a stream that breaks after the commit point is cut: the client sees a broken transfer', async () => {
    const c = await attemptCase({ last: true, mode: STRICT });
    const upstream = await handPlayedResponse(200, 'text/event-stream');
    const responding = respond(c.ctx, c.attempt, upstream.response, { ...depsOf(c), sseBufferLimit: 65_536 });
    upstream.chunk(frame(chunk('Hel')));
    await responding;
    upstream.fail();
    const received = await c.received;
    expect(received.status).toBe(200);
    // Strict clients get an error event and no [DONE]: never a clean success.
    expect(received.body).toContain('"model":"pool"');
    expect(received.body).toMatch(/data: \{"error":/);
    expect(received.body).not.toContain('[DONE]');
    expect(await c.metrics.registry.metrics()).toMatch(
      /^gateway_upstream_errors_total\{model="pool",reason="body"\} 1$/m,
    );
  });
});

function depsOf(c: Case): { metrics: GatewayMetrics; logger: ReturnType<typeof createLogger> } {
  return { metrics: c.metrics, logger: createLogger({ level: 'silent' }) };
}

afterAll(() => {
  pending = [];
});
