/** Provider entries and targets (spec 2.2, DESIGN 6), with the cross-field checks of a target. */
import { z } from 'zod';
import {
  DEFAULT_STRATEGY,
  DEFAULT_UPSTREAM_AUTH_HEADER_NAME,
  DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX,
  STRATEGIES,
} from './constants.js';
import {
  HeaderNameSchema,
  HeaderValueSchema,
  NonEmptyString,
  NonNegativeInt,
  UrlSchema,
  LIMITS,
  globalOnly,
  kubernetesRules,
} from './fields.js';
import { ClientKeyLiteralSchema, UpstreamKeySchema, secretOr } from './secret-reference.js';
import { BudgetSchema, ConcurrencyLimitSchema, RateLimitSchema, TokenLimitSchema } from './limits.js';
import { ReasoningTranslationSchema } from './reasoning.js';
import { resolveAimd } from './aimd.js';
import { FallbackSchema } from './fallback.js';
import { TimeoutsSchema } from './timeouts.js';
import { OutlierDetectionSchema } from './outliers.js';
import { AffinitySchema } from './affinity.js';
import { ServiceReferenceSchema } from './service.js';

const ResponseHeadersSchema = z.record(HeaderNameSchema, HeaderValueSchema).superRefine((headers, ctx) => {
  // Header names are case-insensitive: two spellings of one name would make the winner arbitrary.
  const seen = new Map<string, string>();
  for (const name of Object.keys(headers)) {
    const earlier = seen.get(name.toLowerCase());
    if (earlier !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `same header as \`${earlier}\` (names are case-insensitive)`,
      });
    else seen.set(name.toLowerCase(), name);
  }
});

/** Prices of a provider's tokens, per million, in the operator's currency unit. */
export const PricingSchema = z
  .strictObject({
    prompt_per_million: z.number().nonnegative().describe('Price of one million prompt (input) tokens.'),
    completion_per_million: z
      .number()
      .nonnegative()
      .describe('Price of one million completion (output) tokens, reasoning tokens included.'),
    cached_prompt_per_million: z
      .number()
      .nonnegative()
      .optional()
      .describe('Price of one million cached prompt tokens. Absent: the prompt price.'),
    cache_write_per_million: z
      .number()
      .nonnegative()
      .optional()
      .describe(
        "Price of one million prompt tokens written to the provider's prompt cache (Anthropic's `cache_creation_input_tokens`). Absent: the prompt price.",
      ),
  })
  .meta({
    id: 'Pricing',
    title: 'Token prices',
    description:
      "Prices per million tokens, in whatever currency unit you bill in (all prices of one gateway should share it): `gateway_cost_total` adds them up from the usage each response reports. There is no built-in price list: the figures are the ones you configure, from your provider's price sheet or your own cost of serving.",
  });

export type Pricing = z.infer<typeof PricingSchema>;

/** How the gateway reads token usage (global, or per target to override it there). */
export const UsageSchema = z
  .strictObject({
    request_in_streams: z
      .boolean()
      .optional()
      .describe(
        'Ask for usage in streamed chat and text completions whose client did not: `stream_options.include_usage: true` is added upstream, and the usage-only chunk the provider then sends is removed from what the client receives. Absent: the global value, else false (a stream is counted only when its client asked for usage).',
      ),
  })
  .meta({
    id: 'Usage',
    title: 'Usage reading',
    description:
      'Token usage is read from every response that reports it (`gateway_tokens_total`); streams report it only when asked.',
  });

