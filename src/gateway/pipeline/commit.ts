import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { BodyConsumer, UpstreamResponse } from '../http/upstream-exchange.js';
import type { ErrorBody } from '../../lib/errors.js';
import { forwardResponseHeaders, isEventStream } from '../http/headers.js';
import { invalidUpstreamResponseEvent, type SseSanitizeTransform, type SseStep } from '../strict/index.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import type { Attempt } from './attempt.js';
import { discard } from './read-upstream.js';
import type { RequestContext } from './context.js';

export interface CommitDeps {
  logger: Logger;
  metrics: GatewayMetrics;
}

type UpstreamHeaders = UpstreamResponse['headers'];

/** Bytes of an upstream error body kept for the debug log (never forwarded to untrusted clients). */
const ERROR_LOG_BYTES = 2_048;

/**
 * The provider's headers minus hop-by-hop fields, with the configured `response_headers` on top
 * (provider values already merged over the pool's). A transformed body drops the framing and
 * encoding headers of the original.
 */
function headersFor(attempt: Attempt, upstream: UpstreamHeaders, transformed: boolean): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = forwardResponseHeaders(upstream);
  if (transformed) {
    delete headers['content-length'];
    delete headers['content-encoding'];
    delete headers.etag;
  }
  for (const [name, value] of attempt.provider.responseHeaders) headers[name] = value;
  return headers;
}

/**
 * Ends a response with a body error (no terminating chunk: the client sees a broken transfer, never a
 * clean end), but only after everything already written has reached the socket. Destroying at once
 * would drop the frames and even the headers still corked in this tick.
 */
export function cutResponse(res: ServerResponse): void {
  if (res.destroyed) return;
  const socket = res.socket;
  if (!res.headersSent || !socket) {
    res.destroy();
    return;
  }
  res.flushHeaders();
  // Socket writes complete in order: this callback runs once the earlier bytes are flushed.
  socket.write('', () => res.destroy());
}

/**
 * Sends the provider's response to the client unchanged after the bytes already read while
 * inspecting it, with backpressure both ways (a full client socket pauses the provider). A body
 * nobody has read yet is forwarded straight from undici's callbacks; one already read from is
 * piped. If the provider's body breaks, the client's response is cut (a transport error, never a
 * clean end); if the client goes away, the upstream request is aborted.
 */
export function passThrough(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  prefix: readonly Buffer[],
  deps: CommitDeps,
): void {
  const { res } = ctx;
  res.writeHead(response.statusCode, headersFor(attempt, response.headers, false));
  // An event stream's head goes out at once: the client learns the answer started even if the
  // provider then stalls (and the request is not counted as served with nothing sent). When body
  // bytes are already here, they are written in this tick and carry the head in the same write
  // (one packet: the client's first byte is not held behind a separate head).
  if (prefix.length === 0 && !response.bodyArrived && isEventStream(response.headers['content-type'])) {
    res.flushHeaders();
  }
  for (const chunk of prefix) res.write(chunk);
  const bodyFailed = (error: Error): void => {
    if (ctx.isClosed) return;
    upstreamBodyFailed(ctx, attempt, error, deps);
    cutResponse(res);
  };
  if (response.forwardTo(res, bodyFailed)) return;
  const body = response.body;
  if (body.errored) {
    bodyFailed(body.errored);
    return;
  }
  body.on('error', (error: Error) => {
    body.unpipe(res);
    bodyFailed(error);
  });
  res.once('close', () => {
    if (!body.readableEnded) discard(body);
  });
  body.pipe(res);
}

function upstreamBodyFailed(ctx: RequestContext, attempt: Attempt, error: Error, deps: CommitDeps): void {
  deps.metrics.upstreamErrors.inc({ model: ctx.model, reason: 'body' });
  deps.logger.warn(
    { model: ctx.model, provider: attempt.provider.name, err: error.message },
    'upstream response body failed after the response started; client response cut',
  );
}

/**
 * Starts a re-emitted (sanitized) event stream with the output held up to its commit point. That
 * output carries the head in the same write (one packet for the client's first byte); with none,
 * the head is flushed on its own, so the client learns the answer started.
 */
export function startTransformedStream(
  ctx: RequestContext,
  attempt: Attempt,
  status: number,
  upstream: UpstreamHeaders,
  held: string,
): void {
  const headers = headersFor(attempt, upstream, true);
  headers['content-type'] = 'text/event-stream; charset=utf-8';
  ctx.res.writeHead(status, headers);
  if (held.length > 0) ctx.res.write(held);
  else ctx.res.flushHeaders();
}

/** Answers a JSON body the gateway produced (sanitized success or standard error). */
export function answerJson(
  ctx: RequestContext,
  attempt: Attempt,
  status: number,
  upstream: UpstreamHeaders | undefined,
  body: string | Buffer,
): void {
  const headers = upstream === undefined ? {} : headersFor(attempt, upstream, true);
  headers['content-type'] = 'application/json';
  headers['content-length'] = Buffer.byteLength(body);
  if (upstream === undefined)
    for (const [name, value] of attempt.provider.responseHeaders) headers[name] = value;
  ctx.res.writeHead(status, headers);
  ctx.res.end(body);
}

