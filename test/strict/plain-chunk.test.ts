import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sanitizePlainChunk } from '../../src/gateway/strict/plain-chunk.js';
import { ChatCompletionChunkSchema } from '../../src/gateway/strict/response-schemas.js';

/** What the schema path makes of a chunk: its JSON with `model` rewritten, or undefined. */
function viaSchema(chunk: unknown, alias: string): string | undefined {
  const parsed = ChatCompletionChunkSchema.safeParse(chunk);
  if (!parsed.success) return undefined;
  const out = parsed.data;
  out.model = alias;
  return JSON.stringify(out);
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
  const all = { ...fields, vendor_extra: tricky };
  return fc
    .record(all, { requiredKeys: [] })
    .chain((picked) => {
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
    audio: fc.constantFrom(null, { id: 'a' }),
    tool_calls: fc.constantFrom(null, [{ index: 0, id: 't' }]),
    reasoning_content: nullableString,
  }),
);
const choice = mostly(
  object(
    {
      index: mostly(fc.nat(3)),
      delta,
      finish_reason: mostly(nullableString),
      logprobs: fc.constantFrom(null, { content: null }),
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
    moderation: fc.constantFrom(null, { input: null }),
    usage,
  },
  ['id', 'object', 'created', 'choices'],
).map((c) => JSON.parse(JSON.stringify(c)) as Record<string, unknown>);

describe('sanitizePlainChunk', () => {
  it('gives the same bytes as the schema path whenever it answers', () => {
    let taken = 0;
    fc.assert(
      fc.property(chunk, (c) => {
        const fast = sanitizePlainChunk(c, 'alias');
        if (fast === undefined) return;
        taken++;
        expect(fast).toBe(viaSchema(c, 'alias'));
      }),
      { numRuns: 4000 },
    );
    expect(taken).toBeGreaterThan(100);
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
      const fast = sanitizePlainChunk(c, 'alias');
      expect(fast).toBeDefined();
      expect(fast).toBe(viaSchema(c, 'alias'));
    }
    expect(JSON.parse(sanitizePlainChunk(chunks[1]!, 'alias')!)).toEqual({
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
      expect(sanitizePlainChunk(c, 'alias')).toBeUndefined();
  });
});
