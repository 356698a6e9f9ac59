import { SseParser, classifyData, type SseEvent } from '../../lib/sse.js';
import { eventError } from '../api/embedded-error.js';
import type { ApiSurface } from '../api/surfaces.js';
import { embeddedStatus } from '../strict/index.js';

/**
 * An event stream read up to its commit point: the first data frame, or a terminal state before it.
 * Two kinds: the strict/standalone re-emitter (`SseSanitizeTransform`, whose output is the
 * sanitized events) and `RawLeadingFrames` below (output: the provider's bytes unchanged). The
 * response path holds their output until the commit point and judges them by the same fields.
 */
export interface LeadingFrames {
  push(chunk: Buffer): {
    readonly output: string | Buffer;
    readonly state: LeadingState;
    readonly firstDataFrame: boolean;
  };
  /** `open` until a terminal state: the end (`[DONE]`, the surface's end event), an error event, or the event-size cap. */
  readonly state: LeadingState;
  /** An error before any data frame ("an error inside a 200"), by the status it stands for. */
  readonly leadingError: { readonly upstreamStatus: number } | undefined;
}

export type LeadingState = 'open' | 'done' | 'error_event' | 'overflow';

/**
 * A non-strict stream up to its first data frame: the bytes pass unchanged; the events are parsed
 * only to find that frame and whether it is an error (spec 2.5: an error inside a 200 fails over).
 */
export class RawLeadingFrames implements LeadingFrames {
  readonly #parser: SseParser;
  state: LeadingState = 'open';
  leadingError: { readonly upstreamStatus: number } | undefined;
  #firstInPush = false;

  readonly #surface: ApiSurface | undefined;

  constructor(maxPendingBytes: number, surface: ApiSurface | undefined) {
    this.#surface = surface;
    this.#parser = new SseParser({ onEvent: (event) => this.#onEvent(event) }, { maxPendingBytes });
  }

  push(chunk: Buffer): { output: Buffer; state: LeadingState; firstDataFrame: boolean } {
    this.#firstInPush = false;
    if (this.state === 'open' && !this.#parser.push(chunk).ok) this.state = 'overflow';
    return { output: chunk, state: this.state, firstDataFrame: this.#firstInPush };
  }

  #onEvent(event: SseEvent): void {
    if (this.state !== 'open' || this.#firstInPush) return;
    const kind = classifyData(event.data);
    if (kind === 'empty') return;
    if (kind === 'done') {
      this.state = 'done';
      return;
    }
    const value = parseJsonSafe(event.data);
    const error = eventError(this.#surface, value);
    if (error !== undefined) {
      this.leadingError = { upstreamStatus: embeddedStatus(error) };
      this.state = 'error_event';
      return;
    }
    const type = (value as { readonly type?: unknown } | undefined)?.type;
    if (type !== undefined && type === this.#surface?.endEvent) {
      this.state = 'done';
      return;
    }
    // Where the surface names the event that carries the first token, the events before it (a
    // Messages stream's `message_start`, `content_block_start`, `ping`) are held with the head.
    const firstToken = this.#surface?.firstTokenEvent;
    if (firstToken !== undefined && type !== firstToken) return;
    this.#firstInPush = true;
  }
}

export function parseJsonSafe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
