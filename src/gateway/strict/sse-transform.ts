import { DONE_EVENT, SseParser, classifyData, type SseEvent, type SseHandler } from '../../lib/sse.js';
import {
  INVALID_UPSTREAM_STATUS,
  embeddedErrorEvent,
  invalidUpstreamResponseEvent,
  maskedEmbeddedStatus,
  standaloneEmbeddedError,
  standaloneEmbeddedErrorEvent,
} from './errors.js';
import { isUsageOnlyChunk } from './usage-chunk.js';
import { embeddedError, embeddedStatus } from '../api/embedded-error.js';
import { sanitizeValue } from './sanitize.js';

/**
 * The chat-completions SSE transform of strict mode (spec 4.5, 6) and of standalone sanitization
 * (4.6), on the incremental parser of src/lib/sse.ts: upstream bytes in any chunking, re-emitted
 * bytes out, identical whatever the chunking (the parser's events do not depend on it, and each
 * event's output depends only on the event).
 *
 * Per event:
 * - comments (keep-alives) are dropped; `event`, `id` and `retry` fields are not re-emitted (chat
 *   completion streams are data-only, and a client must not see provider framing);
 * - multi-line data is joined (by the parser) and parsed as one JSON chunk;
 * - `[DONE]` is re-emitted and ends the transform: anything after it is ignored, and the caller may
 *   end the client response and release the upstream;
 * - a chunk is sanitized (fields outside the reference dropped, `model` = alias) and re-emitted as
 *   `data: <json>\n\n`;
 * - a chunk carrying `error` becomes the stand-alone error event (strict: masked code and generic
 *   message for untrusted providers, verbatim for trusted; standalone: the 4.6 replacement body),
 *   and ends the transform without `[DONE]`: the error is the stream's last word, and a `[DONE]`
 *   after it would tell a client the answer completed. The caller ends the client response cleanly
 *   after writing the output (the error event is the signal) and aborts the upstream;
 * - a chunk that is not JSON or not a chunk object is answered the same way with a 502 error event
 *   (the raw data is never forwarded);
 * - data that is empty or only whitespace carries nothing and is dropped, like a comment.
 *
 * Ends: overflow of the unfinished-event cap is reported (`overflow`): the caller drops the upstream
 * and ends the client response with a body error (destroy, never a clean end). An upstream end
 * inside an event is `incomplete`, an upstream end at a boundary without `[DONE]` is `clean` with
 * `sawDone` false: in both cases the caller must not write a `[DONE]` of its own.
 */

export interface SseTransformOptions {
  /** The alias the client requested, written into every chunk's `model`. */
  readonly alias: string;
  /** `strict`: spec 4.5/6 (masking unless trusted). `standalone`: spec 4.6 (no standardization). */
  readonly mode: 'strict' | 'standalone';
  /** Effective trust of the provider that serves the stream (strict mode only). */
  readonly trusted: boolean;
  /** Drop the usage-only chunk (the gateway asked for usage; the client did not). */
  readonly dropUsageChunk?: boolean;
  /** `--sse-buffer-limit`. */
  readonly maxPendingBytes: number;
}

/**
 * `open`: keep feeding. `done`: `[DONE]` was emitted. `error_event`: an error event was emitted and
 * the stream is over (see `error`). `overflow`: the unfinished-event cap was exceeded. Once not
 * `open`, every later push returns the same state with empty output.
 */
export type SseTransformState = 'open' | 'done' | 'error_event' | 'overflow';

export interface SseStreamError {
  /** `embedded_error`: the provider's chunk carried `error`; `invalid_chunk`: undecodable data. */
  readonly reason: 'embedded_error' | 'invalid_chunk';
  /**
   * The status the error event stands for: masked for untrusted strict streams, the embedded code's
   * status otherwise, 502 for an invalid chunk. For outcome accounting (e.g. overload statuses).
   */
  readonly status: number;
  /**
   * The status the provider's error stands for, unmasked (502 for an invalid chunk): what failover
   * and the share controller judge.
   */
  readonly upstreamStatus: number;
  /** The provider's `error` value, for the log only (the caller picks safe fields); never forward. */
  readonly upstreamError?: unknown;
}

export interface SseStep {
  /** Bytes to write to the client now, as text (may be empty). */
  readonly output: string;
  readonly state: SseTransformState;
  /**
   * This step emitted the stream's first data frame other than `[DONE]`: the first-token sample
   * point of a strict 2xx stream (spec 3.1). Comments, `[DONE]` and error events never set it.
   */
  readonly firstDataFrame: boolean;
  readonly error?: SseStreamError;
  /** Set when state is `overflow`. */
  readonly overflow?: { readonly pendingBytes: number; readonly limit: number };
}

export type SseEndStep =
  | SseStep
  /** The upstream ended at an event boundary; `sawDone` false means it never sent `[DONE]`. */
  | { readonly output: ''; readonly state: 'clean'; readonly firstDataFrame: false; readonly sawDone: false }
  /** The upstream ended inside an event: treat as a broken stream (body error), never a clean end. */
  | {
      readonly output: '';
      readonly state: 'incomplete';
      readonly firstDataFrame: false;
      readonly pendingBytes: number;
    };

