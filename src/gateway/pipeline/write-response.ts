import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { BodyConsumer, UpstreamResponse } from '../http/upstream-exchange.js';
import type { ErrorBody } from '../../lib/errors.js';
import { forwardResponseHeaders, isEventStream, isJson, responseHeaderDrop } from '../http/headers.js';
import { ANTHROPIC_LIMIT_HEADER_NAMES, LIMIT_HEADER_NAMES } from '../limits/limit-headers.js';
import { INVALID_UPSTREAM_STATUS, invalidUpstreamResponseEvent } from '../strict/index.js';
import { anthropicErrorEvent, maskedAnthropicError } from '../anthropic/errors.js';
import { embeddedStatus } from '../api/embedded-error.js';
import { CHAT_COMPLETIONS } from '../api/surfaces.js';
import type { Attempt, AttemptDeps } from './attempt.js';
import type { RequestContext } from './context.js';
import { ServedJson, ServedStream } from './served-body.js';
import { streamEnding, type StreamEnd, type StreamEnding } from './stream-end.js';
import { UsageChunkFilter } from './usage-chunk-filter.js';

/**
 * The writers of a committed response: after `Attempt.commit()`, they write the client's head and
 * body (passed through, re-emitted, or the gateway's JSON) and decide how it ends. Nothing here
 * decides whether to commit.
 */

type UpstreamHeaders = UpstreamResponse['headers'];

/** Names the request fields a translation to chat completions dropped (`translation.ts`). */
const TRANSLATION_DROPPED_HEADER = 'x-gateway-translation-dropped';

/** The sentinel of a `data: [DONE]` line. */
const DONE_TOKEN = Buffer.from('[DONE]');

/** Bytes of an upstream error body kept for the debug log (never forwarded to untrusted clients). */
const ERROR_LOG_BYTES = 2_048;

/** The provider headers a rewritten body cannot carry: its framing, encoding and validator. */
const REWRITTEN_DROP = ['content-length', 'content-encoding', 'etag'];
/**
 * The provider headers a committed head leaves out, by what replaces them: bit 1 a rewritten body,
 * bit 2 the gateway's own limit headers, bit 4 (with 2) an Anthropic client's limit headers too.
 */
const HEAD_DROP: readonly ReadonlySet<string>[] = Array.from({ length: 8 }, (_, bits) =>
  responseHeaderDrop([
    ...(bits & 1 ? REWRITTEN_DROP : []),
    ...(bits & 2 ? LIMIT_HEADER_NAMES : []),
    ...(bits & 4 ? ANTHROPIC_LIMIT_HEADER_NAMES : []),
  ]),
);

/** What the gateway sends instead of the provider's body: its content type and length, when known. */
export interface RewrittenBody {
  readonly contentType?: string;
  readonly length?: number;
}

/**
 * The one writer of a committed response's head, whatever follows it (the provider's body passed
 * through, re-emitted events, a body the gateway wrote, or nothing before a cut): the provider's
 * headers that may be forwarded (none when the gateway answers alone), the gateway's request id
 * (the provider's under another name), the entry's configured response headers and the rate-limit
 * headers. A rewritten body drops the provider's framing and validators.
 */
