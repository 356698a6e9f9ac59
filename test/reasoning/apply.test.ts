import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EFFORTS } from '../../src/gateway/config/schema/index.js';
import {
  applyReasoning,
  planReasoning,
  type CompiledReasoning,
  type ReasoningPlan,
  type ReasoningPlanResult,
} from '../../src/gateway/reasoning/index.js';
import {
  budgeted,
  chatBody,
  deepFreeze,
  renamed,
  responsesBody,
  responsesBudgeted,
  responsesSwitch,
  switchOnly,
} from './fixtures.js';

function expectPlan(result: ReasoningPlanResult): ReasoningPlan {
  if (!result.ok) throw new Error(`expected a plan, got ${result.status} ${result.code}: ${result.message}`);
  return result;
}

describe('applyReasoning: provider-scoped writes, per attempt', () => {
  // A fallback pool: a vLLM-style budget, an upstream speaking the canonical field, one without translation.
  const pool: readonly (CompiledReasoning | undefined)[] = [budgeted, renamed, undefined];
  const body = chatBody({ reasoning_effort: 'high', max_completion_tokens: 10_000, temperature: 0.2 });
  const plan = expectPlan(planReasoning('chat_completions', body, pool, 'non-strict'));

  it('attempt 0: the budget and the template switch, without the canonical field', () => {
    expect(applyReasoning(plan, 0, body)).toEqual({
      model: 'llama',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 10_000,
      temperature: 0.2,
      thinking_token_budget: 8192,
      chat_template_kwargs: { enable_thinking: true },
    });
  });

  it('attempt 1: the canonical field rewritten by its own translation', () => {
    const sent = applyReasoning(plan, 1, body);
    expect(sent.reasoning_effort).toBe('high');
    expect(sent).not.toHaveProperty('thinking_token_budget');
    expect(sent).not.toHaveProperty('chat_template_kwargs');
  });

  it('attempt 2: no translation, so the very same body (the caller can forward the original bytes)', () => {
    expect(applyReasoning(plan, 2, body)).toBe(body);
  });

  it('the shared body is never mutated (it is deeply frozen) and untouched subtrees are shared', () => {
    for (let i = 0; i < pool.length; i += 1) {
      const sent = applyReasoning(plan, i, body);
      expect(sent.messages).toBe(body.messages);
    }
    expect(body.reasoning_effort).toBe('high');
    expect(body).not.toHaveProperty('thinking_token_budget');
  });

  it('applying twice gives equal, independent bodies', () => {
    const first = applyReasoning(plan, 0, body);
    const second = applyReasoning(plan, 0, body);
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    expect(second.chat_template_kwargs).not.toBe(first.chat_template_kwargs);
  });

  it('an index outside the plan is a wiring error', () => {
    expect(() => applyReasoning(plan, 3, body)).toThrow(RangeError);
    expect(() => applyReasoning(plan, -1, body)).toThrow(RangeError);
    expect(() => applyReasoning(plan, 0.5, body)).toThrow(RangeError);
  });

  it('the mapped value, not the client value, goes upstream (xhigh -> high)', () => {
    const xhigh = chatBody({ reasoning_effort: 'xhigh' });
    const planned = expectPlan(planReasoning('chat_completions', xhigh, [renamed], 'strict'));
    expect(applyReasoning(planned, 0, xhigh).reasoning_effort).toBe('high');
  });

  it('the canonical field is dropped for a translation that does not write it', () => {
    const low = chatBody({ reasoning_effort: 'low' });
    const planned = expectPlan(planReasoning('chat_completions', low, [switchOnly], 'non-strict'));
    expect(applyReasoning(planned, 0, low)).toEqual({
      model: 'llama',
      messages: [{ role: 'user', content: 'hi' }],
      chat_template_kwargs: { enable_thinking: true },
    });
  });

  it('a provider translating only the other surface receives the chat request unchanged', () => {
    const low = chatBody({ reasoning_effort: 'low' });
    const planned = expectPlan(
      planReasoning('chat_completions', low, [switchOnly, responsesSwitch], 'non-strict'),
    );
    expect(applyReasoning(planned, 1, low)).toBe(low);
    expect(applyReasoning(planned, 0, low)).not.toBe(low);
  });
});

