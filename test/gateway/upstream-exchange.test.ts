import { once } from 'node:events';
import { createServer } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { UpstreamClient, upstreamTimeouts } from '../../src/gateway/http/upstream.js';
import type {
  BodyConsumer,
  UpstreamExchange,
  UpstreamResponse,
} from '../../src/gateway/http/upstream-exchange.js';
import { jsonReply, sseReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** Everything the body yields, or the error that ended it (with what arrived before). */
function collect(response: UpstreamResponse): Promise<{ bytes: Buffer; error?: Error & { code?: string } }> {
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    response.consume({
      bodyData: (chunk) => chunks.push(chunk),
      bodyEnded: () => resolve({ bytes: Buffer.concat(chunks) }),
      bodyFailed: (error) => resolve({ bytes: Buffer.concat(chunks), error }),
    });
  });
}

/** Resolves when the upstream's response closes; `finished` tells whether it was sent to its end. */
function closeOf(res: ServerResponse): Promise<{ finished: boolean }> {
  return new Promise((resolve) => res.once('close', () => resolve({ finished: res.writableFinished })));
}

/**
 * The provider answers with an event stream, sends one frame and holds the response open; resolves
 * when that response closes (`finished`: whether it was sent to its end).
 */
function streamOneFrameAndHold(upstream: RecordingUpstream): Promise<{ finished: boolean }> {
  return new Promise((resolve) => {
    upstream.respondWith((_req, res) => {
      void closeOf(res).then(resolve);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    });
  });
}

const TIMEOUTS = upstreamTimeouts({ connectMs: 10_000, headersMs: 300_000, idleMs: 300_000 });

/**
 * Sends through the client, with a listener that turns the head (or its failure) into a promise.
 * The promise rejects if the listener is told before `send` returned, or more than once.
 */
function sendForHead(
  client: UpstreamClient,
  options: Dispatcher.DispatchOptions,
): { exchange: UpstreamExchange; response: Promise<UpstreamResponse> } {
  let returned = false;
  let told = 0;
  let settle!: (outcome: { response: UpstreamResponse } | { error: Error }) => void;
  const outcome = new Promise<{ response: UpstreamResponse } | { error: Error }>((resolve) => {
    settle = resolve;
  });
  const tell = (result: { response: UpstreamResponse } | { error: Error }): void => {
    told++;
    if (!returned) settle({ error: new Error('the listener was told before send returned') });
    else if (told > 1) settle({ error: new Error('the listener was told more than once') });
    else settle(result);
  };
  const exchange = client.send({ ...options, headersTimeout: TIMEOUTS.headersTimeout }, TIMEOUTS, {
    headArrived: (response) => tell({ response }),
    headFailed: (error) => tell({ error }),
  });
  returned = true;
  const response = outcome.then(async (result) => {
    // A second call would come right after the first: give it the chance to show.
    await new Promise((resolve) => setImmediate(resolve));
    if (told > 1) throw new Error('the listener was told more than once');
    if ('error' in result) throw result.error;
    return result.response;
  });
  return { exchange, response };
}