export function writeCommittedHead(
  ctx: RequestContext,
  attempt: Attempt,
  status: number,
  upstream: UpstreamHeaders | undefined,
  rewritten: RewrittenBody | undefined,
): void {
  const limitHeaders = ctx.limitHeaders;
  // The client is told the gateway's limits, never half of them beside the provider's own (or
  // beside configured ones); a rewritten body drops the provider's framing and validators.
  const ownLimits = limitHeaders === undefined ? 0 : ctx.surface?.errorShape === 'anthropic' ? 6 : 2;
  const drop = HEAD_DROP[(rewritten === undefined ? 0 : 1) | ownLimits]!;
  const headers: OutgoingHttpHeaders = upstream === undefined ? {} : forwardResponseHeaders(upstream, drop);
  // The client gets the gateway's request id; the provider's own (which its support asks for) stays
  // readable under another name.
  const upstreamId = headers['x-request-id'];
  if (upstreamId !== undefined && upstreamId !== ctx.requestId) headers['x-upstream-request-id'] = upstreamId;
  headers['x-request-id'] = ctx.requestId;
  if (rewritten !== undefined) {
    if (rewritten.contentType !== undefined) headers['content-type'] = rewritten.contentType;
    if (rewritten.length !== undefined) headers['content-length'] = rewritten.length;
  }
  // What a translation dropped is said, never silent (fields a chat provider cannot honour).
  if (attempt.mode.kind === 'translated' && ctx.translation!.dropped !== '')
    headers[TRANSLATION_DROPPED_HEADER] = ctx.translation!.dropped;
  // The provider entry's configured response headers, then the gateway's rate-limit headers.
  for (const [name, value] of attempt.provider.responseHeaders)
    if (ownLimits === 0 || !HEAD_DROP[ownLimits]!.has(name)) headers[name] = value;
  if (limitHeaders !== undefined) Object.assign(headers, limitHeaders);
  ctx.res.writeHead(status, headers);
}

/**
 * Ends a response with a body error (no terminating chunk: the client sees a broken transfer, never a
 * clean end), but only after everything already written has reached the socket. Destroying at once
 * would drop the frames and even the headers still corked in this tick.
 */