describe('applyReasoning on the Responses surface', () => {
  it('reasoning.effort is replaced by the writes; other reasoning fields are kept', () => {
    const body = responsesBody({ reasoning: { effort: 'high', summary: 'auto' }, max_output_tokens: 7000 });
    const plan = expectPlan(planReasoning('responses', body, [responsesBudgeted], 'non-strict'));
    expect(applyReasoning(plan, 0, body)).toEqual({
      model: 'llama',
      input: 'hi',
      max_output_tokens: 7000,
      reasoning: { summary: 'auto', effort: 'high', max_tokens: 6000 },
    });
    expect(body.reasoning).toEqual({ effort: 'high', summary: 'auto' });
  });

  it('a reasoning object left empty is dropped when the translation writes elsewhere', () => {
    const body = responsesBody({ reasoning: { effort: 'low' } });
    const plan = expectPlan(planReasoning('responses', body, [responsesSwitch], 'non-strict'));
    expect(applyReasoning(plan, 0, body)).toEqual({ model: 'llama', input: 'hi', enable_thinking: true });
  });

  it('pool with mixed translations: each attempt gets its own rewrite', () => {
    const body = responsesBody({ reasoning: { effort: 'medium' }, max_output_tokens: 4000 });
    const plan = expectPlan(
      planReasoning('responses', body, [responsesSwitch, responsesBudgeted, undefined], 'strict'),
    );
    expect(applyReasoning(plan, 0, body)).toEqual({
      model: 'llama',
      input: 'hi',
      max_output_tokens: 4000,
      enable_thinking: true,
    });
    expect(applyReasoning(plan, 1, body).reasoning).toEqual({ effort: 'medium', max_tokens: 2048 });
    expect(applyReasoning(plan, 2, body)).toBe(body);
  });
});

describe('properties', () => {
  const pools = fc.array(
    fc.constantFrom<CompiledReasoning | undefined>(budgeted, renamed, switchOnly, undefined),
    {
      minLength: 1,
      maxLength: 4,
    },
  );
  const extras = fc.dictionary(
    fc.constantFrom('temperature', 'chat_template_kwargs', 'stream', 'metadata', 'max_tokens'),
    fc.oneof(fc.integer(), fc.boolean(), fc.string(), fc.dictionary(fc.string(), fc.integer())),
    { maxKeys: 4 },
  );

  it('never mutates the body; untranslated providers get it by identity; writes land as configured', () => {
    fc.assert(
      fc.property(
        pools,
        fc.constantFrom(...EFFORTS),
        fc.integer({ min: 0, max: 20_000 }),
        extras,
        (providers, effort, limit, extra) => {
          const body = chatBody({ ...extra, reasoning_effort: effort, max_completion_tokens: limit });
          const snapshot = JSON.stringify(body);
          const result = planReasoning('chat_completions', body, providers, 'non-strict');
          if (!result.ok) return;
          providers.forEach((provider, index) => {
            const sent = applyReasoning(result, index, body);
            const surface = provider?.chat_completions;
            if (surface === undefined) {
              expect(sent).toBe(body);
              return;
            }
            for (const write of surface.writes.get(effort)!) {
              let cursor: unknown = sent;
              for (const segment of write.segments) cursor = (cursor as Record<string, unknown>)[segment];
              expect(cursor).toBe(write.value);
            }
            const writesCanonical = surface.writes.get(effort)!.some((w) => w.path === '/reasoning_effort');
            if (!writesCanonical) expect(sent).not.toHaveProperty('reasoning_effort');
            expect(sent.max_completion_tokens).toBe(limit);
          });
          expect(JSON.stringify(body)).toBe(snapshot);
        },
      ),
    );
  });

  it('a plan either refuses, or accepts with a limit strictly above every budget of the pool', () => {
    fc.assert(
      fc.property(
        pools,
        fc.constantFrom(...EFFORTS),
        fc.option(fc.integer({ min: -10, max: 20_000 })),
        (providers, effort, limit) => {
          const body = deepFreeze({ model: 'm', reasoning_effort: effort, max_tokens: limit });
          const result = planReasoning('chat_completions', body, providers, 'strict');
          const budgets = providers.flatMap((p) => {
            const b = p?.chat_completions?.budgets.get(effort);
            return b === undefined ? [] : [b];
          });
          const unsupported = providers.some(
            (p) => p?.chat_completions !== undefined && !p.chat_completions.writes.has(effort),
          );
          if (unsupported) {
            expect(result.ok ? 'ok' : result.code).toBe('unsupported_reasoning_effort');
          } else if (budgets.length > 0 && limit === null) {
            expect(result.ok ? 'ok' : result.status).toBe(422);
          } else if (budgets.length > 0 && limit !== null && limit <= Math.max(...budgets)) {
            expect(result.ok ? 'ok' : result.status).toBe(400);
          } else {
            expect(result.ok).toBe(true);
          }
        },
      ),
    );
  });
});
