import { describe, expect, it } from 'vitest';
import { REFUSED_CHAT_PARAMS } from '../../src/gateway/strict/refused-params.js';
import {
  UNSUPPORTED_PARAM_NAMES,
  type UnsupportedParamName,
} from '../../src/gateway/strict/unsupported-params-catalog.js';
import {
  checkUnsupportedParams,
  findRefusedParam,
  unsupportedParamsRejection,
} from '../../src/gateway/strict/unsupported-params.js';

const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const none: readonly UnsupportedParamName[] = [];

describe('values that count as absent are not matches', () => {
  it.each<[string, unknown]>([
    ['n', 1],
    ['n', null],
    ['logprobs', false],
    ['top_logprobs', 0],
    ['best_of', 1],
    ['echo', false],
    ['min_tokens', 0],
    ['repetition_penalty', 1],
    ['top_k', -1],
    ['top_k', 0],
    ['min_p', 0],
    ['guided_choice', []],
    ['structured_outputs', {}],
    ['stop_token_ids', []],
    ['skip_special_tokens', true],
    ['priority', 0],
  ])('%s = %j', (name, value) => {
    expect(checkUnsupportedParams({ ...base, [name]: value }, UNSUPPORTED_PARAM_NAMES)).toEqual({
      matches: [],
      rejection: null,
    });
  });
});

describe('matches', () => {
  it.each<[string, unknown]>([
    ['n', 2],
    ['logprobs', true],
    ['top_logprobs', 3],
    ['guided_json', { type: 'object' }],
    ['guided_json', false],
    ['min_tokens', 5],
    ['top_k', 40],
    ['guided_choice', ['a']],
    ['stop_token_ids', [2]],
    ['skip_special_tokens', false],
  ])('%s = %j is observed (logged) with an empty reject list', (name, value) => {
    expect(checkUnsupportedParams({ ...base, [name]: value }, none)).toEqual({
      matches: [{ name, rejected: false }],
      rejection: null,
    });
  });

  it('matches come in catalog order regardless of body order, each with its action', () => {
    const body = { ...base, top_k: 5, guided_json: {}, n: 3, min_tokens: 2, logprobs: false };
    const result = checkUnsupportedParams(body, new Set<UnsupportedParamName>(['n']));
    expect(result.matches).toEqual([
      { name: 'guided_json', rejected: false },
      { name: 'min_tokens', rejected: false },
      { name: 'n', rejected: true },
      { name: 'top_k', rejected: false },
    ]);
  });

  it('fields outside the catalog are never matches', () => {
    expect(
      checkUnsupportedParams({ ...base, temperature: 2, seed: 1 }, UNSUPPORTED_PARAM_NAMES).matches,
    ).toEqual([]);
  });
});

describe('rejection', () => {
  it('only rejected names are listed, in backticks, param is the first', () => {
    const body = { ...base, n: 2, min_tokens: 5, guided_json: {} };
    const result = checkUnsupportedParams(body, ['n', 'guided_json']);
    expect(result.rejection).toEqual({
      ok: false,
      status: 400,
      code: 'unsupported_parameter',
      error: {
        error: {
          message: 'Unsupported parameter(s): `guided_json`, `n`',
          type: 'invalid_request_error',
          param: 'guided_json',
          code: 'unsupported_parameter',
        },
      },
    });
    expect(result.matches.map((m) => [m.name, m.rejected])).toEqual([
      ['guided_json', true],
      ['min_tokens', false],
      ['n', true],
    ]);
  });

  it('a single name', () => {
    expect(unsupportedParamsRejection(['logprobs']).error.error.message).toBe(
      'Unsupported parameter(s): `logprobs`',
    );
  });

  it('a listed parameter at its absent value does not reject', () => {
    expect(
      checkUnsupportedParams({ ...base, n: 1, logprobs: false }, ['n', 'logprobs']).rejection,
    ).toBeNull();
  });
});

describe('provider-native reasoning controls are refused in strict mode', () => {
  it.each(REFUSED_CHAT_PARAMS.map((name) => [name]))('%s', (name) => {
    const result = checkUnsupportedParams({ ...base, [name]: { enable_thinking: true } }, none);
    expect(result.matches).toEqual([]);
    expect(result.rejection).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    expect(result.rejection?.error.error).toMatchObject({
      type: 'invalid_request_error',
      param: name,
      code: 'unsupported_parameter',
    });
    expect(result.rejection?.error.error.message).toContain(`\`${name}\``);
    expect(result.rejection?.error.error.message).toContain('`reasoning_effort`');
  });

  it('chat_template_kwargs is refused even when empty, but not when null', () => {
    expect(findRefusedParam({ ...base, chat_template_kwargs: {} })).toBe('chat_template_kwargs');
    expect(findRefusedParam({ ...base, chat_template_kwargs: null })).toBeNull();
    expect(findRefusedParam(base)).toBeNull();
  });

  it('catalog matches are still reported when a control is refused', () => {
    const result = checkUnsupportedParams({ ...base, top_k: 5, chat_template_kwargs: {} }, none);
    expect(result.matches).toEqual([{ name: 'top_k', rejected: false }]);
    expect(result.rejection?.error.error.param).toBe('chat_template_kwargs');
  });

  it('a configured rejection wins over the control refusal (it names more)', () => {
    const result = checkUnsupportedParams({ ...base, top_k: 5, thinking_token_budget: 9 }, ['top_k']);
    expect(result.rejection?.error.error.message).toBe('Unsupported parameter(s): `top_k`');
  });

  it('no refused name is a catalog name (they are separate checks)', () => {
    for (const name of REFUSED_CHAT_PARAMS) expect(UNSUPPORTED_PARAM_NAMES).not.toContain(name);
  });
});