export function answerError(ctx: RequestContext, attempt: Attempt, status: number, body: ErrorBody): void {
  answerJson(ctx, attempt, status, undefined, JSON.stringify(body));
}

/**
 * A provider's error body is read (bounded) only to log it at debug level, then dropped: upstream
 * error details never reach an untrusted client and never appear in logs at info.
 */
export function logAndDropErrorBody(
  ctx: RequestContext,
  attempt: Attempt,
  status: number,
  body: Readable,
  deps: CommitDeps,
): void {
  if (!deps.logger.isLevelEnabled('debug')) {
    discard(body);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  body.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= ERROR_LOG_BYTES) body.destroy();
  });
  body.on('error', () => {});
  body.once('close', () => {
    let text = Buffer.concat(chunks).subarray(0, ERROR_LOG_BYTES).toString('utf8');
    // A provider may echo the credential it was sent ("Incorrect API key provided: ...").
    const secret = attempt.provider.gatewayKey;
    if (secret !== undefined && secret.length > 0) text = text.split(secret).join('[redacted]');
    deps.logger.debug(
      { model: ctx.model, provider: attempt.provider.name, status, upstreamBody: text },
      'upstream error response (replaced for the client)',
    );
  });
}

/**
 * Streams a transformed (sanitized) SSE response after the commit point: every upstream chunk goes
 * through the transform, its output is written with backpressure, and the transform's state decides
 * how the stream ends. A `[DONE]` reaches the client only if the provider sent one. The body was
 * paused at the commit point; the pump takes it from there.
 */
export function pumpTransformed(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  transform: SseSanitizeTransform,
  deps: CommitDeps,
): void {
  if (ctx.isClosed) {
    // The client left between the commit point and here.
    response.discard();
    attempt.release();
    return;
  }
  const pump = new TransformPump(ctx, attempt, response, transform, deps);
  ctx.res.once('close', () => pump.clientClosed());
  response.consume(pump);
  response.resume();
}

/**
 * The consumer of a transformed stream's body: each chunk is transformed and written from
 * undici's callback, with no stream or per-chunk closure in between (this runs once per event).
 */
class TransformPump implements BodyConsumer {
  readonly #ctx: RequestContext;
  readonly #attempt: Attempt;
  readonly #response: UpstreamResponse;
  readonly #transform: SseSanitizeTransform;
  readonly #deps: CommitDeps;
  #finished = false;

  constructor(
    ctx: RequestContext,
    attempt: Attempt,
    response: UpstreamResponse,
    transform: SseSanitizeTransform,
    deps: CommitDeps,
  ) {
    this.#ctx = ctx;
    this.#attempt = attempt;
    this.#response = response;
    this.#transform = transform;
    this.#deps = deps;
  }

  bodyData(chunk: Buffer): void {
    this.#apply(this.#transform.push(chunk));
  }

  bodyEnded(): void {
    this.#apply(this.#transform.end());
  }

  bodyFailed(error: Error): void {
    if (this.#finished || this.#ctx.isClosed) return;
    upstreamBodyFailed(this.#ctx, this.#attempt, error, this.#deps);
    if (this.#attempt.mode.kind === 'strict') {
      // Strict clients get an error event they can act on; no `[DONE]` follows it.
      this.#ctx.res.write(invalidUpstreamResponseEvent());
      this.#finish('end');
    } else {
      this.#finish('destroy');
    }
  }

  clientClosed(): void {
    this.#finish('destroy');
  }

  #apply(step: SseStep | ReturnType<SseSanitizeTransform['end']>): void {
    if (this.#finished) return;
    const res = this.#ctx.res;
    if (step.output.length > 0 && !res.write(step.output)) {
      const response = this.#response;
      response.pause();
      res.once('drain', () => response.resume());
    }
    switch (step.state) {
      case 'open':
        return;
      case 'done':
      case 'error_event':
      case 'clean':
        this.#finish('end');
        return;
      case 'overflow':
        this.#deps.logger.warn(
          { model: this.#ctx.model, provider: this.#attempt.provider.name, ...step.overflow },
          'unfinished SSE event exceeded --sse-buffer-limit; stream cut',
        );
        this.#finish('destroy');
        return;
      case 'incomplete':
        this.#finish('destroy');
        return;
    }
  }

  #finish(how: 'end' | 'destroy'): void {
    if (this.#finished) return;
    this.#finished = true;
    if (how === 'end') {
      // The stream is complete for the client; the rest of the body only returns the connection.
      this.#response.drain();
      this.#ctx.res.end();
    } else {
      this.#response.discard();
      cutResponse(this.#ctx.res);
    }
    this.#attempt.release();
  }
}
