/**
 * Chat-completions streams for the stream translation's tests: chunk objects as vLLM and OpenAI
 * send them, and their SSE text.
 */

export type Chunk = Record<string, unknown>;

export function chunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
  extra: Chunk = {},
): Chunk {
  return {
    id: 'chatcmpl-7',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason, ...extra }],
  };
}

export function usageChunk(prompt: number, completion: number, cached?: number): Chunk {
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached };
  return {
    id: 'chatcmpl-7',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'upstream-model',
    choices: [],
    usage,
  };
}

export function toolFragment(
  index: number,
  args: string,
  start?: { id: string; name: string },
): Record<string, unknown> {
  const fragment: Record<string, unknown> = { index, function: { arguments: args } };
  if (start !== undefined) {
    fragment.id = start.id;
    fragment.type = 'function';
    fragment.function = { name: start.name, arguments: args };
  }
  return fragment;
}

/** The SSE text of `events`: chunk objects as data events, and the string `[DONE]` as the sentinel. */
export function sse(events: readonly (Chunk | '[DONE]')[]): string {
  return events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');
}
