import { describe, expect, it } from 'vitest';
import type { ReasoningSurfaceName } from '../../src/gateway/config/schema/index.js';
import {
  NATIVE_REASONING_CONTROLS,
  applyReasoning,
  planReasoning,
  reasoningErrorBody,
  type CompiledReasoning,
  type ReasoningMode,
  type ReasoningPlan,
  type ReasoningPlanResult,
} from '../../src/gateway/reasoning/index.js';
import {
  budgeted,
  chatBody,
  renamed,
  responsesBody,
  responsesBudgeted,
  responsesSwitch,
  switchOnly,
  translation,
} from './fixtures.js';

const MODES: readonly ReasoningMode[] = ['non-strict', 'strict'];

/** The plan for a chat body with `extra` over `providers`. */
const planChat = (
  extra: Record<string, unknown>,
  providers: readonly (CompiledReasoning | undefined)[],
  mode: ReasoningMode,
): ReasoningPlanResult => planReasoning('chat_completions', chatBody(extra), providers, mode);

function expectPlan(result: ReasoningPlanResult): ReasoningPlan {
  if (!result.ok) throw new Error(`expected a plan, got ${result.status} ${result.code}: ${result.message}`);
  return result;
}

function expectRefusal(result: ReasoningPlanResult) {
  if (result.ok) throw new Error('expected a rejection, got a plan');
  return result;
}

/** Every provider of the plan receives exactly the body it was given. */
function expectUnchangedForAll(plan: ReasoningPlan, body: Record<string, unknown>): void {
  plan.rewrites.forEach((_, index) => expect(applyReasoning(plan, index, body)).toBe(body));
}

describe('rule 3: an omitted effort injects nothing', () => {
  const pools: readonly (readonly (CompiledReasoning | undefined)[])[] = [
    [switchOnly],
    [budgeted, renamed, undefined],
    [responsesBudgeted, responsesSwitch],
  ];

  it.each(MODES)('chat, effort absent or null (%s)', (mode) => {
    for (const providers of pools) {
      for (const body of [chatBody(), chatBody({ reasoning_effort: null })]) {
        const plan = expectPlan(planReasoning('chat_completions', body, providers, mode));
        expect(plan.effort).toBeUndefined();
        expect(plan.rewrites).toHaveLength(providers.length);
        expectUnchangedForAll(plan, body);
      }
    }
  });

  it.each(MODES)('Responses, reasoning absent, null, or without effort (%s)', (mode) => {
    const bodies = [
      responsesBody(),
      responsesBody({ reasoning: null }),
      responsesBody({ reasoning: { summary: 'auto' } }),
      responsesBody({ reasoning: { effort: null, summary: 'auto' } }),
    ];
    for (const providers of pools) {
      for (const body of bodies) {
        const plan = expectPlan(planReasoning('responses', body, providers, mode));
        expect(plan.effort).toBeUndefined();
        expectUnchangedForAll(plan, body);
      }
    }
  });

  it('a budgeted translation asks for no limit when no effort is sent', () => {
    const plan = expectPlan(planChat({}, [budgeted], 'non-strict'));
    expect(plan.budget).toBeUndefined();
  });
});

describe('effort value', () => {
  it.each([['turbo'], ['HIGH'], [''], [3], [true], [{ effort: 'high' }], [['high']]])(
    'chat: %j is not one of the seven efforts -> 400 invalid_reasoning_effort',
    (value) => {
      const refusal = expectRefusal(planChat({ reasoning_effort: value }, [switchOnly], 'non-strict'));
      expect(refusal).toMatchObject({
        status: 400,
        code: 'invalid_reasoning_effort',
        param: 'reasoning_effort',
        type: 'invalid_request_error',
      });
      expect(refusal.message).toContain('`none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`');
    },
  );

  it('Responses: reasoning.effort outside the seven -> 400 on reasoning.effort', () => {
    const refusal = expectRefusal(
      planReasoning(
        'responses',
        responsesBody({ reasoning: { effort: 'turbo' } }),
        [responsesSwitch],
        'strict',
      ),
    );
    expect(refusal).toMatchObject({
      status: 400,
      code: 'invalid_reasoning_effort',
      param: 'reasoning.effort',
    });
  });

  it('Responses: a reasoning that is not an object -> 400 on reasoning', () => {
    for (const reasoning of ['high', 5, ['high']]) {
      const refusal = expectRefusal(
        planReasoning('responses', responsesBody({ reasoning }), [responsesSwitch], 'non-strict'),
      );
      expect(refusal).toMatchObject({ status: 400, code: 'invalid_reasoning_effort', param: 'reasoning' });
    }
  });

  it('a pool where nothing translates the surface forwards any effort untouched (transparent)', () => {
    for (const providers of [[undefined], [undefined, undefined], [responsesSwitch]]) {
      const body = chatBody({ reasoning_effort: 'turbo' });
      const plan = expectPlan(planReasoning('chat_completions', body, providers, 'non-strict'));
      expect(plan.effort).toBeUndefined();
      expectUnchangedForAll(plan, body);
    }
    const responses = responsesBody({ reasoning: { effort: 'turbo' } });
    const plan = expectPlan(planReasoning('responses', responses, [switchOnly, undefined], 'non-strict'));
    expectUnchangedForAll(plan, responses);
  });

  it('every one of the seven efforts is accepted where mapped', () => {
    for (const effort of ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']) {
      const plan = expectPlan(planChat({ reasoning_effort: effort }, [renamed], 'strict'));
      expect(plan.effort).toBe(effort);
    }
  });
});

