import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { errors, type Dispatcher } from 'undici';

/** Same high-water mark as undici's own response bodies. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

/** Called when a forwarded body breaks (after `forwardTo`); the caller decides how to end the client's response. */
export type ForwardFailure = (error: Error) => void;

/**
 * Takes a body chunk by chunk, straight from undici's callbacks (`UpstreamResponse.consume`).
 * After `bodyEnded` or `bodyFailed` nothing more is delivered.
 */
export interface BodyConsumer {
  /** The next chunk. The consumer may `pause()` the response here: nothing follows until `resume()`. */
  bodyData(chunk: Buffer): void;
  bodyEnded(): void;
  /** The body broke (undici's error), or the exchange was aborted (`UND_ERR_ABORTED`). */
  bodyFailed(error: Error): void;
}

/** How long a body given up by `drain()` may take to reach its end before its connection is dropped. */
const DRAIN_GRACE_MS = 1_000;

/**
 * A provider's answer: status and headers, and its body, taken one of three ways (once):
 * `body`, a stream (backpressure reaches the socket); `forwardTo(res)`, which writes the body
 * to a client response straight from undici's callbacks, without a stream in between; or
 * `consume(consumer)`, which hands each chunk to a callback, also without a stream (a stream costs
 * a buffer, a `data` event and a resume per chunk: for a re-emitted event stream, every event).
 */
export class UpstreamResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly #exchange: UpstreamExchange;

  constructor(exchange: UpstreamExchange, statusCode: number, headers: IncomingHttpHeaders) {
    this.#exchange = exchange;
    this.statusCode = statusCode;
    this.headers = headers;
  }

  /**
   * Body bytes (or the body's end) arrived with the head and wait to be taken: whoever takes the
   * body now writes something at once.
   */
  get bodyArrived(): boolean {
    return this.#exchange.bodyArrived;
  }

  /** The body as a stream (created on first use). */
  get body(): Readable {
    return this.#exchange.bodyStream();
  }

  /**
   * Writes the rest of the body to `res` (which has its head already) and ends it, pausing the
   * provider while `res` is full. False when the body has been taken as a stream already; the
   * caller then pipes it. After true: a broken body is reported to `onFailure` (nothing more is
   * written). A client that leaves first is the caller's to notice: it aborts the exchange (the
   * gateway's attempt does, on the request's abandon), and an aborted forward reports no failure.
   */
  forwardTo(res: ServerResponse, onFailure: ForwardFailure): boolean {
    return this.#exchange.forward(res, onFailure);
  }

  /**
   * Hands the body to `consumer`, chunk by chunk; what arrived before is delivered at once (unless
   * paused). A later call replaces the consumer: the chunks not delivered yet, and the body's end,
   * go to the new one. Throws when the body was taken as a stream or forwarded.
   */
  consume(consumer: BodyConsumer): void {
    this.#exchange.consume(consumer);
  }

  /** Stops deliveries to the consumer, holding the provider back, until `resume()`. */
  pause(): void {
    this.#exchange.pauseConsumer();
  }

  /** Delivers what was held back, then lets the provider's data flow again. */
  resume(): void {
    this.#exchange.resumeConsumer();
  }

  /**
   * The consumer is done with a body that may not have ended (after `[DONE]` or an error event):
   * the rest is read and dropped so its keep-alive connection goes back to the pool, unless that
   * takes longer than a short grace, when the request is aborted. The consumer hears nothing more.
   */
  drain(): void {
    this.#exchange.drainConsumed();
  }

  /** The consumer drops the body: the request is aborted and the consumer hears nothing more. */
  discard(): void {
    this.#exchange.discardConsumed();
  }
}

/** The consumer of a body nobody reads any more. */
const IGNORE_BODY: BodyConsumer = { bodyData() {}, bodyEnded() {}, bodyFailed() {} };

/**
 * Told how a request to a provider went up to its response head: exactly one of the two is called,
 * once, always after `send` has returned (never from inside undici's parser).
 */
export interface HeadListener {
  /** The response head arrived (1xx answers are skipped); its body is to be taken from `response`. */
  headArrived(response: UpstreamResponse): void;
  /** No response head: undici's error (connection refused or lost, timeout, `UND_ERR_ABORTED`). */
  headFailed(error: Error): void;
}

