/**
 * The floor proxy: the least a Node.js proxy for this traffic can do, to measure the gateway
 * against. It reads the request body, parses the JSON once (a router must find `model`), forwards
 * with an undici Pool (keep-alive, unlimited connections, as the gateway's Agent) through its
 * dispatch handler API, and writes the response back from the handler's callbacks (backpressure both
 * ways: a full client socket pauses the upstream parser). `--client request` uses undici's
 * request() and its body stream instead (the idiomatic way, and what the gateway did before; its
 * per-request objects get promoted to the old generation, see docs/performance.md).
 * Hop-by-hop headers are dropped in both directions, as any correct proxy must, and a client that
 * leaves early has its upstream request aborted. No routing table, auth, limits, metrics or logging.
 * `--spin-us N` burns N µs of CPU per request, to price a proxy's own time in the ratio.
 *
 * Run: `node bench/floor-proxy.ts --upstream http://127.0.0.1:PORT`; prints
 * `{"msg":"listening","listener":"proxy","port":N}`. Server timeouts match the gateway's defaults.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { Pool, type Dispatcher } from 'undici';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

const DROP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'content-length',
]);

function forwardable(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>) {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !DROP.has(name)) out[name] = value;
  }
  return out;
}

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    // `always` aborts the upstream request's signal on every response close, even a finished one
    // (what the gateway did when this was written); kept to measure what that costs.
    'abort-on-close': { type: 'string', default: 'unfinished' },
    // `pipeline` (default): node:stream pipeline, the idiomatic way. `pump`: hand-written
    // write/drain/end/destroy, which skips pipeline's per-call AbortController (it aborts it, with a
    // DOMException, when every pipeline finishes) and its end-of-stream bookkeeping.
    'stream-back': { type: 'string', default: 'pipeline' },
    // `dispatch` (default): undici's handler API, the response written from the handler's
    // callbacks (what the gateway does). `request`: undici's request() convenience and its body
    // stream, sent back per `--stream-back` (`--abort-on-close` applies to it).
    client: { type: 'string', default: 'dispatch' },
    // Microseconds of CPU burnt per request before it is forwarded (a busy loop, no allocation):
    // a floor that does that much more work of its own, to measure what the ratio pays for a
    // microsecond of a proxy's own time, the kernel's and the other processes' share included.
    'spin-us': { type: 'string', default: '0' },
  },
});
if (!values.upstream) throw new Error('--upstream <origin> is required');
if (values.client !== 'dispatch' && values.client !== 'request') {
  throw new Error(`--client is dispatch or request, not ${values.client}`);
}
const abortAlways = values['abort-on-close'] === 'always';
/** The longest busy loop taken: a second per request is already no proxy at all. */
const MAX_SPIN_US = 1_000_000;
const spinUs = values['spin-us'].trim() === '' ? Number.NaN : Number(values['spin-us']);
if (!Number.isFinite(spinUs) || spinUs < 0 || spinUs > MAX_SPIN_US)
  throw new Error(`--spin-us is a number of microseconds from 0 to ${MAX_SPIN_US}, not ${values['spin-us']}`);
const spinMs = spinUs / 1000;

function spin(): void {
  const until = performance.now() + spinMs;
  while (performance.now() < until);
}
const streamBack = values['stream-back'] === 'pump' ? pump : pipelineBack;

function pipelineBack(body: Readable, res: ServerResponse): void {
  pipeline(body, res, () => {});
}

/** Body to response with backpressure; a broken body cuts the response, a gone client the body. */
function pump(body: Readable, res: ServerResponse): void {
  const onData = (chunk: Buffer): void => {
    if (!res.write(chunk)) body.pause();
  };
  const onDrain = (): void => {
    body.resume();
  };
  const onClose = (): void => {
    if (!res.writableFinished) body.destroy();
  };
  body.on('data', onData);
  body.once('end', () => {
    res.off('drain', onDrain);
    res.end();
  });
  body.once('error', () => res.destroy());
  res.on('drain', onDrain);
  res.once('close', onClose);
}
const pool = new Pool(values.upstream, {
  keepAliveTimeout: 30_000,
  headersTimeout: 300_000,
  bodyTimeout: 300_000,
});

const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    if (body.length > 0) {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { model?: unknown };
        if (typeof parsed.model !== 'string') throw new Error('no model');
      } catch {
        res.writeHead(400, { 'content-length': 0 }).end();
        return;
      }
    }
    if (spinMs > 0) spin();
    const options = {
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: forwardable(req.headers),
      body: body.length > 0 ? body : null,
    };
    if (values.client === 'dispatch') forwardByDispatch(options, res);
    else forwardByRequest(options, res);
  });
});

/** Writes the provider's response from the dispatch callbacks; the client's backpressure pauses it. */
class Forward implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  #controller: Dispatcher.DispatchController | undefined;

  constructor(res: ServerResponse) {
    this.#res = res;
    // A client that left before its response finished has the upstream request aborted.
    res.once('close', () => {
      if (!res.writableFinished) this.#controller?.abort(new Error('client gone'));
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#res.destroyed) controller.abort(new Error('client gone'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode >= 200) this.#res.writeHead(statusCode, forwardable(headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#res.write(chunk)) {
      controller.pause();
      this.#res.once('drain', () => controller.resume());
    }
  }

  onResponseEnd(): void {
    this.#res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, _error: Error): void {
    if (!this.#res.headersSent) this.#res.writeHead(502, { 'content-length': 0 }).end();
    else this.#res.destroy();
  }
}

function forwardByDispatch(options: Omit<Dispatcher.RequestOptions, 'origin'>, res: ServerResponse): void {
  pool.dispatch(options, new Forward(res));
}

function forwardByRequest(options: Omit<Dispatcher.RequestOptions, 'origin'>, res: ServerResponse): void {
  const abort = new AbortController();
  // Only a client that left before its response finished needs the upstream request aborted:
  // aborting a finished one costs a DOMException (with a stack trace) and an event dispatch.
  res.once('close', () => {
    if (abortAlways || !res.writableFinished) abort.abort();
  });
  pool.request({ ...options, signal: abort.signal }).then(
    (upstream) => {
      res.writeHead(upstream.statusCode, forwardable(upstream.headers));
      streamBack(upstream.body, res);
    },
    () => {
      if (!res.headersSent) res.writeHead(502, { 'content-length': 0 }).end();
      else res.destroy();
    },
  );
}

server.keepAliveTimeout = 65_000;
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ msg: 'listening', listener: 'proxy', port })}\n`);
});
const stop = (): void => {
  server.close();
  server.closeIdleConnections();
  void pool.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
