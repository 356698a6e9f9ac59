/** The root of the configuration, the Kubernetes-style envelope around it, and the cross-field rules in words. */
import { z } from 'zod';
import { UNSUPPORTED_PARAM_NAMES } from '../../strict/unsupported-params-catalog.js';
import { closestMatch } from '../suggest.js';
import { ALIAS_PATTERN, LIMITS, uniqueItems } from './fields.js';
import { AuthSchema } from './auth.js';
import { TargetSchema, UsageSchema } from './target.js';
import { TimeoutsSchema } from './timeouts.js';

const TargetsSchema = z
  .record(
    z.string().regex(ALIAS_PATTERN, {
      error: 'an alias must be non-empty, without whitespace or control characters',
    }),
    TargetSchema,
  )
  .superRefine((targets, ctx) => {
    const keys = Object.keys(targets);
    if (keys.length === 0) {
      ctx.addIssue({ code: 'custom', path: [], message: 'must define at least one alias' });
      return;
    }
    if (keys.length > LIMITS.targets) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: `${keys.length} targets: at most ${LIMITS.targets} aliases and request-class pools`,
      });
      return;
    }
    for (const key of keys) {
      const requestClass = requestClassOf(key, keys);
      if (requestClass === undefined) continue;
      if (requestClass.requestClass === '') {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'the request class after `:` must not be empty',
        });
        continue;
      }
      if (requestClassOf(requestClass.alias, keys) !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `request-class pool of \`${requestClass.alias}\`, which is itself a request-class pool: classes do not nest`,
        });
        continue;
      }
      const target = targets[key]!;
      for (const field of ['inflight_limit', 'account_inflight_limits', 'batch_inflight_limit'] as const)
        if (target[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [key, field],
            message: `not valid on the request-class pool \`${key}\`: in-flight limits are read from the alias default pool; set it on \`targets.${requestClass.alias}\``,
          });
    }
  });