/**
 * One request to a provider, driven through undici's `dispatch` (the handler API) instead of its
 * `request` convenience: the listener hears of the status and headers, then the body arrives
 * through the callbacks below, into whichever way the reader took it.
 *
 * Why not `Agent.request`: its handler keeps a per-request arrow function over the dispatch
 * controller, and with it every request's objects (client request, response, streams) outlive
 * two young-generation collections and are promoted to the old generation, about 5 KB per
 * request. Each collection then copies megabytes and pauses the process for milliseconds
 * (docs/performance.md, "Where the tail came from"). This handler keeps no closure over the
 * controller: the body reaches it through its own fields, and aborting is a method call.
 *
 * Why a listener rather than a promise of the head: a request waiting for its provider then holds
 * no promise, no resolve and reject functions and no suspended async function, only this object
 * and its listener: less to allocate and less to keep alive per request in flight.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler {
  readonly #listener: HeadListener;
  #controller: Dispatcher.DispatchController | undefined;
  #aborted = false;
  #settled = false;
  /** Body chunks that arrived before the reader chose a way to take the body. */
  #early: Buffer[] = [];
  #earlyBytes = 0;
  /** The body ended (true) or failed (an error) before the reader chose. */
  #earlyEnd: true | Error | undefined;

  #body: UpstreamBody | undefined;
  #sink: ServerResponse | undefined;
  #onSinkFailure: ForwardFailure | undefined;
  #sinkDone = false;

  #consumer: BodyConsumer | undefined;
  /** The consumer asked for no deliveries: chunks, and the end, wait in `#early` and `#earlyEnd`. */
  #consumerPaused = false;
  /** The consumer has heard the body's end or failure. */
  #consumerFinished = false;
  /** undici is done with the body (ended or failed): it can no longer be aborted. */
  #bodyComplete = false;
  #drainTimer: NodeJS.Timeout | undefined;

  constructor(listener: HeadListener) {
    this.#listener = listener;
  }

  /**
   * Gives the request up: before the response head the listener hears `UND_ERR_ABORTED`,
   * afterwards the body fails with that error (a stream is destroyed with it; a consumer hears it,
   * at once or when it resumes; a forward stops writing and reports nothing, its client being
   * gone). Idempotent.
   */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    if (this.#consumer) {
      this.#abortConsumed();
    } else if (this.#sink) {
      if (this.#sinkDone) return;
      this.#sinkDone = true;
      this.#controller?.abort(new errors.RequestAbortedError());
    } else if (this.#body) {
      if (!this.#body.destroyed) this.#body.destroy(new errors.RequestAbortedError());
    } else if (this.#controller) {
      this.#controller.abort(new errors.RequestAbortedError());
    }
    // Not started yet (waiting for a connection): onRequestStart aborts it.
  }

  /** Body bytes, or the body's end, arrived before anyone took the body. */
  get bodyArrived(): boolean {
    return this.#early.length > 0 || this.#earlyEnd !== undefined;
  }

  bodyStream(): Readable {
    if (this.#body) return this.#body;
    if (this.#consumer) throw new Error('the upstream body is being consumed already');
    if (this.#sink) throw new Error('the upstream body is being forwarded already');
    const body = new UpstreamBody(this.#controller!);
    this.#body = body;
    let room = true;
    for (const chunk of this.#early) room = body.push(chunk);
    this.#early = [];
    if (this.#earlyEnd === true) body.push(null);
    else if (this.#earlyEnd) body.destroy(this.#earlyEnd);
    else if (room && this.#controller!.paused) this.#controller!.resume();
    return body;
  }

  forward(res: ServerResponse, onFailure: ForwardFailure): boolean {
    if (this.#body || this.#sink || this.#consumer) return false;
    this.#sink = res;
    this.#onSinkFailure = onFailure;
    let room = true;
    for (const chunk of this.#early) room = res.write(chunk);
    this.#early = [];
    if (this.#earlyEnd === true) {
      this.#sinkDone = true;
      res.end();
    } else if (this.#earlyEnd) {
      this.#sinkDone = true;
      onFailure(this.#earlyEnd);
    } else if (!room) {
      this.#controller!.pause();
      res.once('drain', resumeForward.bind(this));
    } else if (this.#controller!.paused) {
      this.#controller!.resume();
    }
    return true;
  }

  consume(consumer: BodyConsumer): void {
    if (this.#body || this.#sink) throw new Error('the upstream body was taken another way already');
    this.#consumer = consumer;
    if (!this.#consumerPaused) this.#deliverHeld();
  }

  pauseConsumer(): void {
    if (this.#consumerPaused) return;
    this.#consumerPaused = true;
    if (!this.#bodyComplete) this.#controller!.pause();
  }

  resumeConsumer(): void {
    if (!this.#consumerPaused) return;
    this.#consumerPaused = false;
    this.#deliverHeld();
  }

  drainConsumed(): void {
    this.#consumer = IGNORE_BODY;
    this.#early = [];
    this.#earlyBytes = 0;
    this.#consumerPaused = false;
    if (this.#bodyComplete) return;
    this.#drainTimer = setTimeout(abortExchange, DRAIN_GRACE_MS, this);
    this.#drainTimer.unref();
    if (this.#controller!.paused) this.#controller!.resume();
  }

  discardConsumed(): void {
    this.#consumer = IGNORE_BODY;
    this.abort();
  }

  /**
   * Delivers the chunks, then the end, that wait for the consumer, for as long as it does not pause;
   * then lets the provider's data flow again.
   */
  #deliverHeld(): void {
    const consumer = this.#consumer!;
    while (this.#early.length > 0) {
      const chunk = this.#early.shift()!;
      this.#earlyBytes -= chunk.length;
      consumer.bodyData(chunk);
      // The consumer paused, was replaced, or dropped the body while taking this chunk.
      if (this.#consumerPaused || this.#consumer !== consumer) return;
    }
    if (this.#earlyEnd !== undefined) {
      const end = this.#earlyEnd;
      this.#earlyEnd = undefined;
      this.#finishConsumer(end);
    } else if (!this.#bodyComplete && this.#controller!.paused) {
      this.#controller!.resume();
    }
  }

  /** The body ended (true) or failed: the consumer hears it now, or when it resumes. */
  #finishConsumer(end: true | Error): void {
    if (this.#consumerFinished) return;
    if (this.#consumerPaused || this.#early.length > 0) {
      this.#earlyEnd = end;
      return;
    }
    this.#consumerFinished = true;
    clearTimeout(this.#drainTimer);
    if (end === true) this.#consumer!.bodyEnded();
    else this.#consumer!.bodyFailed(end);
  }

  /**
   * An abort reaches the consumer as `UND_ERR_ABORTED`, in place of whatever still waits for it
   * (even a held end: the body was given up before the consumer heard it).
   */
  #abortConsumed(): void {
    if (this.#consumerFinished) return;
    this.#early = [];
    this.#earlyBytes = 0;
    this.#earlyEnd = undefined;
    const error = new errors.RequestAbortedError();
    // undici reports the abort through onResponseError, unless it is done with the body already.
    if (this.#bodyComplete) this.#finishConsumer(error);
    else this.#controller!.abort(error);
  }

  /** The client's socket drained: let the provider's data flow again. */
  sinkDrained(): void {
    if (!this.#sinkDone) this.#controller?.resume();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return;
    this.#settled = true;
    // After the parser's turn, as a promise would settle: the listener may abort this request or
    // send another, which undici's callbacks are not the place for. Body chunks that arrive first
    // wait in `#early`.
    process.nextTick(deliverHead, this.#listener, new UpstreamResponse(this, statusCode, headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const consumer = this.#consumer;
    // Straight to the consumer, unless it paused or earlier chunks still wait for it.
    if (consumer !== undefined && !this.#consumerPaused && this.#early.length === 0) {
      consumer.bodyData(chunk);
      return;
    }
    const sink = this.#sink;
    if (sink !== undefined) {
      if (this.#sinkDone) return;
      if (!sink.write(chunk)) {
        controller.pause();
        sink.once('drain', resumeForward.bind(this));
      }
      return;
    }
    const body = this.#body;
    if (body !== undefined) {
      if (!body.destroyed && !body.push(chunk)) controller.pause();
      return;
    }
    this.#early.push(chunk);
    this.#earlyBytes += chunk.length;
    // Nobody has taken the body yet (the reader is one microtask away): hold at most a stream's worth.
    if (this.#earlyBytes >= BODY_HIGH_WATER_MARK) controller.pause();
  }

  onResponseEnd(): void {
    this.#bodyComplete = true;
    if (this.#consumer !== undefined) {
      this.#finishConsumer(true);
      return;
    }
    if (this.#sink !== undefined) {
      if (this.#sinkDone) return;
      this.#sinkDone = true;
      this.#sink.end();
      return;
    }
    const body = this.#body;
    if (body !== undefined) {
      if (!body.destroyed) body.push(null);
      return;
    }
    this.#earlyEnd = true;
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (!this.#settled) {
      this.#settled = true;
      process.nextTick(deliverHeadFailure, this.#listener, error);
      return;
    }
    this.#bodyComplete = true;
    if (this.#consumer !== undefined) {
      this.#finishConsumer(error);
      return;
    }
    if (this.#sink !== undefined) {
      if (this.#sinkDone) return;
      this.#sinkDone = true;
      this.#onSinkFailure!(error);
      return;
    }
    const body = this.#body;
    if (body === undefined) {
      this.#earlyEnd = error;
      return;
    }
    if (body.destroyed) return;
    // Chunks already queued by the parser reach the body's readers first, as with undici's own API.
    queueMicrotask(() => body.destroy(error));
  }
}

function deliverHead(listener: HeadListener, response: UpstreamResponse): void {
  listener.headArrived(response);
}

function deliverHeadFailure(listener: HeadListener, error: Error): void {
  listener.headFailed(error);
}

function abortExchange(exchange: UpstreamExchange): void {
  exchange.abort();
}

function resumeForward(this: UpstreamExchange): void {
  this.sinkDrained();
}

/**
 * The response body as a stream: reading resumes the paused parser; destroying it before its end
 * aborts the request (and reports `UND_ERR_ABORTED` when no other error is given, as undici's bodies
 * do).
 */
class UpstreamBody extends Readable {
  readonly #controller: Dispatcher.DispatchController;

  constructor(controller: Dispatcher.DispatchController) {
    super({ highWaterMark: BODY_HIGH_WATER_MARK });
    this.#controller = controller;
  }

  override _read(): void {
    this.#controller.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    let reason = error;
    if (!this.readableEnded) {
      reason ??= new errors.RequestAbortedError();
      if (!this.#controller.aborted) this.#controller.abort(reason);
    }
    // Destroyed before anyone listens (aborted right as the head arrived): let the reader that is
    // about to attach hear the error rather than have it go unheard, as undici's bodies do.
    if (reason && this.listenerCount('error') === 0) setImmediate(callback, reason);
    else callback(reason);
  }
}