/** Fields a provider entry shares with a target; the texts say how the pool and the entry combine. */
function upstreamFields(scope: 'target' | 'provider') {
  const onProvider = scope === 'provider';
  const inherits = (what: string): string =>
    onProvider ? ` Overrides the pool's ${what} for this provider.` : '';
  return {
    gateway_key: secretOr(UpstreamKeySchema)
      .optional()
      .describe(
        `API key sent to the upstream in \`upstream_auth_header_name\`: the key itself, or a [secret reference](#secret-reference) (\`{ from_file: /path }\` or \`{ from_env: NAME }\`). Absent: no upstream credential is sent.${inherits('`gateway_key`')}`,
      ),
    api: z
      .enum(['openai', 'anthropic'])
      .optional()
      .describe(
        `The API the upstream speaks for Anthropic Messages requests (\`/v1/messages\`): \`anthropic\` passes them through byte for byte (vLLM, SGLang and Anthropic's own API serve it); \`openai\` translates them to chat completions and the answers back. Other requests are unaffected. Absent: ${onProvider ? "the pool's value, else " : ''}\`openai\`.${inherits('`api`')}`,
      ),
    gateway_model: NonEmptyString.optional().describe(
      `Model name written into the forwarded request's \`model\` field; absent: the client's value is sent.${inherits('`gateway_model`')}`,
    ),
    upstream_auth_header_name: onProvider
      ? HeaderNameSchema.optional().describe("Header that carries `gateway_key`. Overrides the pool's value.")
      : HeaderNameSchema.default(DEFAULT_UPSTREAM_AUTH_HEADER_NAME).describe(
          'Header that carries `gateway_key` to the upstream. On a pool it is the default of every provider entry.',
        ),
    upstream_auth_header_prefix: onProvider
      ? HeaderValueSchema.optional().describe(
          "Text placed before the key in the auth header; empty string sends the bare key. Overrides the pool's value.",
        )
      : HeaderValueSchema.default(DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX).describe(
          'Text placed before the key in the auth header (note the trailing space of the default); empty string sends the bare key.',
        ),
    response_headers: ResponseHeadersSchema.optional().describe(
      onProvider
        ? "Headers added to, or overriding, responses served by this provider; on conflict they win over the pool's `response_headers`."
        : 'Headers added to, or overriding, every response of this target (name -> value). Framing headers such as `content-length` cannot be set.',
    ),
    sanitize_response: z
      .boolean()
      .optional()
      .describe(
        `Standalone response sanitization of chat completions: provider-specific fields removed, \`model\` rewritten to the alias, upstream error bodies replaced. Ignored when strict mode is on.${inherits('value')}`,
      ),
    trusted: onProvider
      ? z
          .boolean()
          .optional()
          .describe(
            "Strict mode only: errors from this provider pass through unsanitized. Overrides the pool's `trusted`.",
          )
      : z
          .boolean()
          .default(false)
          .describe(
            'Strict mode only: upstream error responses are forwarded unsanitized (success responses are still sanitized). On a pool it is the default for provider entries that do not set it.',
          ),
    propagate_trace_context: z
      .boolean()
      .optional()
      .describe(
        onProvider
          ? "Inject W3C `traceparent` and `tracestate` headers on requests to this provider. Absent: follows this provider's effective `trusted` value."
          : 'Inject W3C `traceparent` and `tracestate` headers on outbound requests. Absent: follows the effective `trusted` value. Not valid on the top level of a pool: set it on each provider entry.',
      ),
    reasoning_translation: ReasoningTranslationSchema.optional().describe(
      onProvider
        ? "Reasoning-effort translation for this provider; replaces the pool's `reasoning_translation` entirely."
        : 'Reasoning-effort translation. On a pool it is the default for provider entries without their own (translations are provider-scoped: an entry replaces it entirely, nothing is merged).',
    ),
    rate_limit: RateLimitSchema.optional().describe(
      onProvider
        ? 'Token bucket of this provider alone, checked when the provider is tried (see `fallback.on_rate_limit`).'
        : 'Token bucket for the whole target, shared by all clients. Absent: not rate limited.',
    ),
    concurrency_limit: ConcurrencyLimitSchema.optional().describe(
      onProvider
        ? 'Concurrency cap of this provider alone, checked when the provider is tried.'
        : 'Concurrency cap for the whole target. Absent: no cap.',
    ),
    pricing: PricingSchema.optional().describe(
      onProvider
        ? "Token prices of this provider; replaces the pool's `pricing`."
        : 'Token prices for `gateway_cost_total`. On a pool it is the default for provider entries without their own. Absent: no cost is counted.',
    ),
    timeouts: TimeoutsSchema.optional().describe(
      onProvider
        ? "Upstream timeouts of this provider; override the pool's `timeouts` (and the top-level ones) field by field."
        : 'Upstream timeouts of this target (on a pool, the default of every provider entry); override the top-level `timeouts` field by field.',
    ),
    strict_mode: globalOnly(),
  };
}

