import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPassThrough } from '../../bench/support/pass-through.ts';
import { startUpstream, type RunningUpstream } from '../../bench/support/services.ts';
import { CHAT_SURFACE, MESSAGES_SURFACE, type RequestSurface } from '../../bench/support/surfaces.ts';
import type { Target } from '../../bench/support/target.ts';

/**
 * How a test proxy relays the upstream's stream: `buffer` reads it whole before answering;
 * `hold-first` holds the first read and writes it together with the second (as a proxy that holds
 * a stream's head until its first token), then relays each read as it comes.
 */
type Relay = 'buffer' | 'hold-first';

let upstream: RunningUpstream;
const proxies: Server[] = [];

beforeAll(async () => {
  upstream = await startUpstream(1);
});

afterAll(async () => {
  for (const proxy of proxies) proxy.close();
  await upstream?.service.stop();
});

const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding']);

function forwarded(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string' && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

async function startRelay(relay: Relay): Promise<string> {
  const upstreamOrigin = `http://127.0.0.1:${upstream.ports[0]}`;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const answer = await request(`${upstreamOrigin}${req.url}`, {
          method: 'POST',
          headers: forwarded(req.headers),
          body: Buffer.concat(chunks),
        });
        res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type']) });
        if (relay === 'buffer') {
          res.end(Buffer.from(await answer.body.arrayBuffer()));
          return;
        }
        let held: Buffer | undefined;
        let first = true;
        for await (const chunk of answer.body as AsyncIterable<Buffer>) {
          if (first) {
            first = false;
            held = chunk;
            continue;
          }
          res.write(held ? Buffer.concat([held, chunk]) : chunk);
          held = undefined;
        }
        res.end(held);
      })();
    });
  });
  proxies.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const target = (origin: string, surface: RequestSurface): Target => ({
  name: 'proxy',
  origin,
  pid: undefined,
  headers: {},
  surface,
});

describe('the pass-through check', () => {
  it('passes the upstream itself on either API', async () => {
    const direct = `http://127.0.0.1:${upstream.ports[0]}`;
    for (const surface of [CHAT_SURFACE, MESSAGES_SURFACE]) {
      const check = await checkPassThrough(target(direct, surface));
      expect(check.problem).toBeUndefined();
      expect(check.summary).toContain('5 of 5 ticks apart');
    }
  });

  it("reads the answer in the target's API: Messages expectations on the chat path fail", async () => {
    const direct = `http://127.0.0.1:${upstream.ports[0]}`;
    const misrouted = target(direct, { ...MESSAGES_SURFACE, path: CHAT_SURFACE.path });
    const check = await checkPassThrough(misrouted);
    expect(check.problem).toContain("the completion arrived without the upstream's message");
    expect(check.problem).toContain('the stream was not complete');
  });

  it('fails a proxy that buffers the stream', async () => {
    const origin = await startRelay('buffer');
    for (const surface of [CHAT_SURFACE, MESSAGES_SURFACE]) {
      const check = await checkPassThrough(target(origin, surface));
      expect(check.problem).toMatch(/came together \(0 of 5 ticks apart.*\): buffered/);
    }
  });

  it('passes a proxy that holds the head until the next tick, then relays each tick', async () => {
    const origin = await startRelay('hold-first');
    for (const surface of [CHAT_SURFACE, MESSAGES_SURFACE]) {
      const check = await checkPassThrough(target(origin, surface));
      expect(check.problem).toBeUndefined();
      expect(check.summary).toContain('4 of 5 ticks apart');
    }
  });
});
