import type { IncomingHttpHeaders } from 'node:http';
import { errors } from './undici.js';
import type { Dispatcher } from 'undici';

/** Body bytes held for a consumer that has not taken them yet before the provider is held back. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

/**
 * Takes a body chunk by chunk, straight from undici's callbacks (`UpstreamResponse.consume`): the
 * one way a provider's body is read, whether it is forwarded, inspected, collected or re-emitted.
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
 * A provider's answer: status and headers, and its body, handed to one consumer at a time straight
 * from undici's callbacks. There is no stream in between: a stream costs a buffer, a `data` event
 * and a resume per chunk, for an event stream every event.
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

  /** The provider's body has ended (or failed) already: nothing more will come from it. */
  get bodyComplete(): boolean {
    return this.#exchange.bodyComplete;
  }

  /**
   * Hands the body to `consumer`, chunk by chunk; what arrived before is delivered at once (unless
   * paused). A later call replaces the consumer: the chunks not delivered yet, and the body's end,
   * go to the new one.
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

  /** Drops the body: the request is aborted and no consumer hears anything more. */
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
 * `request` convenience: the listener hears of the status and headers, then the body's chunks go
 * to the response's consumer from the callbacks below.
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
  /** Body chunks not delivered yet: nobody has taken the body, or the consumer paused. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** How the body ended (true) or failed (an error), once known. */
  #end: true | Error | undefined;
  /** The current consumer has heard `#end` (a consumer that takes over hears it again). */
  #endHeard = false;

  #consumer: BodyConsumer | undefined;
  /** The consumer asked for no deliveries: chunks, and the end, wait until it resumes. */
  #consumerPaused = false;
  /** undici is done with the body (ended or failed): it can no longer be aborted. */
  #bodyComplete = false;
  #drainTimer: NodeJS.Timeout | undefined;
  /** Milliseconds from the request's start to its response head, when this exchange times it. */
  readonly #headersTimeoutMs: number | undefined;
  #headersTimer: NodeJS.Timeout | undefined;

  constructor(listener: HeadListener, headersTimeoutMs?: number) {
    this.#listener = listener;
    this.#headersTimeoutMs = headersTimeoutMs;
  }

  /**
   * Gives the request up: before the response head the listener hears `UND_ERR_ABORTED`,
   * afterwards the consumer hears that error (at once, or when it resumes) in place of whatever
   * still waited for it. Idempotent.
   */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    if (this.#endHeard) return;
    this.#held = [];
    this.#heldBytes = 0;
    if (this.#bodyComplete) {
      // undici is done with the body: the consumer hears the abort from here, in place of the end
      // that still waited for it.
      this.#end = new errors.RequestAbortedError();
      this.#deliverEnd();
    } else {
      // Reported back through onResponseError (or onRequestStart when not started yet).
      this.#controller?.abort(new errors.RequestAbortedError());
    }
  }

  /** undici is done with the body: it ended or failed. */
  get bodyComplete(): boolean {
    return this.#bodyComplete;
  }

  /** Body bytes, or the body's end, arrived before anyone took the body. */
  get bodyArrived(): boolean {
    return this.#held.length > 0 || (this.#end !== undefined && this.#consumer === undefined);
  }

  consume(consumer: BodyConsumer): void {
    this.#consumer = consumer;
    this.#endHeard = false;
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
    this.#held = [];
    this.#heldBytes = 0;
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
    while (this.#held.length > 0) {
      const chunk = this.#held.shift()!;
      this.#heldBytes -= chunk.length;
      consumer.bodyData(chunk);
      // The consumer paused, was replaced, or dropped the body while taking this chunk.
      if (this.#consumerPaused || this.#consumer !== consumer) return;
    }
    if (this.#end !== undefined) this.#deliverEnd();
    else if (!this.#bodyComplete && this.#controller?.paused === true) this.#controller.resume();
  }

  /** The consumer hears how the body ended, once it has every chunk and is not paused. */
  #deliverEnd(): void {
    const consumer = this.#consumer;
    if (consumer === undefined || this.#endHeard || this.#consumerPaused || this.#held.length > 0) return;
    this.#endHeard = true;
    clearTimeout(this.#drainTimer);
    const end = this.#end!;
    if (end === true) consumer.bodyEnded();
    else consumer.bodyFailed(end);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted) {
      controller.abort(new errors.RequestAbortedError());
      return;
    }
    if (this.#headersTimeoutMs !== undefined)
      this.#headersTimer = setTimeout(expireHead, this.#headersTimeoutMs, this);
  }

  /** No response head within the headers timeout: the request fails as undici's own would. */
  expireHead(): void {
    if (this.#settled || this.#aborted) return;
    this.#controller!.abort(new errors.HeadersTimeoutError());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return;
    this.#settled = true;
    clearTimeout(this.#headersTimer);
    // After the parser's turn, as a promise would settle: the listener may abort this request or
    // send another, which undici's callbacks are not the place for. Body chunks that arrive first
    // wait in `#held`.
    process.nextTick(deliverHead, this.#listener, new UpstreamResponse(this, statusCode, headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const consumer = this.#consumer;
    // Straight to the consumer, unless it paused or earlier chunks still wait for it.
    if (consumer !== undefined && !this.#consumerPaused && this.#held.length === 0) {
      consumer.bodyData(chunk);
      return;
    }
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    // Nobody takes chunks now (the reader is a tick away, or paused): hold at most a high-water mark.
    if (this.#heldBytes >= BODY_HIGH_WATER_MARK) controller.pause();
  }

  onResponseEnd(): void {
    this.#bodyComplete = true;
    this.#end = true;
    this.#deliverEnd();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.#headersTimer);
    if (!this.#settled) {
      this.#settled = true;
      process.nextTick(deliverHeadFailure, this.#listener, error);
      return;
    }
    this.#bodyComplete = true;
    this.#end = error;
    this.#deliverEnd();
  }
}

function deliverHead(listener: HeadListener, response: UpstreamResponse): void {
  listener.headArrived(response);
}

function deliverHeadFailure(listener: HeadListener, error: Error): void {
  listener.headFailed(error);
}

function expireHead(exchange: UpstreamExchange): void {
  exchange.expireHead();
}

function abortExchange(exchange: UpstreamExchange): void {
  exchange.abort();
}