/** Strategies a `service:` entry may be used with: its pods are peers, none preferred. */
export const SERVICE_STRATEGIES: ReadonlySet<string> = new Set([
  'weighted_random',
  'round_robin',
  'least_request',
  'prefix_affinity',
]);

export const ProviderSchema = z
  .strictObject({
    url: UrlSchema.optional().describe(
      "Base URL of this provider (http or https), for example `http://10.0.0.5:8000/v1`. The request path is appended; a base ending in `/v1` absorbs the request path's leading `/v1`. An entry has either `url` or `service`.",
    ),
    service: ServiceReferenceSchema.optional().describe(
      "A Kubernetes Service instead of a `url`: every ready pod behind it is a member of the pool, found through the Service's EndpointSlices and followed as pods come and go. Each member is picked, limited, timed and ejected as a provider of its own, named `<entry name>/<pod name>`; metrics count the entry as one provider. Not with `strategy: priority`.",
    ),
    name: NonEmptyString.max(LIMITS.nameLength, { error: `must be at most ${LIMITS.nameLength} characters` })
      .optional()
      .describe(
        `Identity of the provider in logs, metrics and the share controller (at most ${LIMITS.nameLength} characters). Default: the \`url\`, or the Service's name. Identities must be unique within a pool.`,
      ),
    weight: z
      .number()
      .positive()
      .default(1)
      .describe(
        "Relative share of traffic under `weighted_random` (a positive number; a `service:` entry's share is split evenly among its pods). Ignored by the other strategies.",
      ),
    ...upstreamFields('provider'),
  })
  .meta({
    id: 'Provider',
    title: 'Provider entry',
    ...kubernetesRules({
      rule: 'has(self.url) != has(self.service)',
      message: 'a provider entry has either `url` or `service`, exactly one of them',
    }),
    // The two forms of an entry, for editors; `checkTarget` gives the precise messages.
    anyOf: [
      { title: 'Provider at a URL', required: ['url'], not: { required: ['service'] } },
      { title: "A Service's pods", required: ['service'], not: { required: ['url'] } },
    ],
    description:
      'One upstream of a pool. Fields it does not set are inherited from the pool (the target) where the pool has them.',
  });

