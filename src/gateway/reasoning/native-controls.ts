import type { ReasoningSurfaceName } from '../config/schema/index.js';
import type { JsonObject } from './pointer.js';

/**
 * Provider-native reasoning controls in client requests (spec 2.6 rules 6 and 7).
 *
 * The canonical controls are `reasoning_effort` (chat completions) and `reasoning.effort`
 * (Responses); the gateway translates them per provider. Native controls are split in two:
 *
 * - Rule 6, refused in both modes: the top-level knobs engines accept as their own reasoning
 *   switches and budgets. A client budget here would bypass the budget check of rule 5 and could
 *   contradict the translation written for the same request, so no mode forwards them:
 *   - `thinking_token_budget`: vLLM's thinking budget, named by the spec;
 *   - `thinking_budget`, `reasoning_budget`: the same budget under the names Qwen-style and
 *     llama.cpp-style servers use;
 *   - `enable_thinking`: the Qwen-style switch sent as a top-level field;
 *   - `thinking`: the Anthropic-compatible `{type, budget_tokens}` control several engines accept;
 *   - `reasoning` (chat only: on the Responses surface it is the canonical object) and
 *     `include_reasoning`: router-style reasoning objects and toggles.
 * - Rule 7, refused in strict mode only: `chat_template_kwargs`, the generic template pass-through
 *   (which carries `enable_thinking` and friends, but also unrelated template switches). A
 *   non-strict gateway forwards it unchanged.
 *
 * Strict mode refuses all of these earlier, in its unsupported-parameter stage (chat completions,
 * `strict/refused-params.ts`) or its schema (Responses refuses unknown fields), with code
 * `unsupported_parameter`. That stage runs before reasoning validation (spec 4.4 rule 6), so the
 * strict branch here only fires when the reasoning stage is used without the strict checks; the
 * first check to refuse answers, so nothing is refused twice. The rule 6 names are a subset of the
 * strict list, which a test keeps true.
 *
 * Legacy `/v1/completions` has no reasoning controls (rule 6): it is not a surface and nothing is
 * checked or translated there.
 */

/** Rule 6: refused in both modes, on both surfaces (except `reasoning` on Responses). */
export const NATIVE_REASONING_CONTROLS = [
  'thinking_token_budget',
  'thinking_budget',
  'reasoning_budget',
  'enable_thinking',
  'thinking',
  'reasoning',
  'include_reasoning',
] as const;

/** Rule 7: forwarded unchanged by a non-strict gateway, refused in strict mode. */
export const STRICT_ONLY_NATIVE_FIELDS = ['chat_template_kwargs'] as const;

export type NativeReasoningControl =
  (typeof NATIVE_REASONING_CONTROLS)[number] | (typeof STRICT_ONLY_NATIVE_FIELDS)[number];

export type ReasoningMode = 'strict' | 'non-strict';

const CHAT_CONTROLS: readonly NativeReasoningControl[] = NATIVE_REASONING_CONTROLS;
const RESPONSES_CONTROLS: readonly NativeReasoningControl[] = NATIVE_REASONING_CONTROLS.filter(
  (name) => name !== 'reasoning',
);
const CHAT_CONTROLS_STRICT: readonly NativeReasoningControl[] = [
  ...CHAT_CONTROLS,
  ...STRICT_ONLY_NATIVE_FIELDS,
];
const RESPONSES_CONTROLS_STRICT: readonly NativeReasoningControl[] = [
  ...RESPONSES_CONTROLS,
  ...STRICT_ONLY_NATIVE_FIELDS,
];

/** The top-level fields refused on a surface in a mode, in the order they are checked. */
export function refusedNativeControls(
  surface: ReasoningSurfaceName,
  mode: ReasoningMode,
): readonly NativeReasoningControl[] {
  if (surface === 'chat_completions') return mode === 'strict' ? CHAT_CONTROLS_STRICT : CHAT_CONTROLS;
  return mode === 'strict' ? RESPONSES_CONTROLS_STRICT : RESPONSES_CONTROLS;
}

/**
 * The first refused native control the body sets. A null value counts as absent (the reference
 * SDKs send null for "not set"); any other value, even `false` or `{}`, is the client using the
 * native channel and is refused, so the client learns to move to the canonical control.
 */
export function findNativeControl(
  body: JsonObject,
  surface: ReasoningSurfaceName,
  mode: ReasoningMode,
): NativeReasoningControl | undefined {
  for (const name of refusedNativeControls(surface, mode)) {
    if (Object.hasOwn(body, name) && body[name] !== null && body[name] !== undefined) return name;
  }
  return undefined;
}