describe('rule 4: unsupported efforts are refused before any attempt', () => {
  it('single provider: an effort in unsupported_efforts -> 400 unsupported_reasoning_effort', () => {
    for (const effort of ['xhigh', 'max']) {
      const refusal = expectRefusal(planChat({ reasoning_effort: effort }, [switchOnly], 'non-strict'));
      expect(refusal).toMatchObject({
        status: 400,
        code: 'unsupported_reasoning_effort',
        param: 'reasoning_effort',
      });
      expect(refusal.message).toBe(
        `Reasoning effort \`${effort}\` is not supported for this model; supported: \`none\`, \`minimal\`, \`low\`, \`medium\`, \`high\`.`,
      );
    }
  });

  it('pool: an effort supported by provider A only is refused for the whole pool, in any order', () => {
    const body = chatBody({ reasoning_effort: 'xhigh' });
    for (const providers of [
      [renamed, switchOnly],
      [switchOnly, renamed],
    ]) {
      const refusal = expectRefusal(planReasoning('chat_completions', body, providers, 'non-strict'));
      expect(refusal.code).toBe('unsupported_reasoning_effort');
    }
  });

  it('pool: the message names the efforts every translating provider supports', () => {
    const refusal = expectRefusal(planChat({ reasoning_effort: 'none' }, [switchOnly, budgeted], 'strict'));
    expect(refusal.message).toContain('supported: `low`, `medium`, `high`.');
  });

  it('a provider without a translation restricts nothing', () => {
    const plan = expectPlan(planChat({ reasoning_effort: 'max' }, [undefined, renamed], 'non-strict'));
    expect(plan.effort).toBe('max');
  });

  it('Responses surface: refused on reasoning.effort', () => {
    const refusal = expectRefusal(
      planReasoning(
        'responses',
        responsesBody({ reasoning: { effort: 'max' } }),
        [responsesSwitch],
        'non-strict',
      ),
    );
    expect(refusal).toMatchObject({
      status: 400,
      code: 'unsupported_reasoning_effort',
      param: 'reasoning.effort',
    });
    expect(refusal.message).toContain('`max`');
  });

  it('a surface with every effort unsupported refuses every effort, and says none is supported', () => {
    const refusesAll = translation({
      chat_completions: {
        writes: [],
        unsupported_efforts: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'],
      },
    });
    for (const effort of ['none', 'low', 'max']) {
      const refusal = expectRefusal(
        planChat({ reasoning_effort: effort }, [renamed, refusesAll], 'non-strict'),
      );
      expect(refusal.message).toContain('supported: none.');
    }
  });
});

