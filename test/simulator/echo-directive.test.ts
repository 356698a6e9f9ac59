import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { echoPlan, parseEchoDirective, type EchoDirective } from '../../src/simulator/directives/echo.js';
import { completionBody } from '../../src/simulator/openai/bodies.js';
import { usage } from '../../src/simulator/openai/frames.js';

const directive: fc.Arbitrary<EchoDirective> = fc.record(
  {
    text: fc.string({ unit: 'grapheme', maxLength: 60 }),
    reasoning: fc.string({ maxLength: 30 }),
    tool_calls: fc.array(
      fc.record(
        {
          name: fc.string({ minLength: 1, maxLength: 10 }),
          arguments: fc.oneof(
            fc.string({ maxLength: 40 }),
            fc.dictionary(fc.string({ maxLength: 5 }), fc.integer()),
          ),
          id: fc.string({ minLength: 1, maxLength: 8 }),
        },
        { requiredKeys: ['name'] },
      ),
      { maxLength: 3 },
    ),
    finish_reason: fc.constantFrom('stop', 'length', 'tool_calls', 'content_filter'),
  },
  { requiredKeys: [] },
);

/** Other prompt lines never start with "@sim". */
const otherLine = fc.string({ maxLength: 40 }).filter((l) => !/^[ \t]*@sim/.test(l) && !/[\r\n]/.test(l));

function answer(d: EchoDirective) {
  const plan = echoPlan(d, 'chat');
  const body = completionBody(
    { kind: 'chat', id: 'x', created: 0, model: 'm', reasoningField: 'reasoning_content' },
    plan,
    usage(0, plan.length),
  ) as { choices: { message: Record<string, unknown>; finish_reason: string }[] };
  return body.choices[0]!;
}

describe('echo directives', () => {
  it('finds a directive line anywhere in the prompt and scripts exactly what it says', () => {
    fc.assert(
      fc.property(
        fc.array(otherLine, { maxLength: 4 }),
        directive,
        fc.array(otherLine, { maxLength: 4 }),
        (before, d, after) => {
          const text = [...before, `@sim ${JSON.stringify(d)}`, ...after].join('\n');
          const parsed = parseEchoDirective(text);
          expect(parsed).toEqual({ found: true, ok: true, directive: d });

          const choice = answer(d);
          const calls = d.tool_calls ?? [];
          expect(choice.finish_reason).toBe(d.finish_reason ?? (calls.length > 0 ? 'tool_calls' : 'stop'));
          expect(choice.message.content ?? '').toBe(d.text ?? '');
          expect(choice.message.reasoning_content ?? '').toBe(d.reasoning ?? '');
          const got = choice.message.tool_calls as { function: { name: string; arguments: string } }[];
          expect(got.map((c) => c.function.name)).toEqual(calls.map((c) => c.name));
          expect(got.map((c) => c.function.arguments)).toEqual(
            calls.map((c) =>
              typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
            ),
          );
        },
      ),
    );
  });

  it('reads directives whose JSON carries the separators JSON.stringify leaves unescaped', () => {
    for (const text of ['a\u2028b', '\u2029', 'x\u0085y']) {
      expect(parseEchoDirective(`@sim ${JSON.stringify({ text })}`)).toEqual({
        found: true,
        ok: true,
        directive: { text },
      });
    }
  });

  it('finds nothing in text without a directive line, and never throws on arbitrary input', () => {
    fc.assert(
      fc.property(fc.array(otherLine, { maxLength: 6 }), (lines) => {
        expect(parseEchoDirective(lines.join('\n'))).toEqual({ found: false });
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (junk) => {
        const result = parseEchoDirective(`@sim ${junk}`);
        expect(result.found).toBe(true);
      }),
    );
  });

  it('the last directive line wins', () => {
    const parsed = parseEchoDirective('@sim {"text":"one"}\n@sim {"text":"two"}');
    expect(parsed).toEqual({ found: true, ok: true, directive: { text: 'two' } });
  });

  it('refuses malformed directives with a reason', () => {
    for (const bad of [
      '@sim',
      '@sim not json',
      '@sim {"text":1}',
      '@sim {"colour":"red"}',
      '@sim {"tool_calls":[{}]}',
    ]) {
      const parsed = parseEchoDirective(bad);
      expect(parsed.found && !parsed.ok ? parsed.message : undefined, bad).toMatch(/invalid echo directive/);
    }
  });

  it('streams completions as raw text with think and tool_call blocks', () => {
    const plan = echoPlan(
      { reasoning: 'hmm', text: 'Hi', tool_calls: [{ name: 'f', arguments: { a: 1 } }] },
      'completions',
    );
    let text = '';
    for (let i = 0; i < plan.length; i++) {
      const piece = plan.pieceAt(i);
      if (piece.kind === 'content') text += piece.text;
    }
    expect(text).toBe('<think>hmm</think>Hi<tool_call>{"name": "f", "arguments": {"a":1}}</tool_call>');
    expect(plan.finishReason).toBe('tool_calls');
  });
});
