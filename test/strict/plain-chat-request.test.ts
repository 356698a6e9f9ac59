import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlainChatRequest } from '../../src/gateway/strict/plain-chat-request.js';
import { ChatCompletionRequestSchema } from '../../src/gateway/strict/request-schema-chat.js';
import { validateParsedRequest } from '../../src/gateway/strict/validate-request.js';

const accepts = (body: unknown): boolean => ChatCompletionRequestSchema.safeParse(body).success;

/** Values that sit on both sides of every type the check tests. */
const tricky = fc.constantFrom<unknown>(
  null,
  undefined,
  '',
  'text',
  0,
  1,
  -3,
  0.5,
  2 ** 53,
  2 ** 53 - 1,
  1e308,
  Infinity,
  NaN,
  true,
  false,
  [],
  ['a', 'b'],
  ['a', 1],
  {},
  { include_usage: true },
);

const role = fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function', 'bot', '');
const messageKey = fc.constantFrom(
  'content',
  'name',
  'refusal',
  'tool_call_id',
  'tool_calls',
  'audio',
  'extra',
);
const message = fc.oneof(
  {
    weight: 2,
    arbitrary: fc
      .tuple(role, fc.dictionary(messageKey, tricky, { maxKeys: 3 }))
      .map(([r, rest]) => ({ role: r, ...rest })),
  },
  { weight: 3, arbitrary: fc.record({ role, content: fc.string({ maxLength: 5 }) }) },
  { weight: 1, arbitrary: tricky },
);
const topKey = fc.constantFrom(
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'seed',
  'stream',
  'stop',
  'user',
  'logprobs',
  'top_logprobs',
  'store',
  'presence_penalty',
  'frequency_penalty',
  'parallel_tool_calls',
  'safety_identifier',
  'prompt_cache_key',
  'stream_options',
  'tools',
  'reasoning_effort',
  'top_k',
  'temprature',
  '__proto__',
);
const request = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: fc.constant('m') }, { weight: 1, arbitrary: tricky }),
    fc.oneof({ weight: 4, arbitrary: fc.array(message, { maxLength: 3 }) }, { weight: 1, arbitrary: tricky }),
    fc.dictionary(topKey, tricky, { maxKeys: 3 }),
    fc.boolean(),
  )
  .map(([model, messages, rest, viaJson]) => {
    const body: Record<string, unknown> = { model, messages, ...rest };
    // Through JSON as the pipeline sees bodies (undefined fields vanish, "__proto__" is an own key).
    return viaJson ? (JSON.parse(JSON.stringify(body)) as Record<string, unknown>) : body;
  });

describe('isPlainChatRequest', () => {
  it('answers true only for requests the strict schema accepts', () => {
    let taken = 0;
    let schemaAccepted = 0;
    fc.assert(
      fc.property(request, (body) => {
        const schema = accepts(body);
        if (schema) schemaAccepted++;
        if (isPlainChatRequest(body)) {
          taken++;
          expect(schema).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
    // The generator reaches both answers often enough for the implication to mean something.
    expect(taken).toBeGreaterThan(100);
    expect(schemaAccepted - taken).toBeGreaterThan(10);
  });

  it('takes the common text-only requests, so the fast path is the one they use', () => {
    const common = [
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi', name: 'ann' },
          { role: 'assistant', content: 'hello', refusal: null },
          { role: 'developer', content: '' },
        ],
        max_tokens: 64,
        temperature: 0.2,
        top_p: null,
        stream: true,
        stop: ['\n'],
        seed: 7,
        user: 'u1',
      },
      { model: 'm', messages: [] },
    ];
    for (const body of common) {
      expect(isPlainChatRequest(body)).toBe(true);
      expect(accepts(body)).toBe(true);
    }
  });

  it('leaves everything else to the schema, which still words the error', () => {
    for (const body of [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
      { model: 'm', messages: [{ role: 'user' }] },
      { model: 'm', messages: [{ role: 'tool', content: 'x', tool_call_id: 't' }] },
      { model: 'm', messages: [], max_tokens: 1.5 },
      { model: 'm', messages: [], temprature: 1 },
      { model: 'm', messages: [], stream_options: { include_usage: true } },
      { messages: [] },
    ])
      expect(isPlainChatRequest(body)).toBe(false);

    const rejected = validateParsedRequest('chat_completions', { model: 'm', messages: [], max_tokens: 1.5 });
    expect(rejected.ok).toBe(false);
    if (!rejected.ok) expect(rejected.error.error.param).toBe('max_tokens');
  });
});
