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
import { errorEvent } from './errors.js';
import {
  MESSAGE_STOP_EVENT,
  PING_EVENT,
  blockStop,
  inputJsonDelta,
  inputUsage,
  messageDelta,
  messageStart,
  textBlockStart,
  textDelta,
  thinkingBlockStart,
  thinkingDelta,
  toolUseBlockStart,
  type MessageIdentity,
} from './events.js';

export interface MessagesFaultContext {
  identity: MessageIdentity;
  promptTokens: number;
}

/** Fault streams carry a fixed message id, so the same trigger gives byte-identical events. */
export const FAULT_MESSAGE_ID = 'msg_sim_fault';
export const FAULT_TOOL_USE_ID = 'toolu_sim_fault_0';

/**
 * The whole fault as Anthropic events: `message_start`, `ping` and the first `content_block_start`,
 * then `after_chunks` content frames (`content_block_delta` events), then the mode's tail. A pure
 * function of the mode, its parameters, the model and the prompt token count. Fault streams report
 * the whole prompt as `input_tokens` (no cache reads), which keeps them byte-identical run to run.
 */
export function messagesFaultScript(spec: FaultSpec, ctx: MessagesFaultContext): FaultScript {
  function* frames(): Generator<string> {
    const usage = spec.mode === 'no_usage' ? undefined : inputUsage(ctx.promptTokens, 0);
    yield messageStart(ctx.identity, usage);
    yield PING_EVENT;
    yield blockStartFor(spec);
    for (let i = 0; i < spec.afterChunks; i++) yield contentEvent(spec, i);
    yield* tailEvents(spec);
  }
  return {
    frames: { [Symbol.iterator]: frames },
    terminal: faultTerminal(spec, () =>
      tearFrame(contentEvent(spec, spec.afterChunks), faultText(spec.afterChunks), spec.utf8),
    ),
  };
}

/** The block the partial output streams into: thinking, tool_use or text, by mode. */
function blockStartFor(spec: FaultSpec): string {
  if (spec.mode === 'mid_reasoning') return thinkingBlockStart(0);
  if (spec.mode === 'mid_tool_call') return toolUseBlockStart(0, FAULT_TOOL_USE_ID, FAULT_TOOL_NAME);
  return textBlockStart(0);
}

/** Content frame `i`: a delta of block 0. */
function contentEvent(spec: FaultSpec, i: number): string {
  if (spec.mode === 'mid_reasoning') return thinkingDelta(0, faultText(i));
  if (spec.mode === 'mid_tool_call') return inputJsonDelta(0, faultArgumentFragment(i));
  return textDelta(0, faultText(i));
}

function tailEvents(spec: FaultSpec): string[] {
  switch (spec.mode) {
    case 'error_envelope_200':
      return [errorEvent('overloaded_error', ERROR_ENVELOPE_MESSAGE)];
    case 'error_400_in_sse':
      return [errorEvent('invalid_request_error', IN_STREAM_ERROR_MESSAGE)];
    case 'no_done':
      return [blockStop(0), messageDelta('end_turn', null, spec.afterChunks)];
    case 'no_usage':
      return [blockStop(0), messageDelta('end_turn', null, undefined), MESSAGE_STOP_EVENT];
    case 'cancelled_499':
      return [CANCELLED_499_FRAME];
    default:
      return [];
  }
}
