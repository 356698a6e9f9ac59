import { describe, expect, it } from 'vitest';
import { REFUSED_CHAT_PARAMS } from '../../src/gateway/strict/refused-params.js';
import { runStrictRequestChecks, type ReasoningCheck } from '../../src/gateway/strict/request-checks.js';
import {
  NATIVE_REASONING_CONTROLS,
  STRICT_ONLY_NATIVE_FIELDS,
  asStrictRejection,
  planReasoning,
  type CompiledReasoning,
} from '../../src/gateway/reasoning/index.js';
import { budgeted, responsesSwitch } from './fixtures.js';

/**
 * Spec 4.4 rule 6: schema, unsupported parameters, reasoning. The reasoning stage is plugged into
 * the strict checks the way the pipeline does, through the strict module's reasoning seam.
 */
const CT = 'application/json';
const bytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

function reasoningCheck(providers: readonly (CompiledReasoning | undefined)[]): ReasoningCheck {
  return (endpoint, body) => {
    if (endpoint === 'embeddings') return null;
    const result = planReasoning(endpoint, body as Record<string, unknown>, providers, 'strict');
    return result.ok ? null : asStrictRejection(result);
  };
}

describe('strict check order with the reasoning stage', () => {
  it('every native control the reasoning stage refuses on chat is refused earlier by strict, so never twice', () => {
    for (const name of [...NATIVE_REASONING_CONTROLS, ...STRICT_ONLY_NATIVE_FIELDS]) {
      const result = runStrictRequestChecks('chat_completions', CT, bytes({ ...chat, [name]: 1 }), {
        rejectUnsupportedParams: [],
        checkReasoning: reasoningCheck([budgeted]),
      });
      // Names strict lists as refused get its named refusal; any other is an unrecognized field.
      const stage = (REFUSED_CHAT_PARAMS as readonly string[]).includes(name)
        ? 'unsupported_params'
        : 'schema';
      expect(result, name).toMatchObject({ ok: false, stage, status: 400 });
    }
  });

  it('on Responses the strict schema refuses native controls before the reasoning stage', () => {
    for (const name of ['thinking_token_budget', 'chat_template_kwargs']) {
      const result = runStrictRequestChecks(
        'responses',
        CT,
        bytes({ model: 'm', input: 'hi', reasoning: { effort: 'low' }, [name]: 1 }),
        { rejectUnsupportedParams: [], checkReasoning: reasoningCheck([responsesSwitch]) },
      );
      expect(result).toMatchObject({ ok: false, stage: 'schema' });
    }
  });

  it('a schema error wins over a reasoning error (invalid effort is a schema mismatch in strict mode)', () => {
    const result = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, reasoning_effort: 'turbo' }),
      {
        rejectUnsupportedParams: [],
        checkReasoning: reasoningCheck([budgeted]),
      },
    );
    expect(result).toMatchObject({ ok: false, stage: 'schema', status: 400 });
  });

  it('reasoning runs last: an unsupported effort, then a missing limit', () => {
    const unsupported = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, reasoning_effort: 'max' }),
      {
        rejectUnsupportedParams: [],
        checkReasoning: reasoningCheck([budgeted]),
      },
    );
    expect(unsupported).toMatchObject({
      ok: false,
      stage: 'reasoning',
      status: 400,
      code: 'unsupported_reasoning_effort',
      error: {
        error: {
          type: 'invalid_request_error',
          code: 'unsupported_reasoning_effort',
          param: 'reasoning_effort',
        },
      },
    });

    const missing = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, reasoning_effort: 'high' }),
      {
        rejectUnsupportedParams: [],
        checkReasoning: reasoningCheck([budgeted]),
      },
    );
    expect(missing).toMatchObject({
      ok: false,
      stage: 'reasoning',
      status: 422,
      code: 'reasoning_budget_requires_limit',
    });
  });

  it('a rejected unsupported parameter wins over a reasoning error', () => {
    const result = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, reasoning_effort: 'high', guided_json: {} }),
      { rejectUnsupportedParams: ['guided_json'], checkReasoning: reasoningCheck([budgeted]) },
    );
    expect(result).toMatchObject({ ok: false, stage: 'unsupported_params' });
  });

  it('a request that passes everything', () => {
    const body = { ...chat, reasoning_effort: 'high', max_completion_tokens: 9000 };
    const result = runStrictRequestChecks('chat_completions', CT, bytes(body), {
      rejectUnsupportedParams: [],
      checkReasoning: reasoningCheck([budgeted]),
    });
    expect(result).toMatchObject({ ok: true, body });
  });
});
