import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sanitizePlainChat } from '../../src/gateway/strict/plain-chat-response.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
} from '../../src/gateway/strict/response-schemas.js';

type Kind = 'chat_completion' | 'chat_completion_chunk';

/** What the schema path makes of a body: its JSON with `model` rewritten, or undefined. */
function viaSchema(kind: Kind, body: unknown, alias: string): string | undefined {
  const schema = kind === 'chat_completion' ? ChatCompletionSchema : ChatCompletionChunkSchema;
  const parsed = schema.safeParse(body);
  if (!parsed.success) return undefined;
  const out = parsed.data;
  out.model = alias;
  return JSON.stringify(out);
}

/**
 * On generated bodies, the fast path's answer equals the schema path's bytes whenever it answers,
 * and it answers often enough for that to mean something.
 */
function expectSameBytesAsSchema(kind: Kind, bodies: fc.Arbitrary<Record<string, unknown>>): void {
  let taken = 0;
  fc.assert(
    fc.property(bodies, (body) => {
      const fast = sanitizePlainChat(kind, body, 'alias');
      if (fast === undefined) return;
      taken++;
      expect(fast).toBe(viaSchema(kind, body, 'alias'));
    }),
    { numRuns: 4000 },
  );
  expect(taken).toBeGreaterThan(100);
}

const tricky = fc.constantFrom<unknown>(null, '', 'x', 0, 3, -1.5, 1e308, true, [], {}, ['a'], { a: 1 });

/** Mostly the valid value, sometimes something of another type. */
const mostly = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 15, arbitrary: valid }, { weight: 1, arbitrary: tricky });

/**
 * An object with some of `fields` (those in `required` far more often) plus sometimes an unknown
 * key, its keys in random order: engines do not send the schema's order.
 */
function object(
  fields: Record<string, fc.Arbitrary<unknown>>,
  required: readonly string[] = [],
): fc.Arbitrary<Record<string, unknown>> {
  const all: Record<string, fc.Arbitrary<unknown>> = { ...fields, vendor_extra: tricky };
  return fc
    .record(all, { requiredKeys: [] })
    .chain((picked: Record<string, unknown>) => {
      const keys = Object.keys(picked);
      return fc
        .tuple(
          fc.shuffledSubarray(keys, { minLength: keys.length }),
          fc.double({ min: 0, max: 1, noNaN: true }),
        )
        .map(([ordered, drop]) => ({ ordered, drop, picked }));
    })
    .chain(({ ordered, drop, picked }) =>
      fc.record(Object.fromEntries(required.map((key) => [key, fields[key]!]))).map((forced) => {
        const out: Record<string, unknown> = {};
        for (const key of ordered) out[key] = picked[key];
        // Required fields are present nineteen times in twenty.
        if (drop > 0.05) for (const key of required) if (!(key in out)) out[key] = forced[key];
        return out;
      }),
    );
}

/** Null mostly, sometimes a value only the schema path handles. */
const mostlyNull = (value: unknown): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(value) });

const nullableString = fc.oneof(fc.constant(null), fc.string({ maxLength: 4 }));
const count = mostly(fc.oneof(fc.nat(1000), fc.constant(null)));
const details = mostly(
  fc.oneof(
    fc.constant(null),
    object({ audio_tokens: count, reasoning_tokens: count, cached_tokens: count, text_tokens: count }),
  ),
);
const usage = mostly(
  fc.oneof(
    fc.constant(null),
    object(
      {
        completion_tokens: mostly(fc.nat(100)),
        prompt_tokens: mostly(fc.nat(100)),
        total_tokens: mostly(fc.nat(100)),
        completion_tokens_details: details,
        prompt_tokens_details: details,
      },
      ['completion_tokens', 'prompt_tokens', 'total_tokens'],
    ),
  ),
);
const delta = mostly(
  object({
    role: mostly(fc.constantFrom('assistant', 'user', 'tool', 'bot', null)),
    content: mostly(nullableString),
    refusal: mostly(nullableString),
    audio: mostlyNull({ id: 'a' }),
    tool_calls: mostlyNull([{ index: 0, id: 't' }]),
    reasoning_content: nullableString,
  }),
);
const choice = mostly(
  object(
    {
      index: mostly(fc.nat(3)),
      delta,
      finish_reason: mostly(nullableString),
      logprobs: mostlyNull({ content: null }),
      stop_reason: tricky,
    },
    ['index', 'delta'],
  ),
);
const chunk = object(
  {
    id: mostly(fc.string({ maxLength: 6 })),
    object: mostly(fc.constantFrom('chat.completion.chunk', 'chat.completion.chunk', 'chat.completion')),
    created: mostly(fc.nat(2_000_000_000)),
    model: mostly(nullableString),
    choices: mostly(fc.array(choice, { maxLength: 3 })),
    service_tier: mostly(nullableString),
    system_fingerprint: mostly(nullableString),
    obfuscation: mostly(nullableString),
    moderation: mostlyNull({ input: null }),
    usage,
  },
  ['id', 'object', 'created', 'choices'],
).map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>);

