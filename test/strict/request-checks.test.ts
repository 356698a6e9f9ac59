import { describe, expect, it, vi } from 'vitest';
import { errorBody } from '../../src/lib/errors.js';
import { runStrictRequestChecks, type ReasoningCheck } from '../../src/gateway/strict/request-checks.js';

const CT = 'application/json';
const bytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

const reasoningRejection = {
  ok: false as const,
  status: 422,
  code: 'reasoning_budget_limit_missing',
  error: errorBody('limit missing', 'invalid_request_error'),
};

describe('strict check order (spec 4.4 rule 6)', () => {
  it('schema first: a body that fails the schema never reaches the later checks', () => {
    const checkReasoning = vi.fn<ReasoningCheck>(() => null);
    const result = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, n: 'two', guided_json: {} }),
      {
        rejectUnsupportedParams: ['guided_json'],
        checkReasoning,
      },
    );
    expect(result).toMatchObject({
      ok: false,
      stage: 'schema',
      code: 'schema_mismatch',
      unsupportedParams: [],
    });
    expect(checkReasoning).not.toHaveBeenCalled();
  });

  it('unsupported parameters second: reasoning is not checked for a refused request', () => {
    const checkReasoning = vi.fn<ReasoningCheck>(() => reasoningRejection);
    const result = runStrictRequestChecks('chat_completions', CT, bytes({ ...chat, guided_json: {} }), {
      rejectUnsupportedParams: ['guided_json'],
      checkReasoning,
    });
    expect(result).toMatchObject({
      ok: false,
      stage: 'unsupported_params',
      status: 400,
      code: 'unsupported_parameter',
      unsupportedParams: [{ name: 'guided_json', rejected: true }],
    });
    expect(checkReasoning).not.toHaveBeenCalled();
  });

  it('reasoning last, with the validated body; observed matches travel with its rejection', () => {
    const checkReasoning = vi.fn<ReasoningCheck>(() => reasoningRejection);
    const body = { ...chat, min_tokens: 4, reasoning_effort: 'high' };
    const result = runStrictRequestChecks('chat_completions', CT, bytes(body), {
      rejectUnsupportedParams: [],
      checkReasoning,
    });
    expect(checkReasoning).toHaveBeenCalledWith('chat_completions', body);
    expect(result).toMatchObject({
      ok: false,
      stage: 'reasoning',
      status: 422,
      unsupportedParams: [{ name: 'min_tokens', rejected: false }],
    });
  });

  it('all pass: the body and the observed matches', () => {
    const result = runStrictRequestChecks('chat_completions', CT, bytes({ ...chat, top_k: 3 }), {
      rejectUnsupportedParams: ['n'],
    });
    expect(result).toEqual({
      ok: true,
      body: { ...chat, top_k: 3 },
      unsupportedParams: [{ name: 'top_k', rejected: false }],
    });
  });

  it('the unsupported-parameter check covers chat completions only', () => {
    const checkReasoning = vi.fn<ReasoningCheck>(() => null);
    const result = runStrictRequestChecks(
      'responses',
      CT,
      bytes({ input: 'x', reasoning: { effort: 'low' } }),
      {
        rejectUnsupportedParams: ['n'],
        checkReasoning,
      },
    );
    expect(result).toMatchObject({ ok: true, unsupportedParams: [] });
    expect(checkReasoning).toHaveBeenCalledWith('responses', { input: 'x', reasoning: { effort: 'low' } });
  });
});
