import { firstTwoByteCharOffset, placeholderToken } from '../text/placeholder.js';
import type { FaultSpec } from './modes.js';

/**
 * What every framing's fault script shares: how each mode ends the connection, how a frame is torn,
 * and the partial output the modes carry. Each framing (`openai/fault-script.ts`,
 * `anthropic/fault-script.ts`) only dresses these in its own frames.
 */

/** What happens after the last frame. */
export type Terminal =
  /** Clean end: the chunked terminator (and a FIN only if the client asked to close). */
  | { action: 'end' }
  /** FIN without the chunked terminator, after the flush grace. */
  | { action: 'close' }
  /** Write these bytes (the first part of the next frame), then close like `close`. */
  | { action: 'tear'; bytes: Buffer }
  /** Abortive close (TCP RST) after the flush grace. */
  | { action: 'reset' }
  /** Send nothing more and keep the connection open until the client leaves. */
  | { action: 'stall' };

export interface FaultScript {
  /** Complete SSE frames, written in order with `delayMs` between them. Lazy: after_chunks is a u32. */
  frames: Iterable<string>;
  terminal: Terminal;
}

/** The exact `cancelled_499` frame (spec 4.3), the same on every endpoint. */
export const CANCELLED_499_FRAME =
  'data: {"error":{"message":"CancelledError: ","type":"request_cancelled","code":499}}\n\n';

/** The tool `mid_tool_call` starts and never finishes. */
export const FAULT_TOOL_NAME = 'get_weather';

export const ERROR_ENVELOPE_MESSAGE = 'Upstream error: the provider returned an error mid-stream (simulated)';
export const IN_STREAM_ERROR_MESSAGE = 'Simulated in-stream error after partial output';

/** The text of content-bearing frame `i` (content or reasoning). */
export function faultText(i: number): string {
  return placeholderToken(i);
}

/**
 * Argument fragment `k` of the `mid_tool_call` call: it opens a JSON object and a string that are
 * never closed.
 */
export function faultArgumentFragment(k: number): string {
  return k === 0 ? '{"location": "' : placeholderToken(k - 1);
}

/** How the mode ends the response; `tear` builds the torn bytes of `cut_mid_frame`. */
export function faultTerminal(spec: FaultSpec, tear: () => Buffer): Terminal {
  switch (spec.mode) {
    case 'cut_between_frames':
    case 'mid_reasoning':
    case 'mid_tool_call':
      return { action: 'close' };
    case 'cut_mid_frame':
      return { action: 'tear', bytes: tear() };
    case 'reset':
      return { action: 'reset' };
    case 'stall':
      return { action: 'stall' };
    default:
      return { action: 'end' };
  }
}

/**
 * The first part of `frame`, whose delta text `text` is the last string in it: half its bytes
 * (moved back to a character boundary) or, with `utf8`, up to one byte into the first two-byte
 * character of that text.
 */
export function tearFrame(frame: string, text: string, utf8: boolean): Buffer {
  const bytes = Buffer.from(frame, 'utf8');
  if (utf8) {
    const encoded = JSON.stringify(text);
    const textStart = Buffer.byteLength(frame.slice(0, frame.lastIndexOf(encoded)), 'utf8') + 1;
    return bytes.subarray(0, textStart + firstTwoByteCharOffset(text) + 1);
  }
  let cut = Math.floor(bytes.length / 2);
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut);
}
