/**
 * Request fields strict mode refuses outright on chat completions, whatever the configuration
 * (spec 2.6 rules 6-7, 4.7): provider-native reasoning controls, which strict mode replaces with the
 * canonical `reasoning_effort`. They are not catalog parameters: the catalog is observe-or-reject by
 * configuration, these are always refused.
 *
 * The schema admits them (as it admits catalog names) so that the refusal happens in the
 * unsupported-parameter stage with a message that names the canonical control, rather than as an
 * anonymous "unrecognized field" schema error.
 *
 * - `chat_template_kwargs`: vLLM / SGLang template switches (`enable_thinking`, `thinking`, ...).
 * - `thinking_token_budget`: vLLM's thinking budget, named by the spec.
 * - `thinking_budget`, `enable_thinking`: the same switches sent as top-level fields (Qwen-style
 *   engines accept both places).
 * - `thinking`: the Anthropic-compatible `{type, budget_tokens}` control some engines accept.
 * - `reasoning`, `include_reasoning`: router-style reasoning objects and toggles on chat requests
 *   (the Responses API's `reasoning` is a reference field and is not affected).
 */
export const REFUSED_CHAT_PARAMS = [
  'chat_template_kwargs',
  'thinking_token_budget',
  'thinking_budget',
  'enable_thinking',
  'thinking',
  'reasoning',
  'include_reasoning',
] as const;

export type RefusedChatParam = (typeof REFUSED_CHAT_PARAMS)[number];
