import { describe, expect, it } from 'vitest';
import { runStrictRequestChecks } from '../../src/gateway/strict/request-checks.js';

const CT = 'application/json';
const bytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

describe('strict check order (spec 4.4 rule 6)', () => {
  it('schema first: a body that fails the schema never reaches the unsupported-parameter check', () => {
    const result = runStrictRequestChecks(
      'chat_completions',
      CT,
      bytes({ ...chat, n: 'two', guided_json: {} }),
      {
        rejectUnsupportedParams: ['guided_json'],
      },
    );
    expect(result).toMatchObject({
      ok: false,
      stage: 'schema',
      code: 'schema_mismatch',
      unsupportedParams: [],
    });
  });

  it('unsupported parameters second', () => {
    const result = runStrictRequestChecks('chat_completions', CT, bytes({ ...chat, guided_json: {} }), {
      rejectUnsupportedParams: ['guided_json'],
    });
    expect(result).toMatchObject({
      ok: false,
      stage: 'unsupported_params',
      status: 400,
      code: 'unsupported_parameter',
      unsupportedParams: [{ name: 'guided_json', rejected: true }],
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
    const result = runStrictRequestChecks(
      'responses',
      CT,
      bytes({ input: 'x', reasoning: { effort: 'low' } }),
      { rejectUnsupportedParams: ['n'] },
    );
    expect(result).toMatchObject({ ok: true, unsupportedParams: [] });
  });
});
