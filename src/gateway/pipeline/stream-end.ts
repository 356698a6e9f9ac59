import type { ApiSurface } from '../api/surfaces.js';
import type { RequestOutcome } from './outcome.js';

/**
 * How a committed event stream ends, decided in one place for every writer (passed through,
 * re-emitted in strict mode or by standalone sanitization, translated from another API): what the
 * request's outcome is, whether the provider is to blame, and how the client's response ends. The
 * writers (`write-response.ts`) read the provider's stream and carry the answer out; none of them
 * decides it.
 */

/** How the provider's event stream ended, as its reader saw it. */
export type StreamEnd =
  /** With its surface's end marker (`[DONE]`), or at an event boundary where the surface has none. */
  | 'complete'
  /** With an error event: the stream's last word. */
  | 'error_event'
  /** At an event boundary, without the end marker of a surface that has one. */
  | 'unterminated'
  /** Inside an event. */
  | 'incomplete'
  /** An unfinished event outgrew `--sse-buffer-limit`. */
  | 'overflow'
  /** The provider's body failed (a reset, a timeout). */
  | 'broken';

/** Who writes the client's events: the provider's bytes pass through, or the gateway re-emits them. */
export type StreamWriter = 'raw' | 'strict' | 'standalone' | 'translated';

export interface StreamEnding {
  /** The request's outcome, when not a success. */
  readonly outcome: Extract<RequestOutcome, 'upstream_error' | 'upstream_cut'> | undefined;
  /** The provider failed (outlier detection counts it). */
  readonly providerFailed: boolean;
  /**
   * How the client's response ends: `end` cleanly; `cut` with a transport error (no terminating
   * chunk), so no client takes what came for the whole answer; `error_event`: the gateway's error
   * event for a broken stream (in the client surface's shape), then a clean end.
   */
  readonly client: 'end' | 'cut' | 'error_event';
}

const COMPLETE: StreamEnding = Object.freeze({ outcome: undefined, providerFailed: false, client: 'end' });

/**
 * The ending of a stream of the `framing` surface (the provider's: chat completions for a
 * translated Messages stream) written by `writer`. A stream without its end marker was cut short,
 * whatever its last event said; a gateway that re-emits the stream tells its client so with an
 * error event, a passed-through stream is cut (the bytes stay the provider's). An error event ends
 * the stream; a passed-through one whose error shape clients may not know is cut after it.
 */
export function streamEnding(
  framing: ApiSurface | undefined,
  writer: StreamWriter,
  end: StreamEnd,
): StreamEnding {
  const reEmitted = writer === 'strict' || writer === 'translated';
  switch (end) {
    case 'complete':
      return COMPLETE;
    case 'error_event':
      return {
        outcome: 'upstream_error',
        providerFailed: false,
        client: writer === 'raw' && framing?.cutAfterErrorEvent === true ? 'cut' : 'end',
      };
    case 'unterminated':
      if (framing?.streamEnd === undefined) return COMPLETE;
      return { outcome: 'upstream_cut', providerFailed: true, client: reEmitted ? 'error_event' : 'cut' };
    case 'broken':
      return { outcome: 'upstream_cut', providerFailed: true, client: reEmitted ? 'error_event' : 'cut' };
    case 'incomplete':
      return { outcome: 'upstream_cut', providerFailed: true, client: 'cut' };
    case 'overflow':
      return { outcome: 'upstream_cut', providerFailed: false, client: 'cut' };
  }
}
