import { buildKeyIndex } from '../auth/keys.js';
import { describePool, type AimdRegistry } from '../balance/aimd-registry.js';
import type { OutlierRegistry, OutlierSettings } from '../balance/outliers.js';
import type { AffinitySettings, LoadStrategy, PickerRegistry } from '../balance/pool-picker.js';
import { parseEndpoint, upstreamTimeouts } from '../http/upstream.js';
import { compileReasoningTranslation } from '../reasoning/index.js';
import type { BatchLimiterFactory } from '../limits/batch.js';
import type { LimiterFactory } from '../limits/redis/store.js';
import { LimiterRegistry, limiterId } from '../limits/registry.js';
import type { BatchLimiter, TokenLimiter } from '../limits/types.js';
import type { ConfigIssue } from '../config/issues.js';
import type { RouteStrategy } from '../balance/strategies.js';
import type {
  RuntimeTable,
  AliasRoute,
  ProviderRoute,
  ServiceEntryMembers,
  FallbackPolicy,
  KeyLimits,
  TokenPrices,
} from './table.js';
import {
  AFFINITY_DEFAULTS,
  DEFAULT_STRATEGY,
  DEFAULT_UPSTREAM_AUTH_HEADER_NAME,
  DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX,
  providerIdentity,
  requestClassOf,
  resolveTimeouts,
  type FallbackConfig,
  type OutlierDetectionConfig,
  type Pricing,
  type TimeoutsConfig,
} from '../config/schema/index.js';
import type { ResolvedGatewayConfig, ResolvedProvider, ResolvedTarget } from '../config/secrets.js';
import type { SpendBudget } from '../limits/spend/types.js';
import { budgetIssues, budgetParams, reservePrices } from './budgets.js';
import { memberUrl, noMembers, type MembersOf, type ServiceMembers } from '../discovery/members.js';

export interface CompileOptions {
  /** Enforce `batch_inflight_limit` with the built-in counter (`--enforce-batch-inflight`). */
  enforceBatchInflight: boolean;
  /** An embedding program's batch limiter; when given it replaces the built-in counter. */
  batchLimiter: BatchLimiterFactory | undefined;
  /** Share controllers across reloads; absent when compiling only to check a file. */
  aimd: AimdRegistry | undefined;
  /**
   * Pools' outlier ejection state across reloads; absent when compiling only to check a file. The
   * caller commits it once the compiled table is in use.
   */
  outliers?: OutlierRegistry | undefined;
  /**
   * Pools' pickers (the load-aware strategies) across reloads; absent when compiling only to check a
   * file. The caller commits it once the compiled table is in use.
   */
  pickers?: PickerRegistry | undefined;
  /**
   * Limits shared across replicas (`--shared-state`): when given, every token bucket, concurrency
   * limit, account in-flight limit and enforced batch cap comes from it instead of the in-memory
   * registry, under the same identities. An embedder's `batchLimiter` still wins for batch.
   */
  sharedLimits: LimiterFactory | undefined;
  /**
   * The ready pods of a `service:` entry's Service (endpoint discovery); absent when compiling only
   * to check a file, or before discovery started: such an entry then has no member.
   */
  members?: MembersOf | undefined;
}

export type CompileResult = { ok: true; table: CompiledTable } | { ok: false; issues: ConfigIssue[] };

/** The runtime table plus the limiter registry the next compile carries state from. */
export interface CompiledTable extends RuntimeTable {
  readonly limiters: LimiterRegistry;
}

/**
 * Compiles a validated configuration, its secret references resolved, into the immutable runtime
 * table. Stateful parts (buckets,
 * permits, in-flight counts) are carried over from `previous` when their identity and parameters are
 * unchanged (see LimiterRegistry). Problems only detectable across sections (one key defined twice)
 * come back as issues, like schema errors.
 */
