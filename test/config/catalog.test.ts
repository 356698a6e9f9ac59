import { describe, expect, it } from 'vitest';
import {
  isParamAbsent,
  isUnsupportedParamName,
  UNSUPPORTED_PARAM_NAMES,
  UNSUPPORTED_PARAMS_CATALOG,
} from '../../src/gateway/strict/unsupported-params-catalog.js';

describe('unsupported-parameter catalog', () => {
  it('holds the engine-extension parameters of the spec and the brief', () => {
    for (const name of [
      'n',
      'logprobs',
      'top_logprobs',
      'best_of',
      'guided_json',
      'guided_regex',
      'guided_choice',
      'guided_grammar',
      'guided_decoding_backend',
      'min_tokens',
      'repetition_penalty',
      'top_k',
      'min_p',
      'use_beam_search',
      'length_penalty',
      'ignore_eos',
      'skip_special_tokens',
      'spaces_between_special_tokens',
      'truncate_prompt_tokens',
      'prompt_logprobs',
      'add_generation_prompt',
      'echo',
    ])
      expect(isUnsupportedParamName(name), name).toBe(true);
  });

  it('leaves chat_template_kwargs and reference parameters out', () => {
    for (const name of [
      'chat_template_kwargs',
      'temperature',
      'model',
      'messages',
      'toString',
      'constructor',
    ])
      expect(isUnsupportedParamName(name), name).toBe(false);
  });

  it('lists names sorted and once', () => {
    expect([...UNSUPPORTED_PARAM_NAMES]).toEqual(Object.keys(UNSUPPORTED_PARAMS_CATALOG).sort());
  });

  it.each([
    ['n', 1, true],
    ['n', 2, false],
    ['n', null, true],
    ['n', undefined, true],
    ['logprobs', false, true],
    ['logprobs', true, false],
    ['top_logprobs', 0, true],
    ['top_logprobs', 5, false],
    ['best_of', 1, true],
    ['top_k', -1, true],
    ['top_k', 0, true],
    ['top_k', 40, false],
    ['min_tokens', 0, true],
    ['min_tokens', 16, false],
    ['repetition_penalty', 1, true],
    ['repetition_penalty', 1.1, false],
    ['use_beam_search', false, true],
    ['use_beam_search', true, false],
    ['skip_special_tokens', true, true],
    ['skip_special_tokens', false, false],
    ['guided_json', {}, false],
    ['guided_json', { type: 'object' }, false],
    ['guided_choice', [], true],
    ['guided_choice', ['a', 'b'], false],
    ['stop_token_ids', [], true],
    ['truncate_prompt_tokens', 0, false],
    ['echo', 'false', false],
  ] as const)('%s = %j counts as absent: %s', (name, value, absent) => {
    expect(isParamAbsent(name, value)).toBe(absent);
  });
});