describe('rule 5: numeric budgets against the output limit (chat)', () => {
  const refuse = (
    extra: Record<string, unknown>,
    providers: readonly (CompiledReasoning | undefined)[] = [budgeted],
  ) => expectRefusal(planChat({ reasoning_effort: 'high', ...extra }, providers, 'non-strict'));
  const accept = (
    extra: Record<string, unknown>,
    providers: readonly (CompiledReasoning | undefined)[] = [budgeted],
  ) => expectPlan(planChat({ reasoning_effort: 'high', ...extra }, providers, 'non-strict'));

  it('no limit -> 422 reasoning_budget_requires_limit', () => {
    const refusal = refuse({});
    expect(refusal).toMatchObject({
      status: 422,
      code: 'reasoning_budget_requires_limit',
      param: 'max_completion_tokens',
    });
    expect(refusal.message).toBe(
      'Reasoning effort `high` uses a reasoning budget of 8192 tokens: set `max_completion_tokens` (or legacy `max_tokens`) to a number above 8192.',
    );
  });

  it('null limits count as missing -> 422', () => {
    expect(refuse({ max_completion_tokens: null }).status).toBe(422);
    expect(refuse({ max_completion_tokens: null, max_tokens: null }).status).toBe(422);
  });

  it('a limit that is not a number is not a limit -> 422 on that field', () => {
    expect(refuse({ max_completion_tokens: '9000' })).toMatchObject({
      status: 422,
      param: 'max_completion_tokens',
    });
    expect(refuse({ max_tokens: {} })).toMatchObject({ status: 422, param: 'max_tokens' });
  });

  it('limit equal to the budget -> 400 reasoning_budget_exceeds_limit', () => {
    const refusal = refuse({ max_completion_tokens: 8192 });
    expect(refusal).toMatchObject({
      status: 400,
      code: 'reasoning_budget_exceeds_limit',
      param: 'max_completion_tokens',
    });
    expect(refusal.message).toBe(
      '`max_completion_tokens` (8192) must be above the reasoning budget of 8192 tokens that effort `high` uses; budgets are not clipped.',
    );
  });

  it('limit below the budget -> 400', () => {
    expect(refuse({ max_completion_tokens: 100 }).status).toBe(400);
    expect(refuse({ max_completion_tokens: 0 }).status).toBe(400);
    expect(refuse({ max_completion_tokens: -5 }).status).toBe(400);
  });

  it('limit above the budget -> accepted, and the budget is written as configured (never clipped)', () => {
    const plan = accept({ max_completion_tokens: 8193 });
    expect(plan.budget).toBe(8192);
    const body = chatBody({ reasoning_effort: 'high', max_completion_tokens: 8193 });
    const sent = applyReasoning(plan, 0, body);
    expect(sent.thinking_token_budget).toBe(8192);
    expect(sent.max_completion_tokens).toBe(8193);
  });

  it('legacy max_tokens counts when max_completion_tokens is absent or null', () => {
    expect(accept({ max_tokens: 9000 }).effort).toBe('high');
    expect(accept({ max_completion_tokens: null, max_tokens: 9000 }).effort).toBe('high');
    expect(refuse({ max_tokens: 8192 })).toMatchObject({ status: 400, param: 'max_tokens' });
  });

  it('max_completion_tokens takes precedence over max_tokens', () => {
    expect(refuse({ max_completion_tokens: 100, max_tokens: 100_000 })).toMatchObject({
      status: 400,
      param: 'max_completion_tokens',
    });
    expect(accept({ max_completion_tokens: 100_000, max_tokens: 100 }).effort).toBe('high');
  });

  it('each effort is checked against its own budget', () => {
    const at = (effort: string, limit: number) =>
      planChat({ reasoning_effort: effort, max_tokens: limit }, [budgeted], 'strict').ok;
    expect(at('low', 1025)).toBe(true);
    expect(at('low', 1024)).toBe(false);
    expect(at('medium', 4097)).toBe(true);
    expect(at('medium', 4096)).toBe(false);
  });

  it('efforts without a numeric write need no limit', () => {
    const plan = expectPlan(planChat({ reasoning_effort: 'high' }, [switchOnly, renamed], 'strict'));
    expect(plan.budget).toBeUndefined();
  });

  it('pool: the largest budget among the providers decides, before any attempt', () => {
    const small = budgetOnly(1000);
    const large = budgetOnly(8000);
    for (const providers of [
      [small, large],
      [large, small],
    ]) {
      const refusal = refuse({ max_completion_tokens: 4000 }, providers);
      expect(refusal).toMatchObject({ status: 400, code: 'reasoning_budget_exceeds_limit' });
      expect(refusal.message).toContain('8000');
      expect(accept({ max_completion_tokens: 8001 }, providers).budget).toBe(8000);
    }
  });

  it('pool: a budget on any provider requires the limit, even when the first provider has none', () => {
    expect(refuse({}, [switchOnly, budgeted]).status).toBe(422);
    expect(refuse({}, [undefined, budgeted]).status).toBe(422);
  });

  it('a budget of 0 still requires a limit (any numeric write is a budget)', () => {
    const zero = budgetOnly(0);
    expect(refuse({}, [zero]).status).toBe(422);
    expect(refuse({ max_completion_tokens: 0 }, [zero]).status).toBe(400);
    expect(accept({ max_completion_tokens: 1 }, [zero]).budget).toBe(0);
  });
});

