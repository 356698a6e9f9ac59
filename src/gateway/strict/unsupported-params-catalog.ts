/**
 * The unsupported-parameter catalog (gateway spec 4.7): request parameters of chat completions that
 * are engine extensions (vLLM sampling and guided-decoding fields) or reference-API fields that some
 * backends cannot honour. Strict mode counts every catalog parameter a request carries and rejects
 * the request when the parameter is in the configured `reject_unsupported_params` list.
 *
 * Each entry says when the parameter counts as absent: either a list of values that mean "not
 * used" (the engine default, so a client that spells out the default is not flagged) or a
 * predicate. `null` and `undefined` always count as absent and are not repeated in the table.
 * `chat_template_kwargs` is deliberately not here: strict mode refuses it outright in favour of
 * `reasoning_effort` (spec 2.6 rule 7), which is a different check.
 */
export type AbsentRule = readonly (string | number | boolean)[] | ((value: unknown) => boolean);

/** An empty array or object asks for nothing, so it counts as absent for list and map parameters. */
export const isEmptyCollection = (value: unknown): boolean =>
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);

export const UNSUPPORTED_PARAMS_CATALOG = {
  // Several choices or log probabilities: not every backend can return them.
  n: [1],
  best_of: [1],
  logprobs: [false],
  top_logprobs: [0],
  prompt_logprobs: [],
  echo: [false],
  // Guided (structured) decoding extensions.
  guided_json: [],
  guided_regex: [],
  guided_choice: isEmptyCollection,
  guided_grammar: [],
  guided_decoding_backend: [],
  guided_whitespace_pattern: [],
  structured_outputs: isEmptyCollection,
  // Sampling extensions; the listed value is the engine's neutral default.
  min_tokens: [0],
  repetition_penalty: [1],
  top_k: [-1, 0],
  min_p: [0],
  use_beam_search: [false],
  length_penalty: [1],
  ignore_eos: [false],
  stop_token_ids: isEmptyCollection,
  bad_words: isEmptyCollection,
  allowed_token_ids: isEmptyCollection,
  include_stop_str_in_output: [false],
  // Tokenizer and prompt-template controls.
  skip_special_tokens: [true],
  spaces_between_special_tokens: [true],
  truncate_prompt_tokens: [],
  add_generation_prompt: [true],
  continue_final_message: [false],
  add_special_tokens: [false],
  chat_template: [],
  mm_processor_kwargs: isEmptyCollection,
  return_tokens_as_token_ids: [false],
  // Scheduling hints.
  priority: [0],
} as const satisfies Record<string, AbsentRule>;

export type UnsupportedParamName = keyof typeof UNSUPPORTED_PARAMS_CATALOG;

/** Catalog names in alphabetical order (the order the configuration schema lists them in). */
export const UNSUPPORTED_PARAM_NAMES = Object.freeze(
  (Object.keys(UNSUPPORTED_PARAMS_CATALOG) as UnsupportedParamName[]).sort(),
) as readonly [UnsupportedParamName, ...UnsupportedParamName[]];

export function isUnsupportedParamName(name: string): name is UnsupportedParamName {
  return Object.hasOwn(UNSUPPORTED_PARAMS_CATALOG, name);
}

/** True when `value` of catalog parameter `name` asks for nothing beyond the reference behaviour. */
export function isParamAbsent(name: UnsupportedParamName, value: unknown): boolean {
  if (value === null || value === undefined) return true;
  const rule: AbsentRule = UNSUPPORTED_PARAMS_CATALOG[name];
  if (typeof rule === 'function') return rule(value);
  return (rule as readonly unknown[]).includes(value);
}