/** The target's fields; the exported `TargetSchema` adds the cross-field checks. */
const TargetObjectSchema = z.strictObject({
  url: UrlSchema.optional().describe(
    "Base URL of the upstream (http or https), for example `http://127.0.0.1:8000/v1`. The request path is appended; a base ending in `/v1` absorbs the request path's leading `/v1`. Required on a single-provider target; a pool sets it on each provider entry instead.",
  ),
  providers: z
    .array(ProviderSchema)
    .min(1)
    .max(LIMITS.providers, { error: `a pool has at most ${LIMITS.providers} providers` })
    .optional()
    .describe(
      `Provider entries, in definition order (the order \`priority\` tries them; the first is the preferred provider), at most ${LIMITS.providers}. Makes the target a pool.`,
    ),
  strategy: z
    .enum(STRATEGIES)
    .optional()
    // Documented, not applied: a single-provider target must be able to leave it out.
    .meta({ default: DEFAULT_STRATEGY })
    .describe(
      "How a pool picks the provider of the first attempt: `weighted_random` picks at random in proportion to `weight`; `priority` prefers the first entry and tries the others in order; `round_robin` takes the providers in turn; `least_request` picks the less busy of two providers drawn at random (the gateway's own in-flight attempts); `prefix_affinity` sends a session or a conversation to the provider that served it before (the likeliest to hold its prompt's prefix in cache) under a bound on the load (`affinity`). Failover goes on in the strategy's order. Pools only.",
    ),
  affinity: AffinitySchema.optional().describe(
    'Settings of `strategy: prefix_affinity`. Absent: the defaults. Only with that strategy.',
  ),
  fallback: FallbackSchema.optional().describe(
    'Retry and failover across the providers. Pools only. Absent: a single attempt per request.',
  ),
  outlier_detection: OutlierDetectionSchema.optional().describe(
    'Ejects a failing provider from selection for a while. Pools only. Absent: off.',
  ),
  keys: z
    .array(secretOr(ClientKeyLiteralSchema))
    .optional()
    .describe(
      'Client keys accepted for this target: literal bearer tokens, names of `auth.key_definitions` entries, or [secret references](#secret-reference) (whose value is always a token). When present (even empty) the target requires `Authorization: Bearer <token>` (or `x-api-key: <token>`, as Anthropic clients send it) and also accepts the global keys. Absent: no client authentication.',
    ),
  ...upstreamFields('target'),
  usage: UsageSchema.optional().describe(
    'Usage reading for this target; overrides the global `usage` field by field.',
  ),
  token_limit: TokenLimitSchema.optional().describe(
    'Token budget of the whole target, shared by all clients. Absent: no token limit.',
  ),
  budget: BudgetSchema.optional().describe(
    'Spend budget of the whole target, shared by all clients. Every provider of the target needs prices. Absent: none.',
  ),
  inflight_limit: NonNegativeInt.optional().describe(
    'Default cap of realtime in-flight requests per account (the `account` label of the key) on this alias. Absent: uncapped. Read from the alias default pool; not valid on a request-class pool `alias:class`.',
  ),
  account_inflight_limits: z
    .record(NonEmptyString, NonNegativeInt)
    .optional()
    .describe(
      'Per-account overrides of `inflight_limit` (account label -> cap). Not valid on a request-class pool `alias:class`.',
    ),
  batch_inflight_limit: NonNegativeInt.optional().describe(
    'Cap of in-flight dispatched (batch) requests on this alias, one count for all tenants. Absent: uncapped. Loaded always; enforced only with `--enforce-batch-inflight` or a limiter plugged in by an embedding program. Not valid on a request-class pool `alias:class`.',
  ),
});

/**
 * The rules of `checkTarget` that CEL can state within the API server's cost budget, for the API
 * server (`gateway crd`). Not among them: the `aimd` rules (`aimd` is `false` or an object, a field
 * CEL cannot see) and unique provider identities (comparing every pair of a pool in every target
 * costs more than the budget allows).
 */
const TARGET_KUBERNETES_RULES = kubernetesRules(
  {
    rule: 'has(self.url) || has(self.providers)',
    message: 'a target needs either `url` (single provider) or `providers` (pool)',
  },
  {
    rule: '!has(self.url) || !has(self.providers)',
    fieldPath: '.url',
    message:
      'a target has either `url` (single provider) or `providers` (pool), not both: set the url on a provider entry',
  },
  ...(['strategy', 'fallback', 'outlier_detection', 'affinity'] as const).map((field) => ({
    rule: `has(self.providers) || !has(self.${field})`,
    fieldPath: `.${field}`,
    message: `\`${field}\` only applies to a pool: use \`providers\` instead of \`url\` to balance or fail over`,
  })),
  {
    rule: "!has(self.affinity) || (has(self.strategy) && self.strategy == 'prefix_affinity')",
    fieldPath: '.affinity',
    message: '`affinity` configures `strategy: prefix_affinity` and is not valid with another strategy',
  },
  {
    rule: '!has(self.providers) || !has(self.propagate_trace_context)',
    fieldPath: '.propagate_trace_context',
    message:
      'not valid on the top level of a pool that uses `providers`: set `propagate_trace_context` on each provider entry',
  },
  {
    rule: "!has(self.providers) || !has(self.strategy) || self.strategy != 'priority' || !self.providers.exists(p, has(p.service))",
    fieldPath: '.strategy',
    message:
      'a pool with a `service:` entry picks among its pods as peers: set `strategy` to `weighted_random`, `round_robin`, `least_request` or `prefix_affinity`, not `priority`',
  },
  {
    rule: '!has(self.providers) || !has(self.fallback) || !has(self.fallback.max_attempts) || self.providers.exists(p, has(p.service)) || self.fallback.max_attempts <= size(self.providers)',
    fieldPath: '.fallback.max_attempts',
    message:
      'more attempts than the pool has providers: each attempt goes to a different provider, so `max_attempts` is at most the number of `providers`',
  },
);

