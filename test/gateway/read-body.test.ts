import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { BODY_TOO_LARGE, readBody, type BodyResult } from '../../src/gateway/pipeline/read-body.js';

const MAX = 64;

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server that reads each request's body with `readBody` and hands every result to the test. */
async function serve(): Promise<{
  port: number;
  results: BodyResult[];
  next: () => Promise<BodyResult>;
  nextClose: () => Promise<void>;
}> {
  const results: BodyResult[] = [];
  const waiters: ((result: BodyResult) => void)[] = [];
  const closeWaiters: (() => void)[] = [];
  server = createServer((req, res) => {
    res.on('close', () => closeWaiters.shift()?.());
    readBody(req, MAX, (result) => {
      results.push(result);
      waiters.shift()?.(result);
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    results,
    next: () => new Promise((resolve) => waiters.push(resolve)),
    nextClose: () => new Promise((resolve) => closeWaiters.push(resolve)),
  };
}

async function socketTo(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  return socket;
}

const HEAD = 'POST / HTTP/1.1\r\nhost: x\r\n';
const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

describe('readBody', () => {
  it('joins a chunked body sent in several pieces, in order', async () => {
    const { port, next } = await serve();
    const socket = await socketTo(port);
    const result = next();
    socket.write(`${HEAD}transfer-encoding: chunked\r\n\r\n`);
    for (const piece of ['{"model":', '"a",', '"n":1}']) {
      socket.write(chunk(piece));
      await sleep(20);
    }
    socket.write('0\r\n\r\n');
    expect((await result).toString()).toBe('{"model":"a","n":1}');
    socket.destroy();
  });

  it('returns a body sent in one piece as it came, and an empty chunked body as empty', async () => {
    const { port, next } = await serve();
    const socket = await socketTo(port);
    const single = next();
    socket.write(`${HEAD}content-length: 13\r\n\r\n{"model":"a"}`);
    expect((await single).toString()).toBe('{"model":"a"}');
    const empty = next();
    socket.write(`${HEAD}transfer-encoding: chunked\r\n\r\n0\r\n\r\n`);
    const body = await empty;
    expect(Buffer.isBuffer(body) && body.length).toBe(0);
    socket.destroy();
  });

  it('refuses a declared length over the limit before reading, and a chunked body at the first byte past it', async () => {
    const { port, next } = await serve();
    const declared = await socketTo(port);
    const first = next();
    declared.write(`${HEAD}content-length: ${MAX + 1}\r\n\r\n`);
    expect(await first).toBe(BODY_TOO_LARGE);
    declared.destroy();

    const streamed = await socketTo(port);
    const second = next();
    streamed.write(`${HEAD}transfer-encoding: chunked\r\n\r\n`);
    streamed.write(chunk('x'.repeat(MAX - 1)));
    await sleep(20);
    streamed.write(chunk('yy'));
    expect(await second).toBe(BODY_TOO_LARGE);
    streamed.destroy();
  });

  it('never calls back for a client gone mid-body (its response closes instead)', async () => {
    const { port, nextClose, results } = await serve();
    const socket = await socketTo(port);
    const closed = nextClose();
    socket.write(`${HEAD}content-length: 40\r\n\r\n{"model":`);
    await sleep(20);
    socket.destroy();
    await closed;
    await sleep(20);
    expect(results).toEqual([]);
  });
});
