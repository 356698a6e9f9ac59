import { EFFORTS, type Effort, type ReasoningSurfaceName } from '../config/schema/index.js';
import type { CompiledReasoning, CompiledSurface, CompiledWrite } from './compile.js';
import { findNativeControl, type ReasoningMode } from './native-controls.js';
import { CopyOnWriteBody, isPlainObject, type JsonObject } from './pointer.js';
import { reject, type ReasoningRejection } from './rejections.js';

/**
 * Reasoning-effort translation (spec 2.6), in two steps the pipeline calls at different times:
 *
 * 1. `planReasoning`, once per request and before any upstream attempt, decides everything that can
 *    refuse the request (rules 4-7) for every provider that may serve it, so a fallback pool never
 *    half-serves a request and then refuses it on the second provider.
 * 2. `applyReasoning`, once per attempt, rewrites the body for that attempt's provider (translations
 *    are provider-scoped), copy-on-write, without touching the body other attempts share.
 *
 * Decisions where the spec is silent:
 * - A provider whose translation configures the request's surface receives the body WITHOUT the
 *   canonical field (`reasoning_effort`, or `reasoning.effort` with `reasoning` dropped when nothing
 *   else is left in it), then with its writes applied. The translation is then the whole statement
 *   of what that upstream gets; an upstream that also wants the canonical field lists it as a write
 *   (`/reasoning_effort`, or `/reasoning/effort`). Keeping it would send two controls that can
 *   disagree (`xhigh` next to a translated `high`) and would trip upstreams that refuse it.
 * - A provider without a translation for the surface receives the request unchanged, effort
 *   included, and imposes nothing: the effort is validated only when at least one provider of the
 *   pool translates the surface (a pool with no translation stays a transparent proxy).
 * - Writes replace what the client sent at their paths (a client `chat_template_kwargs` that reached
 *   a non-strict gateway keeps its other keys; a translated key wins).
 * - Any numeric write value is a token budget, including 0 and negative numbers (rule 5 speaks of
 *   "a numeric token budget" without exceptions). A limit that is present but not a number does not
 *   count as a limit (422).
 * - The pool decides: an effort unsupported by any provider that may serve the request, or whose
 *   largest budget among those providers is not below the limit, refuses the request (rule 4). The
 *   caller passes every provider the request may reach (the pool's providers, not only the first
 *   pick), so the answer does not depend on a random or adaptive selection.
 * - Rule 8 (the models list advertises no reasoning capabilities) needs nothing here.
 */

export interface CanonicalEffortField {
  /** JSON Pointer segments of the client effort. */
  readonly segments: readonly string[];
  /** How error messages and `param` name it. */
  readonly param: string;
}

/** Where each surface carries the client effort. */
export const CANONICAL_EFFORT: Readonly<Record<ReasoningSurfaceName, CanonicalEffortField>> = Object.freeze({
  chat_completions: Object.freeze({
    segments: Object.freeze(['reasoning_effort']),
    param: 'reasoning_effort',
  }),
  responses: Object.freeze({ segments: Object.freeze(['reasoning', 'effort']), param: 'reasoning.effort' }),
});

/** The request fields that carry the output limit a budget is checked against, in precedence order. */
export const OUTPUT_LIMIT_FIELDS: Readonly<Record<ReasoningSurfaceName, readonly string[]>> = Object.freeze({
  chat_completions: Object.freeze(['max_completion_tokens', 'max_tokens']),
  responses: Object.freeze(['max_output_tokens']),
});

const LIMIT_PHRASE: Readonly<Record<ReasoningSurfaceName, string>> = {
  chat_completions: '`max_completion_tokens` (or legacy `max_tokens`)',
  responses: '`max_output_tokens`',
};

/** What one provider's attempt does to the body; undefined means "send it unchanged". */
export interface ProviderRewrite {
  /** Removed before the writes: the canonical effort field. */
  readonly remove: readonly string[];
  readonly writes: readonly CompiledWrite[];
}

export interface ReasoningPlan {
  readonly ok: true;
  readonly surface: ReasoningSurfaceName;
  /** The validated client effort; undefined when the client sent none or nothing translates it. */
  readonly effort: Effort | undefined;
  /** The largest token budget the effort emits among the pool's providers, when any. */
  readonly budget: number | undefined;
  /** Same length and order as the `providers` passed to `planReasoning`. */
  readonly rewrites: readonly (ProviderRewrite | undefined)[];
}

export type ReasoningPlanResult = ReasoningPlan | ReasoningRejection;

const EFFORT_SET: ReadonlySet<string> = new Set(EFFORTS);

/**
 * Decides, before any upstream attempt, whether the request may proceed and what each provider
 * will receive. `providers[i]` is the compiled translation of the pool's i-th provider (undefined
 * when it has none); `applyReasoning` is later called with the same index. Every decision is
 * pool-wide, so the order does not change the outcome: configuration order (`ProviderRoute.index`)
 * lets one array, built once per configuration load, serve every request whatever order the
 * strategy tries the providers in. In strict mode call it after the schema and
 * unsupported-parameter checks (spec 4.4 rule 6).
 *
 * Check order: native controls (rules 6-7), effort value, unsupported effort (rule 4), budget
 * against the limit (rule 5). The first failure answers.
 */