describe('UpstreamExchange (requests to providers through undici dispatch)', () => {
  let upstream: RecordingUpstream;
  let client: UpstreamClient;

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterEach(async () => {
    // destroy, not close: a failed test may leave a body unread, which close would wait for.
    await client.destroy();
  });
  afterAll(async () => {
    await upstream.close();
  });

  const post = (body = '{"model":"m"}') =>
    sendForHead(client, {
      origin: upstream.url,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(body),
    });

  it('delivers status, headers and the body, and sends the request body unchanged', async () => {
    client = new UpstreamClient();
    upstream.respondWith(jsonReply(201, { ok: true }, { 'x-provider': 'p' }));
    const response = await post('{"model":"m","n":1}').response;
    expect(response.statusCode).toBe(201);
    expect(response.headers['x-provider']).toBe('p');
    const { bytes, error } = await collect(response);
    expect(error).toBeUndefined();
    expect(JSON.parse(bytes.toString('utf8'))).toEqual({ ok: true });
    expect(upstream.requests.at(-1)!.body).toBe('{"model":"m","n":1}');
  });

  it('skips informational answers and settles with the final one', async () => {
    client = new UpstreamClient();
    upstream.respondWith((_req, res) => {
      res.writeEarlyHints({ link: '</a>; rel=preload' });
      jsonReply(200, { final: true })(_req, res, undefined as never);
    });
    const response = await post().response;
    expect(response.statusCode).toBe(200);
    expect(JSON.parse((await collect(response)).bytes.toString('utf8'))).toEqual({ final: true });
  });

  /**
   * The provider answers `total` bytes as fast as the gateway takes them; `written()` is how far it
   * got, `done` settles when it has sent everything.
   */
  function largeBody(): { total: number; written: () => number; done: Promise<void> } {
    // Far beyond what the loopback sockets in between can buffer (their buffers autotune to several
    // MB each), so a provider that is not held back would be done long before the check.
    const total = 64 * 1024 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'a');
    let written = 0;
    const done = new Promise<void>((resolve) => {
      upstream.respondWith(async (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
        for (let sent = 0; sent < total; sent += piece.length) {
          const more = res.write(piece);
          written = sent + piece.length;
          if (!more) await once(res, 'drain');
        }
        res.end();
        resolve();
      });
    });
    return { total, written: () => written, done };
  }

  it('a body nobody has taken yet holds one high-water mark and holds the provider back', async () => {
    client = new UpstreamClient();
    const provider = largeBody();
    const response = await post().response;
    await new Promise((r) => setTimeout(r, 300));
    expect(provider.written()).toBeGreaterThan(0);
    expect(provider.written()).toBeLessThan(provider.total / 2);
    const { bytes, error } = await collect(response);
    await provider.done;
    expect(error).toBeUndefined();
    expect(bytes.length).toBe(provider.total);
  });

  it('abort before the head: the listener hears UND_ERR_ABORTED and the provider sees a close', async () => {
    client = new UpstreamClient();
    let closed: Promise<{ finished: boolean }> | undefined;
    const arrived = new Promise<void>((resolve) => {
      upstream.respondWith((_req, res) => {
        closed = closeOf(res);
        resolve();
      });
    });
    const { exchange, response } = post();
    await arrived;
    exchange.abort();
    exchange.abort();
    await expect(response).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    expect(await closed).toEqual({ finished: false });
  });

  it('abort at once, before a connection is even open, fails the head the same way', async () => {
    client = new UpstreamClient();
    const before = upstream.requests.length;
    const { exchange, response } = post();
    exchange.abort();
    await expect(response).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    await new Promise((r) => setTimeout(r, 50));
    expect(upstream.requests.length).toBe(before);
  });

  it('a provider that cannot be reached fails the head with the connect error', async () => {
    client = new UpstreamClient();
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { response } = sendForHead(client, {
      origin: `http://127.0.0.1:${port}`,
      path: '/',
      method: 'GET',
      headers: {},
      body: null,
    });
    await expect(response).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a request refused on the spot (a closed agent) fails the head after send returns, once', async () => {
    client = new UpstreamClient();
    await client.close();
    await expect(post().response).rejects.toMatchObject({ code: 'UND_ERR_DESTROYED' });
  });

  describe('consume: the body handed to a consumer from the dispatch callbacks', () => {
    /** Records what a consumer hears; `settled` resolves on the body's end or failure. */
    class RecordingConsumer implements BodyConsumer {
      readonly chunks: Buffer[] = [];
      ends = 0;
      readonly failures: (Error & { code?: string })[] = [];
      readonly settled: Promise<void>;
      #settle!: () => void;
      readonly #onData: ((chunk: Buffer) => void) | undefined;

      constructor(onData?: (chunk: Buffer) => void) {
        this.#onData = onData;
        this.settled = new Promise((resolve) => {
          this.#settle = resolve;
        });
      }

      bodyData(chunk: Buffer): void {
        this.chunks.push(chunk);
        this.#onData?.(chunk);
      }

      bodyEnded(): void {
        this.ends++;
        this.#settle();
      }

      bodyFailed(error: Error): void {
        this.failures.push(error);
        this.#settle();
      }

      get bytes(): Buffer {
        return Buffer.concat(this.chunks);
      }

      /** Nothing was heard of the body's end or failure. */
      get unsettled(): boolean {
        return this.ends === 0 && this.failures.length === 0;
      }
    }

    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

    /** A callback for a consumer's first chunk, and a promise of that chunk's arrival. */
    function firstChunkSignal(): { arrived: Promise<void>; signal: () => void } {
      let signal!: () => void;
      const arrived = new Promise<void>((resolve) => (signal = resolve));
      return { arrived, signal };
    }

    it('hands every chunk, then the end, once', async () => {
      client = new UpstreamClient();
      upstream.respondWith(sseReply([{ n: 1 }, { n: 2 }, { n: 3 }], 10));
      const response = await post().response;
      const consumer = new RecordingConsumer();
      response.consume(consumer);
      await consumer.settled;
      await turn();
      expect(consumer.bytes.toString()).toBe(
        'data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\ndata: [DONE]\n\n',
      );
      expect(consumer.ends).toBe(1);
      expect(consumer.failures).toEqual([]);
    });

    it('delivers what arrived before it, in order, then the end that arrived too', async () => {
      client = new UpstreamClient();
      const ended = new Promise<void>((resolve) => {
        upstream.respondWith((_req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: 1\n\n');
          setTimeout(() => res.end('data: 2\n\n', resolve), 20);
        });
      });
      const response = await post().response;
      await ended;
      await new Promise((r) => setTimeout(r, 50));
      expect(response.bodyArrived).toBe(true);
      const consumer = new RecordingConsumer();
      response.consume(consumer);
      // Delivered within the call: everything was here already.
      expect(consumer.bytes.toString()).toBe('data: 1\n\ndata: 2\n\n');
      expect(consumer.ends).toBe(1);
    });

    it('pause holds the provider back; a new consumer takes over where it stopped, on resume', async () => {
      client = new UpstreamClient();
      const provider = largeBody();
      const response = await post().response;
      const first = new RecordingConsumer(() => response.pause());
      response.consume(first);
      await new Promise((r) => setTimeout(r, 300));
      expect(first.chunks.length).toBeGreaterThan(0);
      expect(provider.written()).toBeGreaterThan(0);
      expect(provider.written()).toBeLessThan(provider.total / 2);
      const heldBack = first.bytes.length;
      const second = new RecordingConsumer();
      response.consume(second);
      // Replaced while paused: nothing is delivered until resume.
      expect(second.chunks).toEqual([]);
      response.resume();
      await second.settled;
      await provider.done;
      expect(first.bytes.length).toBe(heldBack);
      expect(first.unsettled).toBe(true);
      expect(heldBack + second.bytes.length).toBe(provider.total);
      expect(second.ends).toBe(1);
      expect(second.failures).toEqual([]);
    });

    it('abort: the consumer hears UND_ERR_ABORTED once, the provider sees a close', async () => {
      client = new UpstreamClient();
      const closed = streamOneFrameAndHold(upstream);
      const sent = post();
      const response = await sent.response;
      const first = firstChunkSignal();
      const consumer = new RecordingConsumer(first.signal);
      response.consume(consumer);
      await first.arrived;
      sent.exchange.abort();
      sent.exchange.abort();
      await consumer.settled;
      expect(await closed).toEqual({ finished: false });
      await turn();
      expect(consumer.bytes.toString()).toBe('data: 1\n\n');
      expect(consumer.failures.map((error) => error.code)).toEqual(['UND_ERR_ABORTED']);
      expect(consumer.ends).toBe(0);
    });

    it('an abort while paused is heard when the consumer resumes', async () => {
      client = new UpstreamClient();
      const closed = streamOneFrameAndHold(upstream);
      const sent = post();
      const response = await sent.response;
      const first = firstChunkSignal();
      const consumer = new RecordingConsumer(() => {
        response.pause();
        first.signal();
      });
      response.consume(consumer);
      await first.arrived;
      sent.exchange.abort();
      expect(await closed).toEqual({ finished: false });
      await turn();
      expect(consumer.unsettled).toBe(true);
      response.resume();
      await consumer.settled;
      expect(consumer.failures.map((error) => error.code)).toEqual(['UND_ERR_ABORTED']);
    });

    it('a provider that breaks off: the chunks before the break, then an undici error', async () => {
      client = new UpstreamClient();
      upstream.respondWith((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: 1\n\n', () => setTimeout(() => res.socket?.destroy(), 20));
      });
      const response = await post().response;
      const consumer = new RecordingConsumer();
      response.consume(consumer);
      await consumer.settled;
      await turn();
      expect(consumer.bytes.toString()).toBe('data: 1\n\n');
      expect(consumer.failures).toHaveLength(1);
      expect(consumer.failures[0]!.code).toMatch(/^UND_ERR_/);
      expect(consumer.ends).toBe(0);
    });

    it('drain reads the rest unseen, so the keep-alive connection serves the next request', async () => {
      client = new UpstreamClient();
      const ports: (number | undefined)[] = [];
      const sentToTheEnd = new Promise<{ finished: boolean }>((resolve) => {
        upstream.respondWith((_req, res, raw) => {
          ports.push(raw.socket.remotePort);
          void closeOf(res).then(resolve);
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: 1\n\n');
          setTimeout(() => res.end('data: 2\n\ndata: [DONE]\n\n'), 50);
        });
      });
      const response = await post().response;
      const consumer = new RecordingConsumer(() => response.drain());
      response.consume(consumer);
      expect(await sentToTheEnd).toEqual({ finished: true });
      await turn();
      expect(consumer.bytes.toString()).toBe('data: 1\n\n');
      expect(consumer.unsettled).toBe(true);

      // The client reads the end the provider sent: its one connection is then idle, not closed.
      const idle = (): boolean => {
        const stats = client.agentFor(TIMEOUTS.connectMs).stats[upstream.url];
        return stats !== undefined && stats.connected === 1 && stats.free === 1;
      };
      for (let i = 0; i < 200 && !idle(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(idle()).toBe(true);
      upstream.respondWith((_req, res, raw) => {
        ports.push(raw.socket.remotePort);
        jsonReply(200, { ok: true })(_req, res, raw);
      });
      const next = await post().response;
      expect(JSON.parse((await collect(next)).bytes.toString('utf8'))).toEqual({ ok: true });
      expect(ports).toHaveLength(2);
      expect(ports[1]).toBe(ports[0]);
    });

    it('drain gives up a body that does not end within its grace: the provider sees a close', async () => {
      client = new UpstreamClient();
      const closed = streamOneFrameAndHold(upstream);
      const response = await post().response;
      let drainedAt = 0;
      const consumer = new RecordingConsumer(() => {
        drainedAt = performance.now();
        response.drain();
      });
      response.consume(consumer);
      expect(await closed).toEqual({ finished: false });
      // A timer never fires early: the close cannot come before the grace.
      expect(performance.now() - drainedAt).toBeGreaterThanOrEqual(990);
      await turn();
      expect(consumer.unsettled).toBe(true);
    });

    it('discard aborts the request; the consumer hears nothing more', async () => {
      client = new UpstreamClient();
      const closed = streamOneFrameAndHold(upstream);
      const response = await post().response;
      const consumer = new RecordingConsumer(() => response.discard());
      response.consume(consumer);
      expect(await closed).toEqual({ finished: false });
      await turn();
      expect(consumer.bytes.toString()).toBe('data: 1\n\n');
      expect(consumer.unsettled).toBe(true);
    });
  });
});
