/**
 * The gateway configuration file as zod schemas, one file per section (gateway spec 2, DESIGN 3 and
 * 6). They are the single source of truth: the TypeScript types are inferred from them, `load.ts`
 * validates with them, `json-schema.ts` and `docs.ts` generate the JSON Schema and the field
 * reference from them, so every `.describe()` text is user documentation.
 *
 * Every object is strict (an unknown field is an error, so a typo never silently disables a
 * setting). Rules that span several fields are `superRefine` checks placed on the smallest object
 * that holds all the fields involved, so one broken target does not hide the rule violations of
 * another. zod runs a refinement only when the object's fields parsed (an unknown key does not stop
 * it; `issues.ts` holds back what it then reports), so a config with a type error reports that
 * first and its cross-field errors once the types are fixed.
 *
 * The helpers exported here next to the schemas (`providerIdentity`, `requestClassOf`,
 * `resolveAimd`, `aimdApplies`) are what the checks use to resolve a value, and the runtime resolves
 * with the same ones, so validation and behaviour cannot drift apart.
 */
export {
  DEFAULT_STRATEGY,
  DEFAULT_UPSTREAM_AUTH_HEADER_NAME,
  DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX,
  EFFORTS,
  REASONING_SURFACES,
  STRATEGIES,
} from './constants.js';
export type { Effort, PoolStrategy, ReasoningSurfaceName } from './constants.js';
export { EffortSchema } from './fields.js';
export { SecretReferenceSchema, UpstreamKeySchema, tokenOwnershipIssues } from './secret-reference.js';
export type { SecretReference } from './secret-reference.js';
export {
  BudgetSchema,
  ConcurrencyLimitSchema,
  DEFAULT_BUDGET_MAX_TOKENS,
  RateLimitSchema,
  TokenLimitSchema,
} from './limits.js';
export type { BudgetConfig, ConcurrencyLimitConfig, RateLimitConfig, TokenLimitConfig } from './limits.js';
export { AuthSchema, KeyDefinitionSchema } from './auth.js';
export type { AuthConfig, KeyDefinition } from './auth.js';
export { ReasoningSurfaceSchema, ReasoningTranslationSchema, ReasoningWriteSchema } from './reasoning.js';
export type { ReasoningSurface, ReasoningTranslation, ReasoningWrite } from './reasoning.js';
export { AIMD_DEFAULTS, AimdOverridesSchema, resolveAimd } from './aimd.js';
export type { AimdOverrides, AimdParameters } from './aimd.js';
export { FallbackSchema } from './fallback.js';
export { TIMEOUT_DEFAULTS, TimeoutsSchema, resolveTimeouts } from './timeouts.js';
export { OUTLIER_DEFAULTS, OutlierDetectionSchema } from './outliers.js';
export { AFFINITY_DEFAULTS, AffinitySchema } from './affinity.js';
export { SERVICE_DEFAULTS, ServiceReferenceSchema } from './service.js';
export type { ServiceReference } from './service.js';
export type { AffinityConfig } from './affinity.js';
export type { OutlierDetectionConfig } from './outliers.js';
export type { ResolvedTimeouts, TimeoutsConfig } from './timeouts.js';
export type { FallbackConfig } from './fallback.js';
export {
  PricingSchema,
  ProviderSchema,
  TargetSchema,
  aimdApplies,
  isPoolTarget,
  providerIdentity,
} from './target.js';
export type { Pricing, PoolTarget, ProviderConfig, SingleProviderTarget, TargetConfig } from './target.js';
export {
  CROSS_FIELD_RULES,
  ENVELOPE_API_VERSION,
  ENVELOPE_KIND,
  EnvelopeMetadataSchema,
  GatewayConfigEnvelopeSchema,
  GatewayConfigSchema,
  requestClassOf,
} from './root.js';
export type {
  EnvelopeMetadata,
  GatewayConfig,
  GatewayConfigEnvelope,
  GatewayConfigInput,
  UnsupportedParamsList,
} from './root.js';
export { KUBERNETES_RULES_KEY } from './fields.js';
export type { KubernetesRule } from './fields.js';
