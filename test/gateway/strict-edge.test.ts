import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chat, readBody } from '../helpers/client.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import {
  chatChunkEvent as chunk,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';

/**
 * Strict streams at the edges of the commit point: terminal states arriving in the same read as
 * the first frame, output written just before a cut, and rejection labels under model-override.
 */

let up: RecordingUpstream;
let gateway: StartedGateway;
let limited: StartedGateway;

beforeAll(async () => {
  up = await startUpstream();
  const config = { strict_mode: true, targets: { u: { url: up.url } } };
  [gateway, limited] = await Promise.all([
    startGateway(config),
    startGateway(config, { args: ['--sse-buffer-limit', '64'] }),
  ]);
});
afterAll(async () => {
  await Promise.all([gateway?.stop(), limited?.stop()]);
  await up?.close();
});
beforeEach(() => {
  up.requests.length = 0;
});

interface Read {
  status: number;
  text: string;
  failed: boolean;
  ms: number;
}

async function read(target: StartedGateway, timeoutMs = 5_000): Promise<Read> {
  const started = performance.now();
  try {
    const response = await fetch(`${target.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('u', { stream: true })),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const { bytes, failed } = await readBody(response);
    return { status: response.status, text: bytes.toString('utf8'), failed, ms: performance.now() - started };
  } catch {
    return { status: 0, text: '', failed: true, ms: performance.now() - started };
  }
}

function contentOf(text: string): string {
  const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
  return complete
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => (JSON.parse(b.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices)
    .map((choices) => choices?.[0]?.delta?.content ?? '')
    .join('');
}

describe('a terminal state reached in the chunk that holds the first frame ends the stream', () => {
  it('A1: overflow in that chunk, then the provider connection drops: a body error, logged as overflow', async () => {
    up.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('a') + chunk('x'.repeat(300)).slice(0, 200));
      await new Promise((r) => setTimeout(r, 50));
      res.socket?.destroy();
    });
    const result = await read(limited);

    expect(result.failed).toBe(true);
    expect(result.text).not.toContain('"error"');
    // The client may see the cut before the warning line has crossed the gateway's stdout pipe.
    await limited.program.waitForLog(
      (l) => typeof l.msg === 'string' && l.msg.includes('--sse-buffer-limit'),
      2_000,
    );
  });

  it('A2: [DONE] in that chunk ends the client response at once, not when the provider closes', async () => {
    up.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('a') + 'data: [DONE]\n\n');
      await new Promise((r) => setTimeout(r, 2_000));
      res.end();
    });
    const result = await read(gateway);
    expect(result.text.endsWith('data: [DONE]\n\n')).toBe(true);

    expect(result.ms).toBeLessThan(1_000);
  });

  it('A3: an error event in that chunk ends the client response at once', async () => {
    up.respondWith(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('a') + `data: ${JSON.stringify({ error: { message: 'x', code: 500 } })}\n\n`);
      await new Promise((r) => setTimeout(r, 2_000));
      res.end();
    });
    const result = await read(gateway);
    expect(result.text).toContain('"error"');
    expect(result.ms).toBeLessThan(1_000);
  });
});

describe('output written just before a cut reaches the client', () => {
  const whole =
    (body: string): UpstreamHandler =>
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    };

  it('B1: a complete first frame then an end inside an event, in one piece: the frame, then a body error', async () => {
    up.respondWith(whole(chunk('a') + 'data: {"id":'));
    const result = await read(gateway);
    expect(result.failed).toBe(true);

    expect(result.status).toBe(200);
    expect(contentOf(result.text)).toBe('a');
  });
});

describe('body-error rejections keep the alias named by model-override', () => {
  it('invalid JSON with `model-override: u` is counted under model="u"', async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'model-override': 'u' },
      body: '{"model":',
    });
    expect(response.status).toBe(400);
    const metrics = await fetch(`${gateway.adminUrl}/metrics`).then((r) => r.text());

    expect(metrics).toMatch(/gateway_rejections_total\{model="u",status="400",code="invalid_json"/);
  });
});