describe('sanitizePlainChat, chunks', () => {
  it('gives the same bytes as the schema path whenever it answers', () => {
    expectSameBytesAsSchema('chat_completion_chunk', chunk);
  });

  it('takes the chunks engines send for text, in their own key order', () => {
    const chunks = [
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'upstream',
        system_fingerprint: 'fp',
        choices: [
          { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
        ],
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'upstream',
        choices: [
          {
            index: 0,
            delta: { content: 'tok', reasoning_content: 'hidden' },
            finish_reason: null,
            stop_reason: 7,
          },
        ],
      },
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        choices: [],
        usage: {
          prompt_tokens: 3,
          completion_tokens: 2,
          total_tokens: 5,
          prompt_tokens_details: { cached_tokens: 0 },
        },
      },
    ];
    for (const c of chunks) {
      const fast = sanitizePlainChat('chat_completion_chunk', c, 'alias');
      expect(fast).toBeDefined();
      expect(fast).toBe(viaSchema('chat_completion_chunk', c, 'alias'));
    }
    expect(JSON.parse(sanitizePlainChat('chat_completion_chunk', chunks[1]!, 'alias')!)).toEqual({
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'alias',
      choices: [{ index: 0, delta: { content: 'tok' }, finish_reason: null }],
    });
  });

  it('leaves tool calls, logprobs and malformed chunks to the schema', () => {
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1 };
    for (const c of [
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 't' }] } }] },
      { ...base, choices: [{ index: 0, delta: {}, logprobs: { content: [] } }] },
      { ...base, choices: [{ index: 0 }] },
      { ...base, choices: [{ index: '0', delta: {} }] },
      { ...base, object: 'chat.completion', choices: [] },
      { ...base, created: '1', choices: [] },
    ])
      expect(sanitizePlainChat('chat_completion_chunk', c, 'alias')).toBeUndefined();
  });
});

const assistantMessage = mostly(
  object(
    {
      role: mostly(fc.constantFrom('assistant', 'assistant', 'user')),
      content: mostly(nullableString),
      refusal: mostly(nullableString),
      annotations: mostlyNull([]),
      audio: mostlyNull({ id: 'a' }),
      function_call: mostlyNull({ name: 'f', arguments: '' }),
      tool_calls: mostlyNull([]),
      reasoning_content: nullableString,
    },
    ['role'],
  ),
);
const completionChoice = mostly(
  object(
    {
      index: mostly(fc.nat(3)),
      message: assistantMessage,
      finish_reason: mostly(nullableString),
      logprobs: mostlyNull({ content: null }),
      stop_reason: tricky,
    },
    ['index', 'message'],
  ),
);
const completion = object(
  {
    id: mostly(fc.string({ maxLength: 6 })),
    object: mostly(fc.constantFrom('chat.completion', 'chat.completion', 'chat.completion.chunk')),
    created: mostly(fc.nat(2_000_000_000)),
    model: mostly(nullableString),
    choices: mostly(fc.array(completionChoice, { maxLength: 3 })),
    metadata: mostlyNull({ k: 'v' }),
    moderation: mostlyNull({ input: null }),
    service_tier: mostly(nullableString),
    system_fingerprint: mostly(nullableString),
    usage,
  },
  ['id', 'object', 'created', 'choices'],
).map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>);

describe('sanitizePlainChat, completions', () => {
  it('gives the same bytes as the schema path whenever it answers', () => {
    expectSameBytesAsSchema('chat_completion', completion);
  });

  it('takes a text completion in the order engines send it', () => {
    const body = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'upstream',
      system_fingerprint: 'fp',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello', refusal: null, reasoning_content: 'hidden' },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 28, completion_tokens: 9, total_tokens: 37 },
    };
    const fast = sanitizePlainChat('chat_completion', body, 'alias');
    expect(fast).toBe(viaSchema('chat_completion', body, 'alias'));
    expect(JSON.parse(fast!)).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'alias',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello', refusal: null },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      system_fingerprint: 'fp',
      usage: { completion_tokens: 9, prompt_tokens: 28, total_tokens: 37 },
    });
  });

  it('leaves tool calls, metadata and other roles to the schema', () => {
    const base = { id: 'c', object: 'chat.completion', created: 1 };
    for (const c of [
      {
        ...base,
        choices: [{ index: 0, message: { role: 'assistant', tool_calls: [{ id: 't', type: 'function' }] } }],
      },
      { ...base, choices: [{ index: 0, message: { role: 'user', content: 'x' } }] },
      { ...base, choices: [{ index: 0, message: { content: 'x' } }] },
      { ...base, choices: [], metadata: { k: 'v' } },
    ])
      expect(sanitizePlainChat('chat_completion', c, 'alias')).toBeUndefined();
  });
});