export const GatewayConfigSchema = z
  .strictObject({
    strict_mode: z
      .boolean()
      .default(false)
      .describe(
        'Strict mode for every target: requests are validated against the reference schemas, responses re-serialized and sanitized, errors standardized, unknown endpoints answered 404. Global only.',
      ),
    auth: AuthSchema.optional().describe('Global authentication.'),
    usage: UsageSchema.optional().describe('Usage reading for every target (a target may override it).'),
    timeouts: TimeoutsSchema.optional().describe(
      'Upstream timeouts of every target (a target or a provider entry may override them field by field).',
    ),
    rate_limit_headers: z
      .boolean()
      .default(true)
      .describe(
        "Responses of a request under a rate or token limit carry `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests` and the same three for tokens: the tightest of its key, target and account limits (capacity, what is left after this request, the time until full). They replace a provider's own `x-ratelimit-*` headers. `false` sends none and passes a provider's through.",
      ),
    targets: TargetsSchema.meta({ minProperties: 1, maxProperties: LIMITS.targets }).describe(
      `Model alias -> target (at most ${LIMITS.targets}). A request selects the alias with its body \`model\` or the \`model-override\` header. A key \`alias:class\` whose \`alias\` is also a key is a request-class pool of that alias.`,
    ),
    reject_unsupported_params: z
      .array(
        z.enum(UNSUPPORTED_PARAM_NAMES, {
          error: (issue) => {
            const name = typeof issue.input === 'string' ? issue.input : JSON.stringify(issue.input);
            const suggestion =
              typeof issue.input === 'string'
                ? closestMatch(issue.input, UNSUPPORTED_PARAM_NAMES)
                : undefined;
            return `\`${name}\` is not in the unsupported-parameter catalog${suggestion ? `; did you mean \`${suggestion}\`?` : ''}`;
          },
        }),
      )
      .superRefine(uniqueItems('parameter'))
      .meta({ uniqueItems: true })
      .default([])
      .describe(
        'Unsupported-parameter catalog names that make strict mode reject a chat-completions request carrying them (400 `unsupported_parameter`). Empty: observe only (matches are counted and logged). A name outside the catalog is an error.',
      ),
  })
  .meta({
    id: 'GatewayConfig',
    title: 'Gateway configuration',
    description: 'The bare configuration: global switches, authentication and the alias -> target map.',
  });

export const ENVELOPE_API_VERSION = 'llm-gateway.dev/v1alpha1';
export const ENVELOPE_KIND = 'GatewayConfig';

export const EnvelopeMetadataSchema = z
  .looseObject({
    name: z.string().optional().describe('Name of the configuration object.'),
    namespace: z.string().optional().describe('Namespace of the configuration object.'),
    labels: z.record(z.string(), z.string()).optional().describe('Labels (string -> string).'),
    annotations: z.record(z.string(), z.string()).optional().describe('Annotations (string -> string).'),
  })
  .meta({
    id: 'EnvelopeMetadata',
    title: 'Envelope metadata',
    description:
      'Kubernetes-style object metadata. Not interpreted by the gateway; other fields (uid, resourceVersion, ...) are allowed so an object exported from a cluster loads as is.',
  });

export const GatewayConfigEnvelopeSchema = z
  .strictObject({
    apiVersion: z
      .literal(ENVELOPE_API_VERSION, { error: `must be \`${ENVELOPE_API_VERSION}\`` })
      .describe(`API version of the envelope: \`${ENVELOPE_API_VERSION}\`.`),
    kind: z
      .literal(ENVELOPE_KIND, { error: `must be \`${ENVELOPE_KIND}\`` })
      .describe(`Always \`${ENVELOPE_KIND}\`.`),
    metadata: EnvelopeMetadataSchema.optional().describe('Object metadata; informational only.'),
    spec: GatewayConfigSchema.describe('The bare configuration.'),
  })
  .meta({
    id: 'GatewayConfigEnvelope',
    title: 'Gateway configuration envelope',
    description:
      'The configuration wrapped as a Kubernetes-style resource, so the same file can be a custom resource or a ConfigMap entry.',
  });

export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
/** The config as written in the file (defaults not yet applied). */
export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;
export type GatewayConfigEnvelope = z.output<typeof GatewayConfigEnvelopeSchema>;
export type EnvelopeMetadata = z.output<typeof EnvelopeMetadataSchema>;
export type UnsupportedParamsList = GatewayConfig['reject_unsupported_params'];

/**
 * A target key `alias:class` is a request-class pool of `alias` when `alias` is itself a target
 * key. The split is at the last colon, and a key whose prefix is not a target is an ordinary alias,
 * so model names that contain a colon (`llama3:8b`) stay usable as aliases.
 */
export function requestClassOf(
  key: string,
  targetKeys: Iterable<string>,
): { alias: string; requestClass: string } | undefined {
  const colon = key.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const alias = key.slice(0, colon);
  for (const candidate of targetKeys)
    if (candidate === alias) return { alias, requestClass: key.slice(colon + 1) };
  return undefined;
}

/** A cross-field rule in words, and whether the Kubernetes API server checks it in a GatewayConfig. */
export interface CrossFieldRule {
  readonly text: string;
  /**
   * True when the CustomResourceDefinition (`gateway crd`) makes the API server refuse a violation
   * at `kubectl apply` (a CEL rule, a set list, or the field left out so it is unknown); false when
   * only the gateway can check it (it then reports it in the object's status).
   */
  readonly apiServer: boolean;
}

/**
 * The cross-field rules in words, for the generated reference. Each line corresponds to a check
 * of one of the schema files (most of them `checkTarget` in target.ts); keep them together when a
 * rule changes.
 */
export const CROSS_FIELD_RULES: readonly CrossFieldRule[] = Object.freeze([
  {
    text: '`strict_mode` is global: it is only valid at the root of the configuration, not inside a target or provider entry.',
    apiServer: true,
  },
  {
    text: 'A target has either `url` (single-provider target) or `providers` (pool), not both and not neither.',
    apiServer: true,
  },
  {
    text: '`strategy`, `fallback`, `outlier_detection` and `affinity` are only valid on a pool.',
    apiServer: true,
  },
  { text: '`affinity` is only valid with `strategy: prefix_affinity`.', apiServer: true },
  {
    text: '`propagate_trace_context` is not valid on the top level of a pool; set it on each provider entry.',
    apiServer: true,
  },
  {
    text: 'Provider identities (`name`, or `url` when no name is given) are unique within a pool.',
    apiServer: false,
  },
  { text: '`fallback.max_attempts` is at most the number of providers of the pool.', apiServer: true },
  {
    text: '`fallback.aimd` as an object is only valid on a pool with `strategy: priority`.',
    apiServer: false,
  },
  {
    text: 'Where the share controller runs (a `priority` pool with fallback enabled, more than one provider and `aimd` not `false`), `fallback.first_token_timeout_ms`, when set, is at least the effective `latency_budget_ms` (the override, else the default 2000).',
    apiServer: false,
  },
  {
    text: 'AIMD parameters are checked on their effective values (override, else default): `recovery_breach_rate` <= `breach_rate_target` and `min_samples` <= `window_samples`.',
    apiServer: false,
  },
  {
    text: '`outlier_detection.max_ejection_ms` is at least `base_ejection_ms`, on their effective values (override, else default).',
    apiServer: true,
  },
  {
    text: 'Reasoning translation: every write of a surface maps the same set of efforts; the mapped efforts and `unsupported_efforts` are disjoint and together name all seven efforts (none, minimal, low, medium, high, xhigh, max); writes of a surface do not share or nest their `target_path`.',
    apiServer: false,
  },
  {
    text: '`reject_unsupported_params` names must be in the unsupported-parameter catalog and appear once.',
    apiServer: true,
  },
  {
    text: 'A target key `alias:class` (split at the last colon) whose `alias` is also a target key is a request-class pool of that alias: `inflight_limit`, `account_inflight_limits` and `batch_inflight_limit` are read from the alias default pool and are errors on the request-class pool; request classes do not nest.',
    apiServer: false,
  },
  {
    text: 'A bearer token appears once across `auth.global_keys` and `auth.key_definitions`, compared after secret references are resolved.',
    apiServer: false,
  },
  {
    text: 'A `budget` needs a price for every model it may be charged for: a target budget on each provider of the target; a key budget on each provider of every target that accepts the key; an account budget on each provider of every target that accepts one of its keys (`pricing` on the provider or on the pool).',
    apiServer: false,
  },
  { text: 'A `budget` with a rolling `window` takes no `time_zone`.', apiServer: true },
  {
    text: 'A secret reference has exactly one of `from_file` and `from_env`; its resolved value passes the checks of a literal in the same field (a `gateway_key` is a valid header value; a client key is non-empty and without whitespace).',
    apiServer: false,
  },
  {
    text: '`response_headers` names are HTTP tokens, unique ignoring case, and not framing headers (`content-length`, `transfer-encoding`, `connection`, ...).',
    apiServer: false,
  },
]);