export const TargetSchema = TargetObjectSchema.superRefine((target, ctx) => checkTarget(target, ctx)).meta({
  id: 'Target',
  title: 'Target',
  ...TARGET_KUBERNETES_RULES,
  // The two forms of a target, for editors; `checkTarget` gives the precise messages.
  anyOf: [
    {
      title: 'Single-provider target',
      required: ['url'],
      not: { anyOf: [{ required: ['providers'] }, { required: ['strategy'] }, { required: ['fallback'] }] },
    },
    {
      title: 'Pool',
      required: ['providers'],
      not: { anyOf: [{ required: ['url'] }, { required: ['propagate_trace_context'] }] },
    },
  ],
  description:
    'What a model alias routes to: a single-provider target (`url`) or a pool (`providers`), with its authentication, limits and response handling.',
});

export type TargetConfig = z.output<typeof TargetObjectSchema>;
export type ProviderConfig = z.output<typeof ProviderSchema>;
/** A validated pool: the schema guarantees `providers` and forbids `url` and `propagate_trace_context`. */
export type PoolTarget = TargetConfig & {
  providers: ProviderConfig[];
  url?: undefined;
  propagate_trace_context?: undefined;
};
/** A validated single-provider target: `url` is set and the pool-only fields are absent. */
export type SingleProviderTarget = TargetConfig & {
  url: string;
  providers?: undefined;
  strategy?: undefined;
  fallback?: undefined;
};

export function isPoolTarget<T extends Pick<TargetConfig, 'providers'>>(
  target: T,
): target is T & Pick<PoolTarget, 'providers'> {
  return target.providers !== undefined;
}

/** Identity of a provider entry in logs, metrics and AIMD state. */
export function providerIdentity(provider: Pick<ProviderConfig, 'name' | 'url' | 'service'>): string {
  return provider.name ?? provider.url ?? provider.service!.name;
}

/**
 * Whether the share controller runs on a target as configured (spec 3.1): a `priority` pool with
 * fallback enabled, more than one provider, and `aimd` not `false`. The only place this is decided:
 * the deadline check below, the controller registry (`describePool`) and `gateway validate` ask it.
 * It lives in config/ rather than balance/ because the schema's checks need it and config/ must not
 * import balance/.
 */
export function aimdApplies(target: Pick<TargetConfig, 'providers' | 'strategy' | 'fallback'>): boolean {
  return (
    target.providers !== undefined &&
    target.providers.length > 1 &&
    target.strategy === 'priority' &&
    target.fallback !== undefined &&
    target.fallback.enabled &&
    target.fallback.aimd !== false
  );
}

