import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gatewaysPerTest } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';
import { jsonReply, sseReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
const startGateway = gatewaysPerTest();

beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, { id: 'ok' }));
});
afterAll(async () => {
  await upstream.close();
});
afterEach(async () => {
  upstream.respondWith(jsonReply(200, { id: 'ok' }));
});

const config = (): unknown => ({ targets: { m: { url: upstream.url } } });

function chat(url: string, init: { stream?: boolean } = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: init.stream ?? false,
    }),
  });
}

/** Resolves with the error code of a fresh TCP connection attempt, or 'connected'. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

describe('admin listener', () => {
  it('serves health and metrics on the admin port', async () => {
    const gateway = await startGateway(config());
    expect((await fetch(`${gateway.adminUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${gateway.adminUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toContain('gateway_config_info{hash=');
    // The proxy port's 404 for these paths: request-errors.test.ts.
  });

  it('an API request sent to the admin port is told which port serves it', async () => {
    const gateway = await startGateway(config());
    const expected = (path: string): string =>
      `${path} is not served on the admin port (only /healthz, /readyz, /metrics); the proxy port (${gateway.port}, --port) serves the API\n`;
    const chatted = await chat(gateway.adminUrl);
    expect(chatted.status).toBe(404);
    expect(await chatted.text()).toBe(expected('/v1/chat/completions'));
    const models = await fetch(`${gateway.adminUrl}/v1/models`);
    expect(models.status).toBe(404);
    expect(await models.text()).toBe(expected('/v1/models'));
    // An admin path with the wrong method is still a 405.
    expect((await fetch(`${gateway.adminUrl}/healthz`, { method: 'POST' })).status).toBe(405);
  });

  it('honours --metrics-prefix and --metrics false', async () => {
    const prefixed = await startGateway(config(), { env: { GATEWAY_METRICS_PREFIX: 'edge' } });
    const text = await prefixed.metrics();
    expect(text).toContain('edge_config_info{');
    expect(text).not.toContain('gateway_config_info');

    const disabled = await startGateway(config(), { args: ['--metrics', 'false'] });
    expect((await fetch(`${disabled.adminUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${disabled.adminUrl}/healthz`)).status).toBe(200);
  });
});

describe('graceful shutdown (spec 3.2)', () => {
  it('fails readiness, serves through the delay, refuses new connections, lets the stream finish, exits 0', async () => {
    const frames = Array.from({ length: 30 }, (_, i) => ({
      id: 'c',
      choices: [{ index: 0, delta: { content: `t${i}` } }],
    }));
    upstream.respondWith(sseReply(frames, 100)); // a ~3 s stream
    const gateway = await startGateway(config(), { args: ['--shutdown-delay-secs', '1'] });

    const stream = await chat(gateway.url, { stream: true });
    expect(stream.status).toBe(200);
    const body = stream.text();

    gateway.program.proc.kill('SIGTERM');
    await gateway.program.waitForLog((l) => l.msg?.startsWith('shutdown: readiness failing') ?? false);
    expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(503);
    expect((await fetch(`${gateway.adminUrl}/healthz`)).status).toBe(200);

    // During the delay new requests are still served (the orchestrator is still routing to us).
    upstream.respondWith(jsonReply(200, { id: 'during-delay' }));
    const during = await chat(gateway.url);
    expect(during.status).toBe(200);
    expect(await during.json()).toEqual({ id: 'during-delay' });

    await gateway.program.waitForLog((l) => l.msg?.startsWith('shutdown: admission closed') ?? false);
    expect(await tryConnect(gateway.port)).toBe('ECONNREFUSED');
    // Health and metrics stay up while draining.
    expect((await fetch(`${gateway.adminUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${gateway.adminUrl}/metrics`)).status).toBe(200);

    const text = await body;
    expect(text.match(/^data: \{/gm)).toHaveLength(30);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await gateway.program.exited).toEqual({ code: 0, signal: null });
    expect(gateway.program.logs.some((l) => l.msg === 'shutdown: every accepted request finished')).toBe(
      true,
    );
  });

  it('answers a kept-alive connection with Connection: close during the delay, so the client reconnects elsewhere', async () => {
    const gateway = await startGateway(config(), { args: ['--shutdown-delay-secs', '3'] });
    const socket = connect(gateway.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const payload = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const request = `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const closedAt = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    const responses = (): string[] => received.split('HTTP/1.1 ').filter(Boolean);

    socket.write(request);
    await until(() => responses().length === 1 && received.includes('{"id":"ok"}'));
    expect(responses()[0]!.toLowerCase()).toContain('connection: keep-alive');

    gateway.program.proc.kill('SIGTERM');
    await gateway.program.waitForLog((l) => l.msg?.startsWith('shutdown: readiness failing') ?? false);
    const sentAt = Date.now();
    socket.write(request);
    const closed = await closedAt;
    // Served, then closed by the gateway right after the response, long before admission closes.
    expect(responses()).toHaveLength(2);
    expect(responses()[1]).toMatch(/^200/);
    expect(responses()[1]!.toLowerCase()).toContain('connection: close');
    expect(closed - sentAt).toBeLessThan(2_000);
    expect(gateway.program.logs.some((l) => l.msg?.startsWith('shutdown: admission closed'))).toBe(false);
  });

  it('answers a request that arrives on a reused connection during the drain with Connection: close', async () => {
    // Deterministic ordering: the second response starts only once admission has closed, while the
    // first (slow) response still holds the connection.
    let admissionClosed: () => void = () => {};
    const drainStarted = new Promise<void>((resolve) => (admissionClosed = resolve));
    upstream.respondWith(async (req, res) => {
      if (req.body.includes('slow')) await sleep(600);
      await drainStarted;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
      res.end('{}');
    });
    const gateway = await startGateway(config(), { args: ['--shutdown-delay-secs', '0'] });
    const socket = connect(gateway.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const request = (content: string): string => {
      const payload = JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] });
      return `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
    };
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    // Two pipelined requests: the second is read while the first is in flight, answered after it.
    socket.write(request('slow') + request('fast'));
    await sleep(200);
    gateway.program.proc.kill('SIGTERM');
    await gateway.program.waitForLog((l) => l.msg?.startsWith('shutdown: admission closed') ?? false);
    admissionClosed();
    await closed;
    const responses = received.split('HTTP/1.1 ').filter(Boolean);
    expect(responses).toHaveLength(2);
    expect(responses[0]).toMatch(/^200/);
    expect(responses[1]).toMatch(/^200/);
    expect(responses[1]!.toLowerCase()).toContain('connection: close');
    expect((await gateway.program.exited).code).toBe(0);
  });

  it('cuts streams still running at the drain deadline, counts them and exits non-zero', async () => {
    const frames = Array.from({ length: 100 }, (_, i) => ({
      id: 'c',
      choices: [{ index: 0, delta: { content: `t${i}` } }],
    }));
    upstream.respondWith(sseReply(frames, 100)); // ~10 s, far past the 1 s deadline
    const gateway = await startGateway(config(), {
      args: ['--shutdown-delay-secs', '0', '--shutdown-timeout-secs', '1'],
    });
    const stream = await chat(gateway.url, { stream: true });
    const reader = stream.body!.getReader();
    await reader.read();

    gateway.program.proc.kill('SIGTERM');
    const timeoutLog = await gateway.program.waitForLog(
      (l) => l.msg?.startsWith('shutdown: drain timeout') ?? false,
    );
    expect(timeoutLog.connectionsCut).toBe(1);
    // The client sees a broken stream, never a clean end.
    await expect(
      (async () => {
        for (;;) {
          const { done } = await reader.read();
          if (done) return 'clean end';
        }
      })(),
    ).rejects.toThrow();
    const exit = await gateway.program.exited;
    expect(exit.code).toBe(1);
  });
});
