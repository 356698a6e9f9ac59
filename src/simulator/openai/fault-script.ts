import type { FaultSpec } from '../faults/modes.js';
import {
  CANCELLED_499_FRAME,
  ERROR_ENVELOPE_MESSAGE,
  FAULT_TOOL_NAME,
  IN_STREAM_ERROR_MESSAGE,
  faultArgumentFragment,
  faultTerminal,
  faultText,
  tearFrame,
  type FaultScript,
} from '../faults/script.js';
import {
  DONE_FRAME,
  dataFrame,
  finishFrame,
  pieceFrame,
  roleFrame,
  usage,
  usageFrame,
  type FrameContext,
} from './frames.js';
import type { Piece } from './plan.js';

export interface FaultContext {
  frame: FrameContext;
  includeUsage: boolean;
  promptTokens: number;
}

export const FAULT_TOOL = { id: 'call_sim_fault_0', name: FAULT_TOOL_NAME } as const;

/**
 * The whole fault as OpenAI frames: a pure function of (mode, parameters, request kind and the frame
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

  return { frames: { [Symbol.iterator]: frames }, terminal: faultTerminal(spec, () => tornFrame(spec, fc)) };
}

/** Content-bearing frame `i` of a faulting stream (the role frame is not counted). */
export function contentFrame(spec: FaultSpec, fc: FrameContext, i: number): string {
  return pieceFrame(fc, faultPiece(spec, fc, i), null);
}

function faultPiece(spec: FaultSpec, fc: FrameContext, i: number): Piece {
  if (spec.mode === 'mid_reasoning') {
    // Completions have no reasoning field: the same text opens a think block that never closes.
    if (fc.kind === 'completions')
      return { kind: 'content', text: (i === 0 ? '<think>' : '') + faultText(i) };
    return { kind: 'reasoning', text: faultText(i) };
  }
  if (spec.mode === 'mid_tool_call') {
    if (i === 0) return { kind: 'tool_start', index: 0, ...FAULT_TOOL };
    return { kind: 'tool_args', index: 0, text: faultArgumentFragment(i - 1) };
  }
  return { kind: 'content', text: faultText(i) };
}

function tailFrames(spec: FaultSpec, ctx: FaultContext): string[] {
  const fc = ctx.frame;
  switch (spec.mode) {
    case 'error_envelope_200':
      return [
        dataFrame({
          error: {
            message: ERROR_ENVELOPE_MESSAGE,
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
          message: IN_STREAM_ERROR_MESSAGE,
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

/** The first part of the next content frame (see `tearFrame`). */
export function tornFrame(spec: FaultSpec, fc: FrameContext): Buffer {
  const frame = contentFrame({ ...spec, mode: 'cut_mid_frame' }, fc, spec.afterChunks);
  return tearFrame(frame, faultText(spec.afterChunks), spec.utf8);
}
