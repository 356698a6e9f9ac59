/**
 * The bytes the benchmark sends and the upstream answers: small, realistic chat-completion
 * objects that also pass the strict-mode response schemas, so strict rows measure the real work.
 */

export const ALIAS = 'bench';
export const CHAT_PATH = '/v1/chat/completions';

/** Request header asking the upstream for an SSE answer of this many data chunks. */
export const STREAM_HEADER = 'x-bench-stream-chunks';
/** Request header asking the upstream to pace those chunks, one per this many milliseconds. */
export const INTERVAL_HEADER = 'x-bench-interval-ms';

export const STREAM_CHUNKS = 50;

export function chatRequestBody(alias: string, stream: boolean): string {
  return JSON.stringify({
    model: alias,
    messages: [
      { role: 'system', content: 'You are a concise assistant.' },
      { role: 'user', content: 'Say hello to the benchmark in one short sentence.' },
    ],
    max_tokens: 64,
    temperature: 0.2,
    ...(stream ? { stream: true } : {}),
  });
}

const CREATED = 1_700_000_000;
const UPSTREAM_MODEL = 'bench-upstream-model';

export const CHAT_COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench0000000000000000000000',
  object: 'chat.completion',
  created: CREATED,
  model: UPSTREAM_MODEL,
  system_fingerprint: 'fp_bench',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello, benchmark! Nice to meet you.', refusal: null },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 28, completion_tokens: 9, total_tokens: 37 },
});

function chunk(delta: Record<string, unknown>, finishReason: string | null): string {
  return JSON.stringify({
    id: 'chatcmpl-bench0000000000000000000000',
    object: 'chat.completion.chunk',
    created: CREATED,
    model: UPSTREAM_MODEL,
    system_fingerprint: 'fp_bench',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

/** SSE event texts: the first carries the role, the middle ones a token, the last the finish reason. */
export const SSE_FIRST = `data: ${chunk({ role: 'assistant', content: '' }, null)}\n\n`;
export const SSE_TOKEN = `data: ${chunk({ content: ' tok' }, null)}\n\n`;
export const SSE_LAST = `data: ${chunk({}, 'stop')}\n\n`;
export const SSE_DONE = 'data: [DONE]\n\n';

/** Events a client receives per stream of `chunks` data chunks: the chunks plus `[DONE]`. */
export const eventsPerStream = (chunks: number): number => chunks + 1;