export function compileRuntime(
  config: ResolvedGatewayConfig,
  hash: string,
  previous: CompiledTable | undefined,
  options: CompileOptions,
): CompileResult {
  const keyBuild = buildKeyIndex(config.auth, config.targets);
  if (!keyBuild.ok) {
    return { ok: false, issues: keyBuild.problems.map((p) => ({ path: `$.${p.path}`, message: p.message })) };
  }
  const keys = keyBuild.index;
  const unpriced = budgetIssues(config, keys);
  if (unpriced.length > 0) return { ok: false, issues: unpriced };
  const registry = (previous?.limiters ?? LimiterRegistry.empty()).rebuild();
  const limiters: LimiterFactory = options.sharedLimits ?? registry;

  const keyLimits = new Map<string, KeyLimits>();
  for (const identity of keys.definitions()) {
    const name = identity.definitionName!;
    const subject = { scope: 'key' as const, subject: name };
    const budget = config.auth?.key_definitions?.[name]?.budget;
    keyLimits.set(name, {
      rateLimit: identity.rateLimit
        ? limiters.tokenBucket(limiterId.keyRate(name), identity.rateLimit, subject)
        : undefined,
      concurrencyLimit: identity.concurrencyLimit
        ? limiters.concurrency(limiterId.keyConcurrency(name), identity.concurrencyLimit, subject)
        : undefined,
      tokenLimit: identity.tokenLimit
        ? limiters.tokenBudget(limiterId.keyTokens(name), identity.tokenLimit, 'key', name)
        : undefined,
      budget: budget && limiters.spendBudget(limiterId.keyBudget(name), 'key', name, budgetParams(budget)),
    });
  }
  const accountTokenLimits = new Map<string, TokenLimiter>();
  for (const [account, limits] of Object.entries(config.auth?.accounts ?? {}))
    if (limits.token_limit)
      accountTokenLimits.set(
        account,
        limiters.tokenBudget(limiterId.accountTokens(account), limits.token_limit, 'account', account),
      );
  const accountBudgets = new Map<string, SpendBudget>();
  for (const [account, limits] of Object.entries(config.auth?.accounts ?? {}))
    if (limits.budget)
      accountBudgets.set(
        account,
        limiters.spendBudget(
          limiterId.accountBudget(account),
          'account',
          account,
          budgetParams(limits.budget),
        ),
      );

  const batchByAlias = new Map<string, BatchLimiter | undefined>();
  const batchFor = (alias: string, limit: number | undefined): BatchLimiter | undefined => {
    if (!batchByAlias.has(alias)) {
      let limiter: BatchLimiter | undefined;
      if (options.batchLimiter) limiter = options.batchLimiter(alias, limit);
      else if (options.enforceBatchInflight && limit !== undefined) {
        limiter = limiters.batch(limiterId.batch(alias), alias, {
          batch_inflight_limit: limit,
          enforce: true,
        });
      }
      batchByAlias.set(alias, limiter);
    }
    return batchByAlias.get(alias);
  };

  const routes = new Map<string, AliasRoute>();
  options.outliers?.begin();
  options.pickers?.begin();
  const targetKeys = Object.keys(config.targets);
  const modelOf = (key: string): string => requestClassOf(key, targetKeys)?.alias ?? key;
  // Last of the stateful steps: rebuilding parks and retires controllers of the previous table.
  const shares = options.aimd?.rebuild(
    Object.entries(config.targets).map(([key, target]) => describePool(key, modelOf(key), target)),
  );
  for (const [key, target] of Object.entries(config.targets)) {
    // A request-class pool `llama:interactive` belongs to alias `llama` (its `model` label).
    const model = modelOf(key);
    // Spec 2.2 rule 3: in-flight and batch caps come from the alias's default pool.
    const defaultPool = config.targets[model] ?? target;
    const auth = keys.target(key)!;
    const subject = { scope: 'target' as const, subject: key };
    const services: ServiceEntryMembers[] = [];
    const providers = compileProviders(key, target, config.timeouts, limiters, (entry, service) => {
      const members = options.members?.(service) ?? noMembers(service.namespace ?? '');
      services.push({ entry, service: service.name, members });
      return members;
    });
    routes.set(key, {
      key,
      model,
      auth,
      rateLimit: target.rate_limit
        ? limiters.tokenBucket(limiterId.targetRate(key), target.rate_limit, subject)
        : undefined,
      concurrencyLimit: target.concurrency_limit
        ? limiters.concurrency(limiterId.targetConcurrency(key), target.concurrency_limit, subject)
        : undefined,
      tokenLimit: target.token_limit
        ? limiters.tokenBudget(limiterId.targetTokens(key), target.token_limit, 'target', key)
        : undefined,
      budget:
        target.budget &&
        limiters.spendBudget(limiterId.targetBudget(key), 'target', key, budgetParams(target.budget)),
      reservePrices: reservePrices(target),
      inflight: limiters.accountInflight(limiterId.account(model), model, {
        inflight_limit: defaultPool.inflight_limit,
        account_inflight_limits: defaultPool.account_inflight_limits,
      }),
      batch: batchFor(model, defaultPool.batch_inflight_limit),
      strategy: strategyOf(target),
      providers,
      fallback: compileFallback(target.fallback, providers.length),
      outliers:
        target.outlier_detection === undefined
          ? undefined
          : options.outliers?.pool(
              model,
              key,
              providers.map((p) => ({
                name: p.name,
                url: p.endpoint.origin + p.endpoint.basePath,
                label: p.label,
              })),
              outlierSettings(target.outlier_detection),
            ),
      requestUsageInStreams: target.usage?.request_in_streams ?? config.usage?.request_in_streams ?? false,
      share: shares?.get(key),
      picker:
        loadStrategyOf(target) === undefined
          ? undefined
          : options.pickers?.pool(
              model,
              key,
              loadStrategyOf(target)!,
              providers.map((p) => p.name),
              target.strategy === 'prefix_affinity' ? affinitySettings(target) : undefined,
            ),
      reasoning: providers.map((p) => p.reasoning),
      services,
    });
  }

  return {
    ok: true,
    table: {
      hash,
      // A table compiled again for new members of a Service is the same configuration.
      createdAt: previous?.hash === hash ? previous.createdAt : Math.floor(Date.now() / 1000),
      strictMode: config.strict_mode ?? false,
      routes,
      keys,
      keyLimits,
      accountTokenLimits,
      accountBudgets,
      budgets: [
        ...[...keyLimits.values()].flatMap((limits) => (limits.budget ? [limits.budget] : [])),
        ...accountBudgets.values(),
        ...[...routes.values()].flatMap((route) => (route.budget ? [route.budget] : [])),
      ],
      rejectUnsupportedParams: new Set(config.reject_unsupported_params ?? []),
      sharedLimits: options.sharedLimits !== undefined,
      rateLimitHeaders: config.rate_limit_headers ?? true,
      limiters: registry.finish(),
    },
  };
}

