import type { ProviderApi } from '../api/surfaces.js';
import type { KeyIndex, TargetAuth } from '../auth/keys.js';
import type { ShareController } from '../balance/aimd.js';
import type { PoolOutliers } from '../balance/outliers.js';
import type { PoolPicker } from '../balance/pool-picker.js';
import type { RouteStrategy } from '../balance/strategies.js';
import type { CompiledReasoning } from '../reasoning/index.js';
import type { ServiceMembers } from '../discovery/members.js';
import type { UpstreamEndpoint, UpstreamTimeouts } from '../http/upstream.js';
import type { ResolvedTimeouts } from '../config/schema/index.js';
import type {
  BatchLimiter,
  ConcurrencyLimiter,
  InflightLimiter,
  RateLimiter,
  TokenLimiter,
} from '../limits/types.js';
import type { SpendBudget } from '../limits/spend/types.js';

/**
 * The compiled, immutable form of a configuration: everything the request path needs, resolved
 * once per load (URLs parsed, headers merged, trust resolved, limiters attached). A reload builds a
 * new table and swaps one reference; a request keeps the table it started with.
 */
export interface RuntimeTable {
  /** sha256 of the configuration file bytes. */
  readonly hash: string;
  /** Unix seconds when this table was compiled (the `created` field of the models list). */
  readonly createdAt: number;
  readonly strictMode: boolean;
  /** By target key: an alias (`llama`) or a request-class pool (`llama:interactive`). */
  readonly routes: ReadonlyMap<string, AliasRoute>;
  readonly keys: KeyIndex;
  /** Limits of named keys (`key_definitions`), by definition name. */
  readonly keyLimits: ReadonlyMap<string, KeyLimits>;
  /** Token budgets of accounts (`auth.accounts`), by account label. */
  readonly accountTokenLimits: ReadonlyMap<string, TokenLimiter>;
  /** Spend budgets of accounts (`auth.accounts`), by account label. */
  readonly accountBudgets: ReadonlyMap<string, SpendBudget>;
  /** Every spend budget of the table (key, account and target), for their gauges. */
  readonly budgets: readonly SpendBudget[];
  /** Catalog names whose presence rejects a strict-mode request (spec 4.7). */
  readonly rejectUnsupportedParams: ReadonlySet<string>;
  /** The limiters are shared through Redis (`--shared-state`): admission decides them together. */
  readonly sharedLimits: boolean;
  /** Responses carry the `x-ratelimit-*` headers of the limits they were admitted under. */
  readonly rateLimitHeaders: boolean;
}

export interface KeyLimits {
  readonly rateLimit: RateLimiter | undefined;
  readonly concurrencyLimit: ConcurrencyLimiter | undefined;
  readonly tokenLimit: TokenLimiter | undefined;
  readonly budget: SpendBudget | undefined;
}

/** What one token may cost on a route at most, per token (not per million). */
export interface ReservePrices {
  readonly prompt: number;
  readonly completion: number;
}

export interface FallbackPolicy {
  /** Exact statuses and prefix wildcards (`5` = 5xx, `50` = 500-509) that move to the next provider. */
  readonly onStatus: (status: number) => boolean;
  readonly onRateLimit: boolean;
  readonly onConnectionError: boolean;
  /** Attempts per request, first included: at most the pool's size, each to another provider. */
  readonly maxAttempts: number;
  /** Milliseconds, or undefined when no first-token deadline is armed. */
  readonly firstTokenTimeoutMs: number | undefined;
}