describe('rule 5: numeric budgets against the output limit (Responses)', () => {
  const body = (extra: Record<string, unknown>) =>
    responsesBody({ reasoning: { effort: 'medium' }, ...extra });
  const plan = (extra: Record<string, unknown>) =>
    planReasoning('responses', body(extra), [responsesBudgeted], 'non-strict');

  it('no max_output_tokens -> 422', () => {
    const refusal = expectRefusal(plan({}));
    expect(refusal).toMatchObject({
      status: 422,
      code: 'reasoning_budget_requires_limit',
      param: 'max_output_tokens',
    });
    expect(refusal.message).toContain('set `max_output_tokens` to a number above 2048');
  });

  it('chat limits do not count on the Responses surface', () => {
    expect(expectRefusal(plan({ max_completion_tokens: 100_000, max_tokens: 100_000 })).status).toBe(422);
  });

  it('equal or below -> 400; above -> accepted', () => {
    expect(expectRefusal(plan({ max_output_tokens: 2048 }))).toMatchObject({
      status: 400,
      code: 'reasoning_budget_exceeds_limit',
      param: 'max_output_tokens',
    });
    expect(expectRefusal(plan({ max_output_tokens: 10 })).status).toBe(400);
    expect(expectPlan(plan({ max_output_tokens: 2049 })).budget).toBe(2048);
  });
});

describe('rules 6-7: provider-native reasoning controls', () => {
  const chatControls = NATIVE_REASONING_CONTROLS;
  const responsesControls = NATIVE_REASONING_CONTROLS.filter((name) => name !== 'reasoning');

  it('the documented list', () => {
    expect([...NATIVE_REASONING_CONTROLS]).toEqual([
      'thinking_token_budget',
      'thinking_budget',
      'reasoning_budget',
      'enable_thinking',
      'thinking',
      'reasoning',
      'include_reasoning',
    ]);
  });

  it.each(MODES)(
    'chat: each native control is refused (%s), with or without an effort or a translation',
    (mode) => {
      for (const name of chatControls) {
        for (const providers of [[budgeted], [undefined], []]) {
          for (const effort of [{}, { reasoning_effort: 'low' }]) {
            const refusal = expectRefusal(
              planReasoning('chat_completions', chatBody({ ...effort, [name]: 512 }), providers, mode),
            );
            expect(refusal).toMatchObject({
              status: 400,
              code: 'unsupported_reasoning_control',
              param: name,
            });
            expect(refusal.message).toBe(
              `\`${name}\` is a provider-native reasoning control and is not accepted; use \`reasoning_effort\` to control reasoning.`,
            );
          }
        }
      }
    },
  );

  it.each(MODES)(
    'Responses: each native control is refused (%s); its canonical `reasoning` is not',
    (mode) => {
      for (const name of responsesControls) {
        const refusal = expectRefusal(
          planReasoning('responses', responsesBody({ [name]: true }), [responsesSwitch], mode),
        );
        expect(refusal).toMatchObject({ code: 'unsupported_reasoning_control', param: name });
        expect(refusal.message).toContain('use `reasoning.effort`');
      }
      expect(
        planReasoning('responses', responsesBody({ reasoning: { effort: 'low' } }), [responsesSwitch], mode)
          .ok,
      ).toBe(true);
    },
  );

  it('falsy values other than null still use the native channel and are refused', () => {
    for (const value of [false, 0, '', {}, []]) {
      const result = planChat({ enable_thinking: value }, [], 'non-strict');
      expect(expectRefusal(result).param).toBe('enable_thinking');
    }
  });

  it('null counts as absent', () => {
    const body = chatBody({ thinking_token_budget: null, thinking: null });
    expect(planReasoning('chat_completions', body, [budgeted], 'non-strict').ok).toBe(true);
  });

  it('native controls are checked before the effort value, support and budget', () => {
    const body = chatBody({ reasoning_effort: 'turbo', thinking_token_budget: 1 });
    expect(expectRefusal(planReasoning('chat_completions', body, [budgeted], 'non-strict')).code).toBe(
      'unsupported_reasoning_control',
    );
  });

  it('non-strict forwards chat_template_kwargs unchanged when no effort is sent', () => {
    const body = chatBody({ chat_template_kwargs: { enable_thinking: true, custom: 'x' } });
    const plan = expectPlan(planReasoning('chat_completions', body, [switchOnly, undefined], 'non-strict'));
    expectUnchangedForAll(plan, body);
    expect(applyReasoning(plan, 0, body).chat_template_kwargs).toEqual({
      enable_thinking: true,
      custom: 'x',
    });
  });

  it('non-strict with an effort: the translated key wins, the client’s other template keys are kept', () => {
    const body = chatBody({
      reasoning_effort: 'none',
      chat_template_kwargs: { enable_thinking: true, custom: 'x' },
    });
    const plan = expectPlan(planReasoning('chat_completions', body, [switchOnly], 'non-strict'));
    expect(applyReasoning(plan, 0, body).chat_template_kwargs).toEqual({
      enable_thinking: false,
      custom: 'x',
    });
  });

  it('non-strict forwards chat_template_kwargs on Responses too', () => {
    const body = responsesBody({ chat_template_kwargs: { enable_thinking: false } });
    expect(planReasoning('responses', body, [responsesSwitch], 'non-strict').ok).toBe(true);
  });

  it('strict refuses chat_template_kwargs on both surfaces in favour of the canonical control', () => {
    const chat = expectRefusal(planChat({ chat_template_kwargs: { enable_thinking: true } }, [], 'strict'));
    expect(chat).toMatchObject({
      status: 400,
      code: 'unsupported_reasoning_control',
      param: 'chat_template_kwargs',
    });
    const responses = expectRefusal(
      planReasoning('responses', responsesBody({ chat_template_kwargs: {} }), [], 'strict'),
    );
    expect(responses.param).toBe('chat_template_kwargs');
  });
});

