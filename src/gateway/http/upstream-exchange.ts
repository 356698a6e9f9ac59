import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { errors, type Dispatcher } from 'undici';

/** A provider's answer: status, headers, and its body as a stream (backpressure reaches the socket). */
export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** Same high-water mark as undici's own response bodies. */
const BODY_HIGH_WATER_MARK = 64 * 1024;

/**
 * One request to a provider, driven through undici's `dispatch` (the handler API) instead of its
 * `request` convenience: `response` settles with the status and headers, the body streams.
 *
 * Why not `Agent.request`: its handler keeps a per-request arrow function over the dispatch
 * controller, and with it every request's objects (client request, response, streams) outlive
 * two young-generation collections and are promoted to the old generation, about 5 KB per
 * request. Each collection then copies megabytes and pauses the process for milliseconds
 * (docs/performance.md, "Where the tail comes from"). This handler keeps no closures: the body
 * reaches the controller through its own fields, and aborting is a method call.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler {
  /** Settles with the response head (1xx answers are skipped); rejects with undici's error. */
  readonly response: Promise<UpstreamResponse>;
  #resolve!: (response: UpstreamResponse) => void;
  #reject!: (error: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #body: UpstreamBody | undefined;
  #aborted = false;
  #settled = false;

  constructor() {
    this.response = new Promise<UpstreamResponse>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /**
   * Gives the request up: before the response head it rejects `response` (`UND_ERR_ABORTED`),
   * afterwards it destroys the body with that error. Idempotent.
   */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    if (this.#body) {
      if (!this.#body.destroyed) this.#body.destroy(new errors.RequestAbortedError());
    } else if (this.#controller) {
      this.#controller.abort(new errors.RequestAbortedError());
    }
    // Not started yet (waiting for a connection): onRequestStart aborts it.
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return;
    const body = new UpstreamBody(controller);
    this.#body = body;
    this.#settled = true;
    this.#resolve({ statusCode, headers, body });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const body = this.#body;
    if (body === undefined || body.destroyed) return;
    if (!body.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    const body = this.#body;
    if (body !== undefined && !body.destroyed) body.push(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(error);
      return;
    }
    const body = this.#body;
    if (body === undefined || body.destroyed) return;
    // Chunks already queued by the parser reach the body's readers first, as with undici's own API.
    queueMicrotask(() => body.destroy(error));
  }
}

/**
 * The response body: reading resumes the paused parser; destroying it before its end aborts the
 * request (and reports `UND_ERR_ABORTED` when no other error is given, as undici's bodies do).
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
