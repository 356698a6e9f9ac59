import {
  DONE_FRAME,
  dataFrame,
  finishFrame,
  pieceFrame,
  roleFrame,
  usage,
  usageFrame,
  type FrameContext,
} from '../openai/frames.js';
import type { Piece } from '../openai/plan.js';
import { firstTwoByteCharOffset, placeholderToken } from '../text/placeholder.js';
import type { FaultSpec } from './modes.js';

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

export interface FaultContext {
  frame: FrameContext;
  includeUsage: boolean;
  promptTokens: number;
}

/** The exact `cancelled_499` frame (spec 4.3). */
export const CANCELLED_499_FRAME =
  'data: {"error":{"message":"CancelledError: ","type":"request_cancelled","code":499}}\n\n';

export const FAULT_TOOL = { id: 'call_sim_fault_0', name: 'get_weather' } as const;

/**
 * The whole fault as data: a pure function of (mode, parameters, request kind and the frame
 * identity), with no clock and no randomness, so the same trigger always produces the same bytes
 * and dies at the same byte. The server only executes the script.
 */
export function faultScript(spec: FaultSpec, ctx: FaultContext): FaultScript {
  const fc = ctx.frame;
  const count = spec.afterChunks;

  function* frames(): Generator<string> {
    if (fc.kind === 'chat') yield roleFrame(fc);
    for (let i = 0; i < count; i++) yield contentFrame(spec, fc, i);
    yield* tailFrames(spec, ctx);
  }

  return { frames: { [Symbol.iterator]: frames }, terminal: terminalFor(spec, fc) };
}

/** Content-bearing frame `i` of a faulting stream (the role frame is not counted). */
export function contentFrame(spec: FaultSpec, fc: FrameContext, i: number): string {
  return pieceFrame(fc, faultPiece(spec, fc, i), null);
}

function faultPiece(spec: FaultSpec, fc: FrameContext, i: number): Piece {
  if (spec.mode === 'mid_reasoning') {
    // Completions have no reasoning field: the same text opens a think block that never closes.
    if (fc.kind === 'completions')
      return { kind: 'content', text: (i === 0 ? '<think>' : '') + placeholderToken(i) };
    return { kind: 'reasoning', text: placeholderToken(i) };
  }
  if (spec.mode === 'mid_tool_call') {
    if (i === 0) return { kind: 'tool_start', index: 0, ...FAULT_TOOL };
    // Argument fragments open a JSON object and a string that are never closed.
    return { kind: 'tool_args', index: 0, text: i === 1 ? '{"location": "' : placeholderToken(i - 2) };
  }
  return { kind: 'content', text: placeholderToken(i) };
}

function tailFrames(spec: FaultSpec, ctx: FaultContext): string[] {
  const fc = ctx.frame;
  switch (spec.mode) {
    case 'error_envelope_200':
      return [
        dataFrame({
          error: {
            message: 'Upstream error: the provider returned an error mid-stream (simulated)',
            code: 502,
            metadata: { provider_name: 'sim', fault: spec.mode, model: fc.model },
          },
        }),
        DONE_FRAME,
      ];
    case 'error_400_in_sse':
      return [
        dataFrame({
          object: 'error',
          message: 'Simulated in-stream error after partial output',
          type: 'BadRequestError',
          param: null,
          code: 400,
        }),
      ];
    case 'no_done': {
      const frames = [finishFrame(fc, 'stop')];
      if (ctx.includeUsage) frames.push(usageFrame(fc, usage(ctx.promptTokens, spec.afterChunks)));
      return frames;
    }
    case 'no_usage':
      return [finishFrame(fc, 'stop'), DONE_FRAME];
    case 'cancelled_499':
      return [CANCELLED_499_FRAME];
    default:
      return [];
  }
}

function terminalFor(spec: FaultSpec, fc: FrameContext): Terminal {
  switch (spec.mode) {
    case 'cut_between_frames':
    case 'mid_reasoning':
    case 'mid_tool_call':
      return { action: 'close' };
    case 'cut_mid_frame':
      return { action: 'tear', bytes: tornFrame(spec, fc) };
    case 'reset':
      return { action: 'reset' };
    case 'stall':
      return { action: 'stall' };
    default:
      return { action: 'end' };
  }
}

/**
 * The first part of the next content frame. Half its bytes (moved back to a character boundary)
 * or, with utf8=true, up to one byte into the first two-byte character of the delta text.
 */
export function tornFrame(spec: FaultSpec, fc: FrameContext): Buffer {
  const text = placeholderToken(spec.afterChunks);
  const frame = contentFrame({ ...spec, mode: 'cut_mid_frame' }, fc, spec.afterChunks);
  const bytes = Buffer.from(frame, 'utf8');
  if (spec.utf8) {
    const encoded = JSON.stringify(text);
    // The delta text is the last string in the frame (choices come after id and model).
    const textStart = Buffer.byteLength(frame.slice(0, frame.lastIndexOf(encoded)), 'utf8') + 1;
    return bytes.subarray(0, textStart + firstTwoByteCharOffset(text) + 1);
  }
  let cut = Math.floor(bytes.length / 2);
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut);
}
