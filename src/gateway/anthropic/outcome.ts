import { isRecord } from './shape.js';

/**
 * How a chat completion's end reads in the Messages API: its stop reason and usage. Shared by the
 * JSON and the stream translations, so both answer the same completion the same way.
 */

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface StopOutcome {
  readonly stopReason: StopReason;
  readonly stopSequence: string | null;
}

/**
 * The stop reason of a choice's `finish_reason`, or undefined when it has no Messages equivalent
 * (e.g. an engine's `abort`): such an answer did not end normally and must not be served as if it
 * had.
 *
 * - `stop` (or none) -> `end_turn`, or `stop_sequence` when vLLM's `stop_reason` names one of the
 *   request's stop sequences; `length` -> `max_tokens`; `content_filter` -> `refusal`.
 * - `tool_calls` / `function_call` -> `tool_use`. A Messages client runs tools when, and only when,
 *   the stop reason is `tool_use`, so the presence of tool calls decides: tool calls that end with
 *   `stop` are `tool_use`, and `tool_calls` without any call is `end_turn`.
 */
export function stopOutcome(
  finishReason: unknown,
  matchedStop: unknown,
  stopSequences: readonly string[] | undefined,
  hasToolCalls: boolean,
): StopOutcome | undefined {
  switch (finishReason) {
    case undefined:
    case null:
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      if (hasToolCalls) return TOOL_USE;
      if (
        finishReason === 'stop' &&
        typeof matchedStop === 'string' &&
        stopSequences !== undefined &&
        stopSequences.includes(matchedStop)
      ) {
        return { stopReason: 'stop_sequence', stopSequence: matchedStop };
      }
      return END_TURN;
    case 'length':
      return MAX_TOKENS;
    case 'content_filter':
      return REFUSAL;
    default:
      return undefined;
  }
}

const END_TURN: StopOutcome = { stopReason: 'end_turn', stopSequence: null };
const TOOL_USE: StopOutcome = { stopReason: 'tool_use', stopSequence: null };
const MAX_TOKENS: StopOutcome = { stopReason: 'max_tokens', stopSequence: null };
const REFUSAL: StopOutcome = { stopReason: 'refusal', stopSequence: null };

export interface MessagesUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation_input_tokens: number;
}

/**
 * Chat usage as Messages usage: Anthropic counts cached prompt tokens apart from `input_tokens`,
 * so `input_tokens` = prompt - cached, `cache_read_input_tokens` = cached. Chat providers report
 * no cache writes. Missing counts are 0.
 */
export function messagesUsage(usage: unknown): MessagesUsage {
  if (!isRecord(usage)) return NO_USAGE;
  const prompt = count(usage.prompt_tokens);
  const details = usage.prompt_tokens_details;
  const cached = Math.min(prompt, isRecord(details) ? count(details.cached_tokens) : 0);
  return {
    input_tokens: prompt - cached,
    output_tokens: count(usage.completion_tokens),
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
  };
}

const NO_USAGE: MessagesUsage = {
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
};

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}