function checkTarget(target: TargetConfig, ctx: z.RefinementCtx): void {
  const providers = target.providers;
  if (providers === undefined) {
    if (target.url === undefined)
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'a target needs either `url` (single provider) or `providers` (pool)',
      });
    for (const field of ['strategy', 'fallback', 'outlier_detection', 'affinity'] as const)
      if (target[field] !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `\`${field}\` only applies to a pool: use \`providers\` instead of \`url\` to balance or fail over`,
        });
    return;
  }
  if (target.url !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['url'],
      message:
        'a target has either `url` (single provider) or `providers` (pool), not both: set the url on a provider entry',
    });
  if (target.propagate_trace_context !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['propagate_trace_context'],
      message:
        'not valid on the top level of a pool that uses `providers`: set `propagate_trace_context` on each provider entry',
    });
  if (target.affinity !== undefined && target.strategy !== 'prefix_affinity')
    ctx.addIssue({
      code: 'custom',
      path: ['affinity'],
      message: `\`affinity\` configures \`strategy: prefix_affinity\`; this pool uses \`${target.strategy ?? DEFAULT_STRATEGY}\``,
    });

  const strategy = target.strategy ?? DEFAULT_STRATEGY;
  let services = 0;
  providers.forEach((provider, index) => {
    if ((provider.url === undefined) === (provider.service === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['providers', index],
        message:
          provider.url === undefined
            ? 'a provider entry needs either `url` (one upstream) or `service` (the pods of a Kubernetes Service)'
            : 'a provider entry has either `url` or `service`, not both',
      });
    if (provider.service === undefined) return;
    services++;
    if (!SERVICE_STRATEGIES.has(strategy))
      ctx.addIssue({
        code: 'custom',
        path: ['providers', index, 'service'],
        message: `a Service's pods are peers, none preferred: \`strategy: ${strategy}\` cannot pick among them; use \`weighted_random\`, \`round_robin\`, \`least_request\` or \`prefix_affinity\``,
      });
  });

  const identities = new Map<string, number>();
  providers.forEach((provider, index) => {
    if (provider.url === undefined && provider.service === undefined) return;
    const identity = providerIdentity(provider);
    const earlier = identities.get(identity);
    if (earlier === undefined) identities.set(identity, index);
    else
      ctx.addIssue({
        code: 'custom',
        path: [
          'providers',
          index,
          provider.name !== undefined ? 'name' : provider.url !== undefined ? 'url' : 'service',
        ],
        message: `provider identity \`${identity}\` is already used by providers[${earlier}]: give each entry a distinct \`name\``,
      });
  });

  // A Service's members are named `<entry>/<pod>`: another entry named so would share their state.
  providers.forEach((provider, index) => {
    if (provider.service === undefined) return;
    const prefix = `${providerIdentity(provider)}/`;
    providers.forEach((other, at) => {
      if (other.url === undefined && other.service === undefined) return;
      if (providerIdentity(other).startsWith(prefix))
        ctx.addIssue({
          code: 'custom',
          path: ['providers', at, other.name !== undefined ? 'name' : 'url'],
          message: `\`${providerIdentity(other)}\` could be the name of a pod of providers[${index}] (its members are named \`${prefix}<pod>\`): choose a name that does not start with \`${prefix}\``,
        });
    });
  });

  const fallback = target.fallback;
  if (fallback === undefined) return;
  // A Service's entry has as many members as it has ready pods: the attempts are bounded when picked.
  if (fallback.max_attempts !== undefined && services === 0 && fallback.max_attempts > providers.length)
    ctx.addIssue({
      code: 'custom',
      path: ['fallback', 'max_attempts'],
      message: `${fallback.max_attempts} attempts exceed the ${providers.length} provider(s) of the pool: each attempt goes to a different provider`,
    });
  if (fallback.aimd !== undefined && fallback.aimd !== false && strategy !== 'priority')
    ctx.addIssue({
      code: 'custom',
      path: ['fallback', 'aimd'],
      message: `the share controller only runs on \`strategy: priority\` pools (this pool uses \`${strategy}\`): set the strategy or remove \`aimd\``,
    });
  const deadline = fallback.first_token_timeout_ms;
  if (deadline !== undefined && aimdApplies(target)) {
    const overrides = fallback.aimd === false ? undefined : fallback.aimd;
    const budget = resolveAimd(overrides).latency_budget_ms;
    if (deadline < budget)
      ctx.addIssue({
        code: 'custom',
        path: ['fallback', 'first_token_timeout_ms'],
        message: `${deadline} ms is below the share controller's latency budget (${budget} ms${overrides?.latency_budget_ms === undefined ? ', the default' : ''}): an armed deadline must be at least \`aimd.latency_budget_ms\``,
      });
  }
}