describe('check order inside the reasoning stage', () => {
  it('invalid effort before anything provider-specific', () => {
    const body = chatBody({ reasoning_effort: 'turbo' });
    expect(expectRefusal(planReasoning('chat_completions', body, [budgeted], 'strict')).code).toBe(
      'invalid_reasoning_effort',
    );
  });

  it('unsupported before the budget: an effort refused by one provider is not asked for a limit', () => {
    // `none` is unsupported by `budgeted`; no limit is sent either.
    const body = chatBody({ reasoning_effort: 'none' });
    expect(
      expectRefusal(planReasoning('chat_completions', body, [switchOnly, budgeted], 'strict')).code,
    ).toBe('unsupported_reasoning_effort');
  });
});

describe('reasoningErrorBody', () => {
  it('is the standard error object (spec 2.7) with the code and param', () => {
    const refusal = expectRefusal(planChat({ reasoning_effort: 'high' }, [budgeted], 'non-strict'));
    expect(reasoningErrorBody(refusal)).toEqual({
      error: {
        message: refusal.message,
        type: 'invalid_request_error',
        param: 'max_completion_tokens',
        code: 'reasoning_budget_requires_limit',
      },
    });
  });
});

describe('both surfaces, one table', () => {
  const surfaces: readonly [
    ReasoningSurfaceName,
    (effort: string, extra?: Record<string, unknown>) => Record<string, unknown>,
  ][] = [
    ['chat_completions', (effort, extra = {}) => chatBody({ reasoning_effort: effort, ...extra })],
    ['responses', (effort, extra = {}) => responsesBody({ reasoning: { effort }, ...extra })],
  ];
  const both = translationForBoth();

  it.each(surfaces)('%s: supported, unsupported, budget missing, too low, enough', (surface, make) => {
    const limitField = surface === 'chat_completions' ? 'max_completion_tokens' : 'max_output_tokens';
    const run = (effort: string, extra?: Record<string, unknown>) =>
      planReasoning(surface, make(effort, extra), [both], 'non-strict');
    expect(expectRefusal(run('max')).code).toBe('unsupported_reasoning_effort');
    expect(expectRefusal(run('high')).status).toBe(422);
    expect(expectRefusal(run('high', { [limitField]: 3000 })).status).toBe(400);
    expect(expectPlan(run('high', { [limitField]: 3001 })).budget).toBe(3000);
    expect(expectPlan(run('low')).budget).toBeUndefined();
  });
});

function budgetOnly(high: number): CompiledReasoning {
  return {
    chat_completions: {
      writes: new Map([['high', [{ path: '/budget', segments: ['budget'], value: high }]]]),
      unsupported: new Set(['none', 'minimal', 'low', 'medium', 'xhigh', 'max']),
      budgets: new Map([['high', high]]),
    },
  };
}

function translationForBoth(): CompiledReasoning {
  const surface = {
    writes: [
      { target_path: '/effort', values: { low: 'low', medium: 'medium', high: 'high' } },
      { target_path: '/budget', values: { low: 'off', medium: 1000, high: 3000 } },
    ],
    unsupported_efforts: ['none', 'minimal', 'xhigh', 'max'],
  };
  return translation({ chat_completions: surface, responses: surface });
}