function cutResponse(res: ServerResponse): void {
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
 * inspecting it (`prefix`), straight from undici's callbacks, with backpressure both ways (a full
 * client socket pauses the provider). If the provider's body breaks, the client's response is cut
 * (a transport error, never a clean end). A client that leaves aborts the provider request (the
 * attempt hears of it as the request's abandon listener).
 */
export function passThrough(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  prefix: readonly Buffer[],
  deps: AttemptDeps,
  served?: ServedStream,
): void {
  const { res } = ctx;
  writeCommittedHead(ctx, attempt, response.statusCode, response.headers, undefined);
  // An event stream's head goes out at once: the client learns the answer started even if the
  // provider then stalls (and the request is not counted as served with nothing sent). When body
  // bytes are already here, they are written in this tick and carry the head in the same write
  // (one packet: the client's first byte is not held behind a separate head).
  if (prefix.length === 0 && !response.bodyArrived && isEventStream(response.headers['content-type'])) {
    res.flushHeaders();
  }
  const forward = new ForwardToClient(ctx, attempt, response, deps);
  if (ctx.usageInjected && response.statusCode < 300 && isEventStream(response.headers['content-type'])) {
    forward.filter(new UsageChunkFilter());
  }
  if (served !== undefined) {
    forward.read(served);
  } else if (response.statusCode < 300) {
    const contentType = response.headers['content-type'];
    if (isEventStream(contentType)) forward.read(new ServedStream(ctx.surface, prefix));
    else if (isJson(contentType)) forward.read(new ServedJson(prefix));
  }
  if (!forward.writeHeld(prefix)) return;
  response.consume(forward);
  response.resume();
}

/**
 * What every consumer of a committed response's body works with: the request (and its client
 * response), the attempt that serves it, the provider's response, and the logger and metrics.
 */
abstract class ClientBodyWriter implements BodyConsumer {
  protected readonly ctx: RequestContext;
  protected readonly attempt: Attempt;
  protected readonly response: UpstreamResponse;
  protected readonly deps: AttemptDeps;

  constructor(ctx: RequestContext, attempt: Attempt, response: UpstreamResponse, deps: AttemptDeps) {
    this.ctx = ctx;
    this.attempt = attempt;
    this.response = response;
    this.deps = deps;
  }

  abstract bodyData(chunk: Buffer): void;
  abstract bodyEnded(): void;
  abstract bodyFailed(error: Error): void;

  #onDrain: (() => void) | undefined;

  /** Writes to the client; a full socket holds the provider back until it drains. */
  protected write(data: string | Buffer): void {
    if (this.ctx.res.write(data)) return;
    this.response.pause();
    this.#onDrain ??= () => this.response.resume();
    this.ctx.res.once('drain', this.#onDrain);
  }
}

/**
 * The consumer of a passed-through body: each chunk written to the client as it arrives, and shown
 * to the reader of a 2xx body (`served-body.ts`), which tells at its end how the provider's stream
 * ended (`stream-end.ts` decides what follows: an error event is the stream's last word, a stream
 * without its end marker was cut) or whether a JSON body was an error inside the 200.
 */
class ForwardToClient extends ClientBodyWriter {
  #served: ServedStream | ServedJson | undefined;
  #filter: UsageChunkFilter | undefined;

  read(served: ServedStream | ServedJson): void {
    this.#served = served;
  }

  /** Removes the usage-only chunk the gateway asked for (the served-body reader still sees it). */
  filter(filter: UsageChunkFilter): void {
    this.#filter = filter;
  }

  /**
   * The chunks read before the commit point (already seen by the reader that held them). False when
   * they hold an error event: the response ended there.
   */
  writeHeld(chunks: readonly Buffer[]): boolean {
    const served = this.#served;
    const endsAtError = served instanceof ServedStream && served.errorSeen();
    // Strict mode replaces an untrusted provider's error event: the chunk that holds it ends here.
    const stopAt = this.#masksErrors() ? ERROR_KEY : DONE_TOKEN;
    for (const chunk of chunks) {
      if (endsAtError && chunk.includes(stopAt)) {
        this.#endAtError(served, chunk);
        return false;
      }
      const out = this.#filtered(chunk);
      if (out.length > 0) this.ctx.res.write(out);
    }
    if (!endsAtError) return true;
    this.#endAtError(served, EMPTY);
    return false;
  }

  /** What of `chunk` goes to the client: all of it, or all but the usage-only chunk. */
  #filtered(chunk: Buffer): Buffer {
    return this.#filter === undefined ? chunk : this.#filter.push(chunk);
  }

  bodyData(chunk: Buffer): void {
    const served = this.#served;
    served?.push(chunk);
    if (served instanceof ServedStream && served.errorSeen()) {
      this.#endAtError(served, chunk);
      return;
    }
    const out = this.#filtered(chunk);
    if (out.length > 0) this.write(out);
  }

  /**
   * An error event is the stream's last word: the chunk that carries it goes out up to any `[DONE]`
   * after it (which would tell a client the answer completed), and the response ends there. The
   * rest is read unseen, so the connection can be kept.
   */
  /** Strict mode words an untrusted provider's errors itself (a Messages stream passed through). */
  #masksErrors(): boolean {
    return this.ctx.strictEndpoint !== undefined && !this.attempt.provider.trusted;
  }

  #endAtError(served: ServedStream, chunk: Buffer): void {
    const ctx = this.ctx;
    if (this.#masksErrors()) {
      // Strict mode words an untrusted provider's error itself (a Messages stream passed through):
      // what came before the error event goes out, then strict mode's event in its place.
      const out = this.#filtered(chunk.subarray(0, errorEventStart(chunk)));
      if (out.length > 0) ctx.res.write(out);
      ctx.res.write(maskedErrorEvent(embeddedStatus(served.error)));
    } else {
      const done = ctx.surface?.endEvent === undefined ? chunk.indexOf(DONE_TOKEN) : -1;
      // The `[DONE]` line starts after the last line end before the token.
      const head = done < 0 ? chunk : chunk.subarray(0, chunk.lastIndexOf(0x0a, done) + 1);
      const out = this.#filtered(head);
      if (out.length > 0) ctx.res.write(out);
    }
    this.response.drain();
    this.#endStream(served, 'error_event', true);
  }

  bodyEnded(): void {
    const served = this.#served;
    const ctx = this.ctx;
    const rest = this.#filter?.end();
    if (rest !== undefined) ctx.res.write(rest);
    if (served instanceof ServedStream) {
      const end = STREAM_ENDS[served.streamEnd()];
      this.#endStream(served, end === 'unterminated' && served.endsInsideEvent() ? 'incomplete' : end, true);
      return;
    }
    // An error inside the 200 reports no usage.
    const errorInside = served?.isError() === true;
    if (errorInside) ctx.endedAs('upstream_error');
    ctx.served?.bodyDone(undefined, errorInside ? undefined : served?.usage());
    ctx.res.end();
  }

  bodyFailed(error: Error): void {
    const served = this.#served;
    // A client that left aborted the request: there is nobody to tell.
    if (this.ctx.isClosed) {
      this.ctx.served?.bodyDone(served instanceof ServedStream ? served.firstDataAt : undefined, undefined);
      return;
    }
    logBodyFailure(this.ctx, this.attempt, error, this.deps);
    if (served instanceof ServedStream) {
      // A half-sent event takes no event after it: such a stream can only be cut.
      this.#endStream(served, served.endsInsideEvent() ? 'incomplete' : 'broken', false);
      return;
    }
    this.ctx.served?.bodyDone(undefined, undefined);
    endStreamAs(this.ctx, this.attempt, streamEnding(this.ctx.surface, 'raw', 'broken'));
  }

  /**
   * A passed-through stream ended as `end`: its first token and (when its body was read to its end)
   * its usage are recorded, and the ending carried out.
   */
  #endStream(served: ServedStream, end: StreamEnd, readToEnd: boolean): void {
    const ctx = this.ctx;
    // A stream passed through in strict mode (a Messages answer of a provider that speaks the API)
    // ends as strict mode ends a broken stream: with its error event.
    const ending = streamEnding(ctx.surface, ctx.strictEndpoint === undefined ? 'raw' : 'strict', end);
    ctx.served?.bodyDone(served.firstDataAt, readToEnd ? served.usage() : undefined);
    endStreamAs(ctx, this.attempt, ending);
  }
}