const LOAD_STRATEGIES: ReadonlySet<string> = new Set(['round_robin', 'least_request', 'prefix_affinity']);

/** The strategy of a pool whose picker reads its load, or undefined. */
function loadStrategyOf(target: ResolvedTarget): LoadStrategy | undefined {
  const strategy = target.providers === undefined ? undefined : target.strategy;
  return strategy !== undefined && LOAD_STRATEGIES.has(strategy) ? (strategy as LoadStrategy) : undefined;
}

function affinitySettings(target: ResolvedTarget): AffinitySettings {
  const affinity = target.affinity;
  return {
    loadBound: affinity?.load_bound ?? AFFINITY_DEFAULTS.load_bound,
    tableEntries: affinity?.table_entries ?? AFFINITY_DEFAULTS.table_entries,
    blockChars: affinity?.block_chars ?? AFFINITY_DEFAULTS.block_chars,
    maxBlocks: affinity?.max_blocks ?? AFFINITY_DEFAULTS.max_blocks,
  };
}

function strategyOf(target: ResolvedTarget): RouteStrategy {
  if (!target.providers) return 'single';
  return target.strategy ?? DEFAULT_STRATEGY;
}

/** One provider of a pool as the attempt loop sees it: a `url:` entry, or one pod of a `service:` entry. */
interface ProviderSite {
  /** Identity of the member: the entry's, or `<entry>/<pod>`. */
  name: string;
  /** The entry's identity: the `provider` label. */
  label: string;
  url: string;
  weight: number;
  /** The name a pod's certificate is checked for (`https` Services). */
  servername: string | undefined;
}

/**
 * A single-provider target is compiled as a pool of one, so the attempt loop has one shape to
 * handle. In a pool, provider entries inherit the pool's settings where they leave them unset; a
 * `service:` entry becomes one provider per ready pod (`membersOf`), each with the entry's settings
 * and limits of its own.
 */
