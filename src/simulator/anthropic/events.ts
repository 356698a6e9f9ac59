import type { FinishReason } from '../openai/plan.js';

/**
 * Anthropic's Messages stream framing: every event has an `event:` line naming its type and a
 * `data:` line whose JSON carries the same `type`. There is no `[DONE]`: `message_stop` ends it.
 */

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal';

const STOP_REASONS: Record<FinishReason, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

/** The stop reason of an answer that ended for `finishReason`, or ran into `stopSequence`. */
export function stopReason(finishReason: FinishReason, stopSequence: string | null): StopReason {
  return stopSequence !== null ? 'stop_sequence' : STOP_REASONS[finishReason];
}

/** What every event of one message shares. */
export interface MessageIdentity {
  id: string;
  /** The model as the request named it. */
  model: string;
}

export interface InputUsage {
  /** Prompt tokens not read from the prefix cache: Anthropic counts cached ones apart. */
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** Input usage of a prompt of `promptTokens` whose first `cachedTokens` were cached. */
export function inputUsage(promptTokens: number, cachedTokens: number): InputUsage {
  return {
    input_tokens: promptTokens - cachedTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cachedTokens,
  };
}

export type BlockType = 'text' | 'thinking' | 'tool_use';

export function event(type: string, data: string): string {
  return `event: ${type}\ndata: ${data}\n\n`;
}

/** The first event: the message with empty content; `usage` is left out when undefined. */
export function messageStart(message: MessageIdentity, usage: InputUsage | undefined): string {
  const body: Record<string, unknown> = {
    id: message.id,
    type: 'message',
    role: 'assistant',
    model: message.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
  };
  if (usage) body.usage = { ...usage, output_tokens: 1 };
  return event('message_start', JSON.stringify({ type: 'message_start', message: body }));
}

export const PING_EVENT = event('ping', '{"type":"ping"}');

export const MESSAGE_STOP_EVENT = event('message_stop', '{"type":"message_stop"}');

export function textBlockStart(index: number): string {
  return blockStart(index, '{"type":"text","text":""}');
}

export function thinkingBlockStart(index: number): string {
  return blockStart(index, '{"type":"thinking","thinking":"","signature":""}');
}

export function toolUseBlockStart(index: number, id: string, name: string): string {
  return blockStart(
    index,
    `{"type":"tool_use","id":${JSON.stringify(id)},"name":${JSON.stringify(name)},"input":{}}`,
  );
}

function blockStart(index: number, contentBlock: string): string {
  return event(
    'content_block_start',
    `{"type":"content_block_start","index":${index},"content_block":${contentBlock}}`,
  );
}

export function textDelta(index: number, text: string): string {
  return blockDelta(index, `{"type":"text_delta","text":${JSON.stringify(text)}}`);
}

export function thinkingDelta(index: number, thinking: string): string {
  return blockDelta(index, `{"type":"thinking_delta","thinking":${JSON.stringify(thinking)}}`);
}

export function signatureDelta(index: number, signature: string): string {
  return blockDelta(index, `{"type":"signature_delta","signature":${JSON.stringify(signature)}}`);
}

export function inputJsonDelta(index: number, partialJson: string): string {
  return blockDelta(index, `{"type":"input_json_delta","partial_json":${JSON.stringify(partialJson)}}`);
}

function blockDelta(index: number, delta: string): string {
  return event('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":${delta}}`);
}

export function blockStop(index: number): string {
  return event('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
}

/** The stop reason and the output token count; `outputTokens` undefined leaves the usage out. */
export function messageDelta(
  reason: StopReason,
  stopSequence: string | null,
  outputTokens: number | undefined,
): string {
  const body: Record<string, unknown> = {
    type: 'message_delta',
    delta: { stop_reason: reason, stop_sequence: stopSequence },
  };
  if (outputTokens !== undefined) body.usage = { output_tokens: outputTokens };
  return event('message_delta', JSON.stringify(body));
}