/** How the passed-through stream reader's verdict reads as a stream end. */
const STREAM_ENDS: Readonly<Record<ReturnType<ServedStream['streamEnd']>, StreamEnd>> = {
  error: 'error_event',
  done: 'complete',
  // Inside an event or at a boundary: both are a cut where the surface has an end marker.
  other: 'unterminated',
};

const EMPTY = Buffer.alloc(0);

/**
 * Carries out a stream's ending (`stream-end.ts`) on the client's response: the outcome and the
 * provider's failure are recorded, and the response ends cleanly, is cut, or gets the gateway's
 * error event for a broken stream first.
 */
export function endStreamAs(ctx: RequestContext, attempt: Attempt, ending: StreamEnding): void {
  if (ending.outcome !== undefined) ctx.endedAs(ending.outcome);
  if (ending.providerFailed) attempt.cut();
  switch (ending.client) {
    case 'end':
      ctx.res.end();
      return;
    case 'error_event':
      ctx.res.end(brokenStreamEvent(ctx));
      return;
    case 'cut':
      cutResponse(ctx.res);
      return;
  }
}

/** Where the error event in `chunk` starts: its `event: error` line, else the event holding `"error"`. */
function errorEventStart(chunk: Buffer): number {
  const named = chunk.indexOf(ERROR_EVENT_LINE);
  if (named >= 0) return named;
  const key = chunk.indexOf(ERROR_KEY);
  if (key < 0) return 0;
  const boundary = chunk.lastIndexOf(EVENT_BOUNDARY, key);
  return boundary < 0 ? 0 : boundary + EVENT_BOUNDARY.length;
}

const ERROR_EVENT_LINE = Buffer.from('event: error');
const ERROR_KEY = Buffer.from('"error"');
const EVENT_BOUNDARY = Buffer.from('\n\n');

/** Strict mode's error event for an untrusted provider's error in a Messages stream. */
function maskedErrorEvent(status: number): string {
  return `event: error\ndata: ${JSON.stringify(maskedAnthropicError(status))}\n\n`;
}

