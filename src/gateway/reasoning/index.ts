/**
 * Reasoning-effort translation (spec 2.6): compile a provider's translation once per load, plan a
 * request once before any attempt, apply the plan per attempt. See `translate.ts` for the rules and
 * the decisions where the spec is silent.
 */
export {
  compileReasoningTranslation,
  compileSurface,
  type CompiledReasoning,
  type CompiledSurface,
  type CompiledWrite,
  type WriteValue,
} from './compile.js';
export {
  NATIVE_REASONING_CONTROLS,
  STRICT_ONLY_NATIVE_FIELDS,
  findNativeControl,
  refusedNativeControls,
  type NativeReasoningControl,
  type ReasoningMode,
} from './native-controls.js';
export { parseTargetPath, type JsonObject } from './pointer.js';
export { reasoningErrorBody, type ReasoningRejection, type ReasoningRejectionCode } from './rejections.js';
export {
  CANONICAL_EFFORT,
  OUTPUT_LIMIT_FIELDS,
  applyReasoning,
  planReasoning,
  type CanonicalEffortField,
  type ProviderRewrite,
  type ReasoningPlan,
  type ReasoningPlanResult,
} from './translate.js';
