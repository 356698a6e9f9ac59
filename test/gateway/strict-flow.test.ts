import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chatChunkEvent as chunk, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * How a re-emitted (strict) stream flows after its commit point: a client that does not read holds
 * the provider back, a client that leaves aborts the provider's request, and a provider that is
 * done with the stream returns its keep-alive connection to the gateway's pool.
 */

let up: RecordingUpstream;
let gateway: StartedGateway;

beforeAll(async () => {
  up = await startUpstream();
  gateway = await startGateway({ strict_mode: true, targets: { u: { url: up.url } } });
});
afterAll(async () => {
  await gateway?.stop();
  await up?.close();
});

const REQUEST_BODY = JSON.stringify({
  model: 'u',
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
});

/**
 * A raw client that sends one streaming request. It counts `token` in what it reads without keeping
 * it all (a stream can be many MB), and keeps the last bytes read.
 */
function rawStreamingRequest(token = '"content":'): {
  socket: Socket;
  count: () => number;
  tail: () => string;
} {
  const socket = connect(gateway.port, '127.0.0.1');
  let count = 0;
  let tail = '';
  socket.setEncoding('utf8');
  socket.on('data', (piece: string) => {
    // The tail carries a token split between two reads.
    const text = tail + piece;
    for (let at = text.indexOf(token); at >= 0; at = text.indexOf(token, at + token.length)) {
      if (at + token.length > tail.length) count++;
    }
    tail = text.slice(-256);
  });
  socket.on('error', () => {});
  socket.write(
    'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(REQUEST_BODY)}\r\n\r\n${REQUEST_BODY}`,
  );
  return { socket, count: () => count, tail: () => tail };
}

function closeOf(res: ServerResponse): Promise<{ finished: boolean }> {
  return new Promise((resolve) => res.once('close', () => resolve({ finished: res.writableFinished })));
}

describe('a strict stream after its commit point', () => {
  it('a client that does not read holds the provider back; reading resumes it to [DONE]', async () => {
    // Far more than the loopback sockets and the gateway's buffers between the two can hold.
    const event = chunk('x'.repeat(4_096));
    const events = Math.ceil((64 * 1024 * 1024) / event.length);
    let written = 0;
    const done = new Promise<void>((resolve) => {
      up.respondWith(async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < events && !res.destroyed; i++) {
          written = i + 1;
          if (!res.write(event)) await once(res, 'drain');
        }
        res.end('data: [DONE]\n\n', resolve);
      });
    });
    const client = rawStreamingRequest();
    await once(client.socket, 'data');
    client.socket.pause();
    await new Promise((r) => setTimeout(r, 500));
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(events / 2);

    client.socket.resume();
    await done;
    // The chunked response's last chunk.
    while (!client.tail().endsWith('\r\n0\r\n\r\n')) await once(client.socket, 'data');
    client.socket.destroy();
    expect(written).toBe(events);
    // Every event arrived, re-emitted, then the provider's [DONE].
    expect(client.count()).toBe(events);
    expect(client.tail()).toContain('data: [DONE]\n\n');
  });

  it('a client that leaves mid-stream aborts the provider request', async () => {
    const closed = new Promise<{ finished: boolean }>((resolve) => {
      up.respondWith((_req, res) => {
        void closeOf(res).then(resolve);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk('a'));
        const timer = setInterval(() => res.write(chunk('b')), 20);
        res.once('close', () => clearInterval(timer));
      });
    });
    const client = rawStreamingRequest();
    await once(client.socket, 'data');
    client.socket.destroy();
    expect(await closed).toEqual({ finished: false });
  });

  it('after [DONE] the rest of the provider response is read and its connection serves the next stream', async () => {
    const ports: (number | undefined)[] = [];
    let firstSocket: Socket | undefined;
    const firstEnded = new Promise<{ finished: boolean }>((resolve) => {
      up.respondWith((_req, res, raw) => {
        ports.push(raw.socket.remotePort);
        firstSocket = raw.socket;
        void closeOf(res).then(resolve);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunk('a') + chunk('b') + 'data: [DONE]\n\n');
        // The provider ends its response a little after [DONE] (a trailing comment, then the end).
        setTimeout(() => res.end(': bye\n\n'), 100);
      });
    });
    const first = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: REQUEST_BODY,
    });
    const text = await first.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await firstEnded).toEqual({ finished: true });
    // Past the gateway's 1 s grace for reading the rest: a connection that was not read to its end
    // would be closed by now.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(firstSocket?.destroyed).toBe(false);

    up.respondWith((_req, res, raw) => {
      ports.push(raw.socket.remotePort);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(chunk('c') + 'data: [DONE]\n\n');
    });
    const second = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: REQUEST_BODY,
    });
    expect(await second.text()).toContain('"content":"c"');
    expect(ports).toHaveLength(2);
    expect(ports[1]).toBe(ports[0]);
  });
});