/** The error event that tells a client of a re-emitted stream that the provider cut it short. */
function brokenStreamEvent(ctx: RequestContext): string {
  return ctx.surface?.errorShape === 'anthropic' ? BROKEN_MESSAGES_STREAM : invalidUpstreamResponseEvent();
}

const BROKEN_MESSAGES_STREAM = anthropicErrorEvent(
  INVALID_UPSTREAM_STATUS,
  'The upstream provider ended the stream before it was complete.',
);

/**
 * A stream the gateway re-emits (sanitized, or translated to the client's API): the provider's
 * bytes in, the client's events out, and a state that says how the provider's stream ended.
 */
export interface ReEmittedStream {
  push(chunk: Buffer): ReEmittedStep;
  end(): ReEmittedStep;
  readonly state: string;
}

export interface ReEmittedStep {
  /** Text to write to the client now. */
  readonly output: string;
  /** `open`, a terminal state, or at the end `clean` (no end marker) or `incomplete` (inside an event). */
  readonly state: 'open' | 'done' | 'error_event' | 'overflow' | 'clean' | 'incomplete';
  readonly overflow?: { readonly pendingBytes: number; readonly limit: number };
}

/** The provider's body failed after the commit: counted and logged at warn (never its content). */
function logBodyFailure(ctx: RequestContext, attempt: Attempt, error: Error, deps: AttemptDeps): void {
  const timeout = attempt.noteTimeout(error);
  deps.metrics.upstreamErrors.inc({
    model: ctx.modelLabel,
    reason: timeout === undefined ? 'body' : `${timeout}_timeout`,
  });
  deps.logger.warn(
    timeout === undefined
      ? { model: ctx.modelLabel, provider: attempt.provider.name, err: error.message }
      : { model: ctx.modelLabel, provider: attempt.provider.name, timeout: `${timeout}_ms` },
    'upstream response body failed after the response started; client response cut',
  );
}