export interface AliasRoute {
  /** The target key as configured. */
  readonly key: string;
  /** The alias without a request-class suffix: the `model` metric label. */
  readonly model: string;
  readonly auth: TargetAuth;
  readonly rateLimit: RateLimiter | undefined;
  readonly concurrencyLimit: ConcurrencyLimiter | undefined;
  /** The target's token budget (`token_limit`). */
  readonly tokenLimit: TokenLimiter | undefined;
  /** The target's spend budget (`budget`). */
  readonly budget: SpendBudget | undefined;
  /** The highest prices of its providers, what a reservation is made at; undefined when one has none. */
  readonly reservePrices: ReservePrices | undefined;
  /** Per-account realtime in-flight counter of the alias (shared by its request-class pools). */
  readonly inflight: InflightLimiter;
  /** Batch in-flight cap of the alias; undefined when uncapped or not enforced in this process. */
  readonly batch: BatchLimiter | undefined;
  readonly strategy: RouteStrategy;
  readonly providers: readonly ProviderRoute[];
  readonly fallback: FallbackPolicy | undefined;
  /** Outlier ejection of the pool's providers (`outlier_detection`), or undefined when off. */
  readonly outliers: PoolOutliers | undefined;
  /** Streamed chat and text completions ask for usage when the client did not (`usage.request_in_streams`). */
  readonly requestUsageInStreams: boolean;
  /** The first-token share controller of an eligible priority pool (spec 3.1). */
  readonly share: ShareController | undefined;
  /** The pool's load-aware picker (`round_robin`, `least_request`, `prefix_affinity`), else undefined. */
  readonly picker: PoolPicker | undefined;
  /** `providers[i].reasoning` in configuration order: what `planReasoning` takes. */
  readonly reasoning: readonly (CompiledReasoning | undefined)[];
  /** The pool's `service:` entries and what discovery said of them when the table was compiled. */
  readonly services: readonly ServiceEntryMembers[];
}

/** A `service:` entry of a pool and its members (`gateway_service_endpoints`). */
export interface ServiceEntryMembers {
  /** The entry's identity: the `provider` label. */
  readonly entry: string;
  readonly service: string;
  readonly members: ServiceMembers;
}

export interface ProviderRoute {
  /**
   * Identity for logs, the access log, limits and the per-member state (picking, ejection): the
   * configured name, else the URL; for a pod of a `service:` entry `<entry>/<pod>`.
   */
  readonly name: string;
  /** The `provider` label of the request, attempt, token and latency metrics: the entry's identity. */
  readonly label: string;
  readonly index: number;
  readonly endpoint: UpstreamEndpoint;
  readonly weight: number;
  readonly gatewayModel: string | undefined;
  /** The API it speaks for Anthropic Messages requests (`api`): passed through, or translated to chat completions. */
  readonly api: ProviderApi;
  /** The upstream key, kept only to redact it from logged provider error bodies. */
  readonly gatewayKey: string | undefined;
  /** Lower-cased header name and its full value, or undefined when no upstream key is configured. */
  readonly authHeader: readonly [name: string, value: string] | undefined;
  /** Pool headers merged with the provider's (the provider wins), in order. */
  readonly responseHeaders: readonly (readonly [name: string, value: string])[];
  /** Effective trust (spec 2.2 rule 1): provider value, else pool value, else false. */
  readonly trusted: boolean;
  readonly sanitizeResponse: boolean;
  /** Effective trace propagation: explicit value, else the effective trust. */
  readonly propagateTraceContext: boolean;
  readonly rateLimit: RateLimiter | undefined;
  readonly concurrencyLimit: ConcurrencyLimiter | undefined;
  /** Compiled reasoning-effort translation (provider-scoped; the pool's when the entry has none). */
  readonly reasoning: CompiledReasoning | undefined;
  /** Token prices per million (the entry's, else the pool's), or undefined: no cost counted. */
  readonly pricing: TokenPrices | undefined;
  /** Upstream timeouts: the entry's, else the pool's, else the top level's, else the defaults. */
  readonly timeouts: ResolvedTimeouts;
  /** How the connect, headers and idle timeouts are carried out (`upstreamTimeouts`). */
  readonly upstreamTimeouts: UpstreamTimeouts;
}

export interface TokenPrices {
  readonly prompt: number;
  readonly completion: number;
  readonly cachedPrompt: number;
  readonly cacheWrite: number;
}
