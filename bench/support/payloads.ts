/**
 * The bytes the benchmark sends and the upstream answers: small, realistic chat-completion
 * objects that also pass the strict-mode response schemas, so strict rows measure the real work;
 * and their Anthropic Messages counterparts, of the same size class, for the Messages rows.
 */

export const ALIAS = 'bench';
export const CHAT_PATH = '/v1/chat/completions';
export const MESSAGES_PATH = '/v1/messages';
/** The API version header every Anthropic client sends with a Messages request. */
export const ANTHROPIC_VERSION = '2023-06-01';

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

/** A small Messages request: the chat request's prompt, its system message as `system`. */
export function messagesRequestBody(alias: string, stream: boolean): string {
  return JSON.stringify({
    model: alias,
    max_tokens: 64,
    system: 'You are a concise assistant.',
    messages: [{ role: 'user', content: 'Say hello to the benchmark in one short sentence.' }],
    temperature: 0.2,
    ...(stream ? { stream: true } : {}),
  });
}

const CREATED = 1_700_000_000;
const UPSTREAM_MODEL = 'bench-upstream-model';
/** The answer's text, the same in both APIs, so a translated answer can be checked against it. */
export const ANSWER_TEXT = 'Hello, benchmark! Nice to meet you.';

export const CHAT_COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench0000000000000000000000',
  object: 'chat.completion',
  created: CREATED,
  model: UPSTREAM_MODEL,
  system_fingerprint: 'fp_bench',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: ANSWER_TEXT, refusal: null },
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

export const MESSAGE = JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: UPSTREAM_MODEL,
  content: [{ type: 'text', text: ANSWER_TEXT }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 28, output_tokens: 9 },
});

const messagesEvent = (data: Record<string, unknown>): string =>
  `event: ${data.type as string}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * Messages SSE texts, written where the chat stream writes its chunks: the first opens the message
 * and its text block, the middle ones each carry a token, the last closes the block and gives the
 * stop reason, and `message_stop` takes the place of `[DONE]`.
 */
export const MESSAGES_SSE_FIRST =
  messagesEvent({
    type: 'message_start',
    message: {
      id: 'msg_bench',
      type: 'message',
      role: 'assistant',
      model: UPSTREAM_MODEL,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 28, output_tokens: 1 },
    },
  }) + messagesEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
export const MESSAGES_SSE_TOKEN = messagesEvent({
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text: ' tok' },
});
export const MESSAGES_SSE_LAST =
  messagesEvent({ type: 'content_block_stop', index: 0 }) +
  messagesEvent({
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 48 },
  });
export const MESSAGES_SSE_STOP = messagesEvent({ type: 'message_stop' });

/**
 * Events a client receives per Messages stream of `chunks` (at least two): `message_start` and
 * `content_block_start`, a delta per token chunk, `content_block_stop`, `message_delta` and
 * `message_stop`. A chat stream translated to Messages by a proxy gives the same events.
 */
export const messagesEventsPerStream = (chunks: number): number => chunks + 3;