/** An unfinished SSE event outgrew `--sse-buffer-limit`: the stream is cut, and said so at warn. */
export function logOverflow(
  ctx: RequestContext,
  attempt: Attempt,
  logger: AttemptDeps['logger'],
  overflow: { readonly limit: number; readonly pendingBytes?: number },
): void {
  logger.warn(
    { model: ctx.modelLabel, provider: attempt.provider.name, ...overflow },
    'unfinished SSE event exceeded --sse-buffer-limit; stream cut',
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
  writeCommittedHead(ctx, attempt, status, upstream, { contentType: 'text/event-stream; charset=utf-8' });
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
  writeCommittedHead(ctx, attempt, status, upstream, {
    contentType: 'application/json',
    length: Buffer.byteLength(body),
  });
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
  response: UpstreamResponse,
  deps: AttemptDeps,
): void {
  if (!deps.logger.isLevelEnabled('debug')) {
    response.discard();
    return;
  }
  response.consume(new ErrorBodyLog(ctx, attempt, status, response, deps));
}

/** Collects the start of an error body, then logs it (with the provider's key redacted). */
class ErrorBodyLog extends ClientBodyWriter {
  readonly #status: number;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #logged = false;

  constructor(
    ctx: RequestContext,
    attempt: Attempt,
    status: number,
    response: UpstreamResponse,
    deps: AttemptDeps,
  ) {
    super(ctx, attempt, response, deps);
    this.#status = status;
  }

  bodyData(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size < ERROR_LOG_BYTES) return;
    this.bodyEnded();
    this.response.discard();
  }

  bodyEnded(): void {
    if (this.#logged) return;
    this.#logged = true;
    let text = Buffer.concat(this.#chunks).subarray(0, ERROR_LOG_BYTES).toString('utf8');
    // A provider may echo the credential it was sent ("Incorrect API key provided: ...").
    const secret = this.attempt.provider.gatewayKey;
    if (secret !== undefined && secret.length > 0) text = text.split(secret).join('[redacted]');
    this.deps.logger.debug(
      {
        model: this.ctx.modelLabel,
        provider: this.attempt.provider.name,
        status: this.#status,
        upstreamBody: text,
      },
      'upstream error response (replaced for the client)',
    );
  }

  bodyFailed(): void {
    this.bodyEnded();
  }
}

/**
 * Streams a transformed (sanitized) SSE response after the commit point: every upstream chunk goes
 * through the transform, its output is written with backpressure, and the transform's state decides
 * how the stream ends. A `[DONE]` reaches the client only if the provider sent one. The body was
 * paused at the commit point; the pump takes it from there, unless the upstream has ended already
 * or the transform reached its end in what was read before (then only the end rules apply).
 */
export function pumpTransformed(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  transform: ReEmittedStream,
  upstreamEnded: boolean,
  deps: AttemptDeps,
  served: ServedStream,
): void {
  const pump = new TransformPump(ctx, attempt, response, transform, deps, served);
  if (upstreamEnded || transform.state !== 'open') {
    pump.bodyEnded();
    return;
  }
  ctx.res.once('close', () => pump.clientClosed());
  response.consume(pump);
  response.resume();
}

/**
 * The consumer of a transformed stream's body: each chunk is transformed and written from
 * undici's callback, with no stream or per-chunk closure in between (this runs once per event).
 */
class TransformPump extends ClientBodyWriter {
  readonly #transform: ReEmittedStream;
  /** The provider's bytes as they arrive: its usage and first token (the transform judges the end). */
  readonly #served: ServedStream;
  #finished = false;

  constructor(
    ctx: RequestContext,
    attempt: Attempt,
    response: UpstreamResponse,
    transform: ReEmittedStream,
    deps: AttemptDeps,
    served: ServedStream,
  ) {
    super(ctx, attempt, response, deps);
    this.#transform = transform;
    this.#served = served;
  }

  bodyData(chunk: Buffer): void {
    this.#served.push(chunk);
    this.#apply(this.#transform.push(chunk));
  }

  bodyEnded(): void {
    this.#apply(this.#transform.end());
  }

  bodyFailed(error: Error): void {
    if (this.#finished || this.ctx.isClosed) return;
    logBodyFailure(this.ctx, this.attempt, error, this.deps);
    this.#end('broken');
  }

  clientClosed(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.ctx.served?.bodyDone(this.#served.firstDataAt, this.#served.usage());
    this.response.discard();
    cutResponse(this.ctx.res);
    this.attempt.release();
  }

  #apply(step: ReEmittedStep): void {
    if (this.#finished) return;
    if (step.output.length > 0) this.write(step.output);
    if (step.state === 'open') return;
    if (step.state === 'overflow') logOverflow(this.ctx, this.attempt, this.deps.logger, step.overflow!);
    this.#end(TRANSFORM_ENDS[step.state]);
  }

  /**
   * The stream ended as `end`: its usage and first token are recorded, the ending carried out, and
   * the provider's response let go (drained when the client's stream ended cleanly, so the
   * connection can be kept; dropped otherwise).
   */
  #end(end: StreamEnd): void {
    this.#finished = true;
    const ctx = this.ctx;
    const mode = this.attempt.mode.kind;
    // A translated stream is judged in the provider's framing (chat completions).
    const ending =
      mode === 'translated'
        ? streamEnding(CHAT_COMPLETIONS, 'translated', end)
        : streamEnding(ctx.surface, mode === 'strict' ? 'strict' : 'standalone', end);
    ctx.served?.bodyDone(this.#served.firstDataAt, this.#served.usage());
    if (ending.client === 'cut') this.response.discard();
    else this.response.drain();
    endStreamAs(ctx, this.attempt, ending);
    this.attempt.release();
  }
}

/** How the re-emitting transform's terminal states read as a stream end. */
const TRANSFORM_ENDS: Readonly<Record<Exclude<ReEmittedStep['state'], 'open'>, StreamEnd>> = {
  done: 'complete',
  error_event: 'error_event',
  clean: 'unterminated',
  incomplete: 'incomplete',
  overflow: 'overflow',
};