function compileProviders(
  poolKey: string,
  target: ResolvedTarget,
  rootTimeouts: TimeoutsConfig | undefined,
  limiters: LimiterFactory,
  membersOf: (entry: string, service: NonNullable<ResolvedProvider['service']>) => ServiceMembers,
): ProviderRoute[] {
  const entries: readonly ResolvedProvider[] = target.providers ?? [
    {
      url: target.url!,
      weight: 1,
      upstream_auth_header_name: undefined,
      upstream_auth_header_prefix: undefined,
      trusted: undefined,
      propagate_trace_context: target.propagate_trace_context,
    },
  ];
  const isPool = target.providers !== undefined;
  const sites = entries.flatMap((entry): [ResolvedProvider, ProviderSite][] => {
    const service = entry.service;
    const label = providerIdentity(entry);
    if (service === undefined)
      return [
        [entry, { name: label, label, url: entry.url!, weight: entry.weight ?? 1, servername: undefined }],
      ];
    const members = membersOf(label, service);
    const weight = (entry.weight ?? 1) / Math.max(1, members.ready.length);
    const servername = service.scheme === 'https' ? `${service.name}.${members.namespace}.svc` : undefined;
    return members.ready.map((member) => [
      entry,
      { name: `${label}/${member.pod}`, label, url: memberUrl(service, member.address), weight, servername },
    ]);
  });
  return sites.map(([entry, site], index) => {
    const name = site.name;
    const trusted = entry.trusted ?? target.trusted ?? false;
    const gatewayKey = entry.gateway_key ?? target.gateway_key;
    const headerName =
      entry.upstream_auth_header_name ??
      target.upstream_auth_header_name ??
      DEFAULT_UPSTREAM_AUTH_HEADER_NAME;
    const headerPrefix =
      entry.upstream_auth_header_prefix ??
      target.upstream_auth_header_prefix ??
      DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX;
    const merged = new Map<string, string>();
    for (const [n, v] of Object.entries(target.response_headers ?? {})) merged.set(n.toLowerCase(), v);
    if (isPool)
      for (const [n, v] of Object.entries(entry.response_headers ?? {})) merged.set(n.toLowerCase(), v);
    const subject = { scope: 'provider' as const, subject: `${poolKey}/${name}` };
    const timeouts = resolveTimeouts(isPool ? entry.timeouts : undefined, target.timeouts, rootTimeouts);
    return {
      name,
      label: site.label,
      index,
      endpoint: parseEndpoint(site.url, site.servername),
      weight: site.weight,
      gatewayModel: entry.gateway_model ?? target.gateway_model,
      api: entry.api ?? target.api ?? 'openai',
      gatewayKey,
      authHeader:
        gatewayKey === undefined ? undefined : [headerName.toLowerCase(), headerPrefix + gatewayKey],
      responseHeaders: [...merged],
      trusted,
      reasoning: compileReasoningTranslation(entry.reasoning_translation ?? target.reasoning_translation),
      sanitizeResponse: entry.sanitize_response ?? target.sanitize_response ?? false,
      propagateTraceContext: entry.propagate_trace_context ?? trusted,
      pricing: tokenPrices(entry.pricing ?? target.pricing),
      timeouts,
      upstreamTimeouts: upstreamTimeouts(timeouts),
      rateLimit:
        isPool && entry.rate_limit
          ? limiters.tokenBucket(limiterId.providerRate(poolKey, name), entry.rate_limit, subject)
          : undefined,
      concurrencyLimit:
        isPool && entry.concurrency_limit
          ? limiters.concurrency(
              limiterId.providerConcurrency(poolKey, name),
              entry.concurrency_limit,
              subject,
            )
          : undefined,
    } satisfies ProviderRoute;
  });
}

/**
 * `on_status` entries: a three-digit code matches exactly; a one- or two-digit entry is a prefix
 * wildcard (`5` = 500-599, `50` = 500-509). Compiled into a lookup table indexed by status.
 */
export function compileStatusMatcher(entries: readonly number[]): (status: number) => boolean {
  const table = new Uint8Array(600);
  for (const entry of entries) {
    const digits = String(entry).length;
    const span = digits === 1 ? 100 : digits === 2 ? 10 : 1;
    const start = entry * span;
    for (let s = start; s < start + span && s < 600; s++) table[s] = 1;
  }
  return (status) => status >= 0 && status < 600 && table[status] === 1;
}

function compileFallback(
  fallback: FallbackConfig | undefined,
  providerCount: number,
): FallbackPolicy | undefined {
  if (!fallback || fallback.enabled === false) return undefined;
  return {
    onStatus: compileStatusMatcher(fallback.on_status ?? []),
    onRateLimit: fallback.on_rate_limit ?? false,
    onConnectionError: fallback.on_connection_error ?? true,
    // The schema keeps max_attempts between 1 and the pool's size; this is the one place it is resolved.
    maxAttempts: fallback.max_attempts ?? providerCount,
    firstTokenTimeoutMs: fallback.first_token_timeout_ms,
  };
}

function outlierSettings(config: OutlierDetectionConfig): OutlierSettings {
  return {
    consecutiveFailures: config.consecutive_failures,
    baseEjectionMs: config.base_ejection_ms,
    maxEjectionMs: config.max_ejection_ms,
    maxEjectedPercent: config.max_ejected_percent,
  };
}

function tokenPrices(pricing: Pricing | undefined): TokenPrices | undefined {
  if (pricing === undefined) return undefined;
  return {
    prompt: pricing.prompt_per_million,
    completion: pricing.completion_per_million,
    cachedPrompt: pricing.cached_prompt_per_million ?? pricing.prompt_per_million,
    cacheWrite: pricing.cache_write_per_million ?? pricing.prompt_per_million,
  };
}