export function planReasoning(
  surface: ReasoningSurfaceName,
  body: JsonObject,
  providers: readonly (CompiledReasoning | undefined)[],
  mode: ReasoningMode,
): ReasoningPlanResult {
  const canonical = CANONICAL_EFFORT[surface];
  const native = findNativeControl(body, surface, mode);
  if (native !== undefined) {
    return reject(
      400,
      'unsupported_reasoning_control',
      native,
      `\`${native}\` is a provider-native reasoning control and is not accepted; use \`${canonical.param}\` to control reasoning.`,
    );
  }

  const raw = readEffort(body, surface);
  // Rule 3: an omitted effort injects nothing, for every provider.
  if (raw === undefined) return unchangedPlan(surface, providers.length);

  const surfaces = providers.map((provider) => provider?.[surface]);
  const translating = surfaces.filter((compiled): compiled is CompiledSurface => compiled !== undefined);
  if (translating.length === 0) return unchangedPlan(surface, providers.length);

  if (typeof raw !== 'string' || !EFFORT_SET.has(raw)) {
    return reject(
      400,
      'invalid_reasoning_effort',
      raw === NOT_AN_OBJECT ? 'reasoning' : canonical.param,
      raw === NOT_AN_OBJECT
        ? '`reasoning` must be an object such as `{"effort": "medium"}`.'
        : `\`${canonical.param}\` must be one of ${EFFORTS.map((e) => `\`${e}\``).join(', ')}.`,
    );
  }
  const effort = raw as Effort;

  if (translating.some((compiled) => !compiled.writes.has(effort))) {
    const supported = EFFORTS.filter((e) => translating.every((compiled) => compiled.writes.has(e)));
    return reject(
      400,
      'unsupported_reasoning_effort',
      canonical.param,
      `Reasoning effort \`${effort}\` is not supported for this model; supported: ${
        supported.length === 0 ? 'none' : supported.map((e) => `\`${e}\``).join(', ')
      }.`,
    );
  }

  let budget: number | undefined;
  for (const compiled of translating) {
    const own = compiled.budgets.get(effort);
    if (own !== undefined && (budget === undefined || own > budget)) budget = own;
  }
  if (budget !== undefined) {
    const refusal = checkLimit(surface, body, effort, budget);
    if (refusal !== undefined) return refusal;
  }

  const rewrites = surfaces.map((compiled): ProviderRewrite | undefined =>
    compiled === undefined ? undefined : { remove: canonical.segments, writes: compiled.writes.get(effort)! },
  );
  return plan(surface, effort, budget, providers.length, rewrites);
}

function plan(
  surface: ReasoningSurfaceName,
  effort: Effort | undefined,
  budget: number | undefined,
  count: number,
  rewrites: readonly (ProviderRewrite | undefined)[] | undefined,
): ReasoningPlan {
  return Object.freeze({
    ok: true,
    surface,
    effort,
    budget,
    rewrites: Object.freeze(rewrites ?? new Array<undefined>(count).fill(undefined)),
  });
}

/** Plans that change nothing, by surface and pool size (frozen, shared by every such request). */
const UNCHANGED_PLANS: Record<ReasoningSurfaceName, ReasoningPlan[]> = {
  chat_completions: [],
  responses: [],
};

function unchangedPlan(surface: ReasoningSurfaceName, count: number): ReasoningPlan {
  return (UNCHANGED_PLANS[surface][count] ??= plan(surface, undefined, undefined, count, undefined));
}

/** Marks a Responses `reasoning` that is present but not an object. */
const NOT_AN_OBJECT: unique symbol = Symbol('reasoning is not an object');

/** The client effort as sent; undefined when omitted (absent or null). */
function readEffort(body: JsonObject, surface: ReasoningSurfaceName): unknown {
  if (surface === 'chat_completions') return body.reasoning_effort ?? undefined;
  const reasoning = body.reasoning;
  if (reasoning === undefined || reasoning === null) return undefined;
  if (!isPlainObject(reasoning)) return NOT_AN_OBJECT;
  return reasoning.effort ?? undefined;
}

/** Rule 5: the request's output limit must be a number above the budget. Never clipped. */
function checkLimit(
  surface: ReasoningSurfaceName,
  body: JsonObject,
  effort: Effort,
  budget: number,
): ReasoningRejection | undefined {
  const fields = OUTPUT_LIMIT_FIELDS[surface];
  const field = fields.find((name) => body[name] !== undefined && body[name] !== null);
  const limit = field === undefined ? undefined : body[field];
  if (field === undefined || typeof limit !== 'number' || !Number.isFinite(limit)) {
    return reject(
      422,
      'reasoning_budget_requires_limit',
      field ?? fields[0]!,
      `Reasoning effort \`${effort}\` uses a reasoning budget of ${budget} tokens: set ${LIMIT_PHRASE[surface]} to a number above ${budget}.`,
    );
  }
  if (limit <= budget) {
    return reject(
      400,
      'reasoning_budget_exceeds_limit',
      field,
      `\`${field}\` (${limit}) must be above the reasoning budget of ${budget} tokens that effort \`${effort}\` uses; budgets are not clipped.`,
    );
  }
  return undefined;
}

/**
 * The body to send to the plan's `providerIndex`-th provider. Returns `body` itself when that
 * provider gets the request unchanged (so the caller can forward the original bytes), otherwise a
 * new object that shares every untouched subtree with `body`. `body` is never mutated.
 */
export function applyReasoning(plan: ReasoningPlan, providerIndex: number, body: JsonObject): JsonObject {
  if (!Number.isInteger(providerIndex) || providerIndex < 0 || providerIndex >= plan.rewrites.length) {
    // A wrong index is a wiring error; sending the untranslated body would silently skip rules.
    throw new RangeError(
      `provider index ${providerIndex} outside the plan's ${plan.rewrites.length} providers`,
    );
  }
  const rewrite = plan.rewrites[providerIndex];
  if (rewrite === undefined) return body;
  const out = new CopyOnWriteBody(body);
  out.remove(rewrite.remove);
  for (const write of rewrite.writes) out.set(write.segments, write.value);
  return out.value;
}