export class SseSanitizeTransform {
  readonly #alias: string;
  readonly #mode: 'strict' | 'standalone';
  readonly #trusted: boolean;
  readonly #dropUsageChunk: boolean;
  readonly #parser: SseParser;

  #state: SseTransformState = 'open';
  #out = '';
  #sawDataFrame = false;
  #firstInStep = false;
  #error: SseStreamError | undefined;
  #overflow: { readonly pendingBytes: number; readonly limit: number } | undefined;

  constructor(options: SseTransformOptions) {
    this.#alias = options.alias;
    this.#mode = options.mode;
    this.#trusted = options.trusted;
    this.#dropUsageChunk = options.dropUsageChunk ?? false;
    // No comment handler: the parser then skips decoding comment lines, and they are dropped.
    const handler: SseHandler = { onEvent: (event) => this.#onEvent(event) };
    this.#parser = new SseParser(handler, { maxPendingBytes: options.maxPendingBytes });
  }

  get state(): SseTransformState {
    return this.#state;
  }

  /** A data frame other than `[DONE]` has been emitted (a first-token sample was due). */
  get sawDataFrame(): boolean {
    return this.#sawDataFrame;
  }

  /**
   * The error event that ended the stream before any data frame: "an error inside a 200" that may
   * fail over (after a data frame it is a mid-stream error of the serving attempt).
   */
  get leadingError(): SseStreamError | undefined {
    return this.#sawDataFrame ? undefined : this.#error;
  }

  push(chunk: Uint8Array): SseStep {
    if (this.#state !== 'open') return this.#terminalStep();
    this.#out = '';
    this.#firstInStep = false;
    const pushed = this.#parser.push(chunk);
    if (!pushed.ok && this.#state === 'open') {
      this.#state = 'overflow';
      this.#overflow = { pendingBytes: pushed.pendingBytes, limit: pushed.limit };
    }
    return this.#step(this.#out, this.#firstInStep);
  }

  /** The upstream body ended. Idempotent in effect: a terminal state is reported again. */
  end(): SseEndStep {
    if (this.#state !== 'open') return this.#terminalStep();
    const ended = this.#parser.end();
    if (ended.ok) return { output: '', state: 'clean', firstDataFrame: false, sawDone: false };
    if (ended.kind === 'incomplete') {
      return { output: '', state: 'incomplete', firstDataFrame: false, pendingBytes: ended.pendingBytes };
    }
    // The parser reports a cap exceeded on an earlier push again; push already made that terminal.
    this.#state = 'overflow';
    this.#overflow = { pendingBytes: ended.pendingBytes, limit: ended.limit };
    return this.#terminalStep();
  }

  #terminalStep(): SseStep {
    return this.#step('', false);
  }

  #step(output: string, firstDataFrame: boolean): SseStep {
    const step: {
      output: string;
      state: SseTransformState;
      firstDataFrame: boolean;
      error?: SseStreamError;
      overflow?: { readonly pendingBytes: number; readonly limit: number };
    } = { output, state: this.#state, firstDataFrame };
    if (this.#error !== undefined) step.error = this.#error;
    if (this.#overflow !== undefined) step.overflow = this.#overflow;
    return step;
  }

  #onEvent(event: SseEvent): void {
    // Events after the end of the stream's meaning (DONE, an error) are dropped.
    if (this.#state !== 'open') return;
    const data = event.data;
    const kind = classifyData(data);
    if (kind === 'empty') return;
    if (kind === 'done') {
      this.#out += DONE_EVENT;
      this.#state = 'done';
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      this.#fail(
        { reason: 'invalid_chunk', status: INVALID_UPSTREAM_STATUS, upstreamStatus: INVALID_UPSTREAM_STATUS },
        invalidUpstreamResponseEvent(),
      );
      return;
    }
    const error = embeddedError(value);
    if (error !== undefined) {
      this.#onEmbeddedError(error);
      return;
    }
    if (this.#dropUsageChunk && isUsageOnlyChunk(value)) return;
    const result = sanitizeValue('chat_completion_chunk', value, this.#alias);
    if (result.kind !== 'ok') {
      this.#fail(
        { reason: 'invalid_chunk', status: INVALID_UPSTREAM_STATUS, upstreamStatus: INVALID_UPSTREAM_STATUS },
        invalidUpstreamResponseEvent(),
      );
      return;
    }
    this.#out += `data: ${result.json}\n\n`;
    if (!this.#sawDataFrame) {
      this.#sawDataFrame = true;
      this.#firstInStep = true;
    }
  }

  #onEmbeddedError(error: unknown): void {
    if (this.#mode === 'standalone') {
      const { status } = standaloneEmbeddedError(error);
      this.#fail(
        { reason: 'embedded_error', status, upstreamStatus: embeddedStatus(error), upstreamError: error },
        standaloneEmbeddedErrorEvent(error),
      );
      return;
    }
    const upstreamStatus = embeddedStatus(error);
    const status = this.#trusted ? upstreamStatus : maskedEmbeddedStatus(error);
    this.#fail(
      { reason: 'embedded_error', status, upstreamStatus, upstreamError: error },
      embeddedErrorEvent(error, this.#trusted),
    );
  }

  #fail(error: SseStreamError, event: string): void {
    this.#out += event;
    this.#state = 'error_event';
    this.#error = error;
  }
}
