/**
 * The gateway configuration file as one zod schema (gateway spec 2, DESIGN 3 and 6). It is the single
 * source of truth: the TypeScript types below are inferred from it, `load.ts` validates with it,
 * `json-schema.ts` and `docs.ts` generate the JSON Schema and the field reference from it, so every
 * `.describe()` text here is user documentation.
 *
 * Every object is strict (an unknown field is an error, so a typo never silently disables a
 * setting). Rules that span several fields are `superRefine` checks placed on the smallest object
 * that holds all the fields involved, so one broken target does not hide the rule violations of
 * another. zod runs a refinement only when the object's fields parsed (an unknown key does not stop
 * it; `issues.ts` holds back what it then reports), so a config with a type error reports that
 * first and its cross-field errors once the types are fixed.
 */
import { z } from 'zod';
import { UNSUPPORTED_PARAM_NAMES } from '../strict/unsupported-params-catalog.js';
import { closestMatch } from './suggest.js';

// ---------------------------------------------------------------------------------------------
// Constants and small helpers
// ---------------------------------------------------------------------------------------------

/** The seven reasoning efforts clients may send, in increasing order (spec 2.6). */
export const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORTS)[number];

export const STRATEGIES = ['weighted_random', 'priority'] as const;
export type Strategy = (typeof STRATEGIES)[number];
/** A pool without `strategy` balances at random by weight. */
export const DEFAULT_STRATEGY: Strategy = 'weighted_random';

/** The request surfaces a reasoning translation can be configured for (DESIGN 6). */
export const REASONING_SURFACES = ['chat_completions', 'responses'] as const;
export type ReasoningSurfaceName = (typeof REASONING_SURFACES)[number];

export const DEFAULT_UPSTREAM_AUTH_HEADER_NAME = 'Authorization';
export const DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX = 'Bearer ';

/** Resolved share-controller parameters: every AIMD field with a value. */
export interface AimdParameters {
  readonly latency_budget_ms: number;
  readonly breach_rate_target: number;
  readonly recovery_breach_rate: number;
  readonly window_samples: number;
  readonly min_samples: number;
  readonly share_step: number;
  readonly share_decay: number;
  readonly share_floor: number;
  readonly dwell_ms: number;
  readonly idle_recovery_ms: number;
  readonly overload_statuses: readonly number[];
}

/**
 * Share-controller defaults (DESIGN 6). They are applied when the controller is built, never baked
 * into the parsed config, so the runtime can still tell an explicit override from a default (spec
 * 3.1: a reload keeps the controller state only when the parameters are unchanged).
 */
export const AIMD_DEFAULTS: AimdParameters = Object.freeze({
  latency_budget_ms: 2000,
  breach_rate_target: 0.1,
  recovery_breach_rate: 0.02,
  window_samples: 100,
  min_samples: 20,
  share_step: 0.05,
  share_decay: 0.5,
  share_floor: 0.05,
  dwell_ms: 10_000,
  idle_recovery_ms: 30_000,
  overload_statuses: Object.freeze([429, 503, 529]),
});

/** HTTP token (RFC 9110 5.6.2): what a header name may contain. */
const HEADER_NAME_PATTERN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value must not smuggle a second header line. */
const HEADER_VALUE_PATTERN = /^[^\r\n\0]*$/;
/** Headers whose values the proxy computes itself; overriding them would corrupt the framing. */
const MANAGED_HEADERS = new Set([
  'connection',
  'content-length',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
/**
 * JSON-pointer-like path with one or more non-empty segments (`~0` = `~`, `~1` = `/`). Nested paths
 * such as `/chat_template_kwargs/enable_thinking` create the intermediate objects.
 */
const TARGET_PATH_PATTERN = /^(\/([^~/]|~[01])+)+$/;
/** Segments that would reach an object prototype when a write is applied with plain assignment. */
const FORBIDDEN_PATH_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);
/** An alias is sent as a model name and used as a metric label: no whitespace or control characters. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const ALIAS_PATTERN = /^[^\s\u0000-\u001f\u007f]+$/;
/** A POSIX environment variable name: what a shell or a container spec can set. */
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

const list = (items: readonly (string | number)[]): string => items.map((i) => `\`${i}\``).join(', ');

/** Reports every repeated item of an array at the index of the repetition. */
function uniqueItems<T extends string | number>(what: string) {
  return (items: readonly T[], ctx: z.RefinementCtx): void => {
    const first = new Map<T, number>();
    items.forEach((item, index) => {
      const earlier = first.get(item);
      if (earlier === undefined) first.set(item, index);
      else
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: `duplicate ${what} \`${item}\` (already listed at index ${earlier})`,
        });
    });
  };
}

/** Marks a field that exists elsewhere in the file, so its misplaced use gets a pointed message. */
const globalOnly = () =>
  z
    .never({
      error:
        '`strict_mode` is global only: set it at the root of the config, not inside a target or provider entry',
    })
    .optional()
    .describe('Not valid here: strict mode is global. Set `strict_mode` at the root of the config.');

// ---------------------------------------------------------------------------------------------
// Leaf types
// ---------------------------------------------------------------------------------------------

const UrlSchema = z
  .url({
    protocol: /^https?$/,
    // Only the format failure gets this text; a value of the wrong type keeps the generic message.
    error: (issue) =>
      issue.code === 'invalid_format' ? 'must be an absolute http:// or https:// URL' : undefined,
  })
  .refine((url) => {
    const parsed = URL.parse(url);
    return parsed === null || (parsed.search === '' && parsed.hash === '');
  }, 'must not carry a query string or fragment: it is a base URL the request path and query are appended to');

const NonEmptyString = z.string().min(1, { error: 'must not be empty' });

const HeaderNameSchema = z
  .string()
  .regex(HEADER_NAME_PATTERN, {
    error: "must be a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
  })
  .refine((name) => !MANAGED_HEADERS.has(name.toLowerCase()), {
    error: 'names a header the proxy manages itself (framing or connection header); it cannot be set',
  });

const HeaderValueSchema = z
  .string()
  .regex(HEADER_VALUE_PATTERN, { error: 'must not contain line breaks or NUL characters' });

/** HTTP status code, or a one- or two-digit prefix wildcard (`5` = any 5xx, `50` = 500-509). */
const StatusMatcherSchema = z
  .int()
  .refine((v) => (v >= 1 && v <= 5) || (v >= 10 && v <= 59) || (v >= 100 && v <= 599), {
    error:
      'must be an HTTP status code (100-599) or a prefix wildcard: one digit 1-5 (`5` = any 5xx) or two digits 10-59 (`50` = 500-509)',
  })
  .meta({
    anyOf: [
      { minimum: 1, maximum: 5 },
      { minimum: 10, maximum: 59 },
      { minimum: 100, maximum: 599 },
    ],
  });

const ErrorStatusSchema = z
  .int()
  .refine((v) => v >= 400 && v <= 599, { error: 'must be an HTTP error status code (400-599)' })
  .meta({ minimum: 400, maximum: 599 });

export const EffortSchema = z.enum(EFFORTS);

const NonNegativeInt = z.int().min(0, { error: 'must be a non-negative integer' });

// ---------------------------------------------------------------------------------------------
// Secrets: a literal value or a reference resolved when the configuration is loaded
// ---------------------------------------------------------------------------------------------

/**
 * Where a secret is read from instead of being written into the file. `secrets.ts` resolves it at
 * every load (startup, `gateway validate`, each reload), never on the request path.
 */
export const SecretReferenceSchema = z
  .strictObject({
    from_file: z
      .string()
      .regex(/^[/]/, { error: 'must be an absolute path (starting with `/`)' })
      .optional()
      .describe(
        'Absolute path of a file holding the value, for example a key of a Kubernetes Secret mounted as a volume (`/etc/gateway-keys/team-a`). The content is used as is, except that one trailing newline (`\\n` or `\\r\\n`) is removed. The file is watched like the configuration file: when it changes (including a Secret volume update) the configuration is reloaded, unless `--watch false`.',
      ),
    from_env: z
      .string()
      .regex(ENV_NAME_PATTERN, {
        error: 'must be an environment variable name (letters, digits and `_`, not starting with a digit)',
      })
      .optional()
      .describe(
        'Name of an environment variable of the gateway process holding the value (one trailing newline is removed, as for a file). The environment does not change while the process runs: rotating such a key takes a restart; use `from_file` to rotate without one.',
      ),
  })
  .superRefine((reference, ctx) => {
    const given = (['from_file', 'from_env'] as const).filter((field) => reference[field] !== undefined);
    if (given.length === 0)
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'a reference needs `from_file` (a file path) or `from_env` (an environment variable name)',
      });
    else if (given.length > 1)
      ctx.addIssue({
        code: 'custom',
        path: ['from_env'],
        message: 'a reference has either `from_file` or `from_env`, not both',
      });
  })
  .meta({
    id: 'SecretReference',
    title: 'Secret reference',
    // The two forms, for editors; the refinement above gives the precise messages.
    anyOf: [
      { title: 'File reference', required: ['from_file'], not: { anyOf: [{ required: ['from_env'] }] } },
      {
        title: 'Environment reference',
        required: ['from_env'],
        not: { anyOf: [{ required: ['from_file'] }] },
      },
    ],
    description:
      'A key kept out of the configuration file. Every key field (`auth.key_definitions.<name>.key`, `auth.global_keys[]`, `keys[]` of a target, `gateway_key` of a target or provider entry) takes either the literal value or this object. It is resolved whenever the configuration is loaded (startup, `gateway validate`, every reload); the resolved value must pass the same checks as a literal in that field. A reference that cannot be resolved (missing or empty file, unset variable) makes the configuration invalid: refused at startup, and on reload the last good configuration keeps serving. In `keys` and `global_keys` a referenced value is always a bearer token, never the name of a key definition. Errors name the field and the file or variable, never the value.',
  });
export type SecretReference = z.output<typeof SecretReferenceSchema>;

/** A secret field: the literal value, checked by `literal`, or a reference to resolve at load time. */
const secretOr = (literal: z.ZodString) => z.union([literal, SecretReferenceSchema]);

/** A client bearer token as written literally (a `keys` entry may also name a key definition). */
const ClientKeyLiteralSchema = NonEmptyString;

/**
 * An upstream credential: it becomes a header value, so line breaks or NUL would make every request
 * fail at send time. `secrets.ts` checks a resolved value with this same schema.
 */
export const UpstreamKeySchema = HeaderValueSchema.min(1, { error: 'must not be empty' });

/**
 * The token-ownership rule (a bearer token belongs to one key, or its limits and account would
 * depend on lookup order), with the tokens given as plain values: `undefined` for a reference not
 * resolved yet. The schema checks the literals; `secrets.ts` checks again once references resolved.
 */
export function tokenOwnershipIssues(
  globalKeys: readonly (string | undefined)[],
  definitionKeys: readonly (readonly [name: string, key: string | undefined])[],
): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const owner = new Map<string, string>();
  globalKeys.forEach((key, index) => {
    if (key === undefined) return;
    const earlier = owner.get(key);
    if (earlier !== undefined)
      issues.push({ path: ['global_keys', index], message: `duplicate key (same token as ${earlier})` });
    else owner.set(key, `global_keys[${index}]`);
  });
  for (const [name, key] of definitionKeys) {
    if (key === undefined) continue;
    const earlier = owner.get(key);
    if (earlier !== undefined)
      issues.push({
        path: ['key_definitions', name, 'key'],
        message: `the same token is already used by ${earlier}; each token must belong to one key`,
      });
    else owner.set(key, `key_definitions.${name}`);
  }
  return issues;
}

/** The literal of a secret field, or undefined for a reference. */
const literalOf = (value: string | SecretReference): string | undefined =>
  typeof value === 'string' ? value : undefined;

// ---------------------------------------------------------------------------------------------
// Limits (spec 2.3)
// ---------------------------------------------------------------------------------------------

export const RateLimitSchema = z
  .strictObject({
    requests_per_second: z
      .number()
      .positive()
      .describe('Token refill rate in requests per second (a positive number; fractions allowed).'),
    burst_size: z
      .int()
      .min(1)
      .describe('Bucket capacity: how many requests may pass at once after an idle period (integer >= 1).'),
  })
  .meta({
    id: 'RateLimit',
    title: 'Rate limit',
    description: 'A token bucket. An empty bucket answers 429 with code `rate_limit`.',
  });

export const ConcurrencyLimitSchema = z
  .strictObject({
    max_concurrent_requests: z
      .int()
      .min(1)
      .describe(
        'Requests allowed at the same time (integer >= 1); a permit is held until the request completes.',
      ),
  })
  .meta({
    id: 'ConcurrencyLimit',
    title: 'Concurrency limit',
    description:
      'A cap on simultaneous requests. When no permit is left the request gets 429 with code `concurrency_limit_exceeded`.',
  });

// ---------------------------------------------------------------------------------------------
// Authentication (spec 2.4)
// ---------------------------------------------------------------------------------------------

export const KeyDefinitionSchema = z
  .strictObject({
    key: secretOr(ClientKeyLiteralSchema).describe(
      'The bearer token clients send (`Authorization: Bearer <key>`): the token itself, or a [secret reference](#secret-reference) (`{ from_file: /path }` or `{ from_env: NAME }`).',
    ),
    rate_limit: RateLimitSchema.optional().describe(
      "Token bucket for this key alone; checked before the target's bucket, and both must pass.",
    ),
    concurrency_limit: ConcurrencyLimitSchema.optional().describe(
      "Concurrency cap for this key alone; checked in addition to the target's cap.",
    ),
    labels: z
      .record(NonEmptyString, z.string())
      .optional()
      .describe(
        'Free-form labels (string -> string). The `account` label names the account the key belongs to: all keys with the same account share one in-flight count (`inflight_limit`). Keys without an `account` label are not counted against in-flight limits.',
      ),
  })
  .meta({
    id: 'KeyDefinition',
    title: 'Key definition',
    description: 'A named client key with optional limits and labels.',
  });

export const AuthSchema = z
  .strictObject({
    global_keys: z
      .array(secretOr(ClientKeyLiteralSchema))
      .optional()
      .describe(
        'Bearer tokens accepted on every target that requires authentication (a target with `keys`). Each entry is a token (or the name of a key definition) or a [secret reference](#secret-reference), whose value is always a token.',
      ),
    key_definitions: z
      .record(NonEmptyString, KeyDefinitionSchema)
      .optional()
      .describe(
        "Named keys, name -> definition. A target's `keys` entry naming a definition accepts the definition's `key`, with its limits and labels.",
      ),
  })
  .superRefine((auth, ctx) => {
    const issues = tokenOwnershipIssues(
      (auth.global_keys ?? []).map(literalOf),
      Object.entries(auth.key_definitions ?? {}).map(([name, definition]) => [
        name,
        literalOf(definition.key),
      ]),
    );
    for (const issue of issues) ctx.addIssue({ code: 'custom', ...issue });
  })
  .meta({
    id: 'Auth',
    title: 'Authentication',
    description: 'Global authentication: keys accepted on every keyed target, and named key definitions.',
  });

// ---------------------------------------------------------------------------------------------
// Reasoning translation (spec 2.6)
// ---------------------------------------------------------------------------------------------

export const ReasoningWriteSchema = z
  .strictObject({
    target_path: z
      .string()
      .regex(TARGET_PATH_PATTERN, {
        error:
          'must be a path of the form `/name` or `/a/b` (JSON Pointer: non-empty segments, `~0` for `~`, `~1` for `/`)',
      })
      .refine((path) => !path.split('/').some((segment) => FORBIDDEN_PATH_SEGMENTS.has(segment)), {
        error: 'must not contain the segments `__proto__`, `constructor` or `prototype`',
      })
      .describe(
        'Where the value is written in the upstream request body: a JSON Pointer such as `/reasoning_effort` or `/chat_template_kwargs/enable_thinking`. Missing intermediate objects are created; an existing value is replaced.',
      ),
    values: z
      .partialRecord(EffortSchema, z.union([z.string(), z.number(), z.boolean()]))
      .refine((values) => Object.keys(values).length > 0, {
        error:
          'must map at least one effort; list efforts the upstream cannot serve in `unsupported_efforts`',
      })
      .describe(
        'Effort -> value written at `target_path` (string, number or boolean). A number is a token budget: the request must then carry a completion-token limit above it.',
      ),
  })
  .meta({
    id: 'ReasoningWrite',
    title: 'Reasoning write',
    description: 'One upstream field written for each supported effort.',
  });

export const ReasoningSurfaceSchema = z
  .strictObject({
    writes: z
      .array(ReasoningWriteSchema)
      .describe(
        'Fields written into the upstream body for a client effort. Every write maps the same set of efforts. An empty list (with all seven efforts unsupported) refuses every effort.',
      ),
    unsupported_efforts: z
      .array(EffortSchema)
      .meta({ uniqueItems: true })
      .describe(
        'Efforts this upstream cannot serve; a request asking for one is refused with 400 `unsupported_reasoning_effort`. Together with the mapped efforts it names all seven efforts exactly once.',
      ),
  })
  .superRefine((surface, ctx) => {
    const mappedBy = surface.writes.map((write) => Object.keys(write.values) as Effort[]);
    const reference = new Set(mappedBy[0] ?? []);
    // Rule 1: every write maps the same efforts, compared against the first write.
    mappedBy.slice(1).forEach((efforts, offset) => {
      const index = offset + 1;
      for (const effort of efforts)
        if (!reference.has(effort))
          ctx.addIssue({
            code: 'custom',
            path: ['writes', index, 'values', effort],
            message: `maps \`${effort}\`, which writes[0] does not: every write of a surface must map the same efforts`,
          });
      const missing = [...reference].filter((effort) => !efforts.includes(effort));
      if (missing.length > 0)
        ctx.addIssue({
          code: 'custom',
          path: ['writes', index, 'values'],
          message: `does not map ${list(missing)}, which writes[0] maps: every write of a surface must map the same efforts`,
        });
    });
    // Writes must not overlap, or one would silently overwrite (part of) the other.
    const paths = surface.writes.map((write) => write.target_path);
    paths.forEach((path, index) => {
      const clash = paths.findIndex(
        (other, j) =>
          j < index && (other === path || other.startsWith(`${path}/`) || path.startsWith(`${other}/`)),
      );
      if (clash >= 0)
        ctx.addIssue({
          code: 'custom',
          path: ['writes', index, 'target_path'],
          message:
            paths[clash] === path
              ? `duplicate target_path \`${path}\` (also writes[${clash}])`
              : `\`${path}\` overlaps writes[${clash}] \`${paths[clash]}\`: one write would overwrite the other`,
        });
    });
    // Rule 2: mapped and unsupported efforts are disjoint and together name all seven.
    const mapped = new Set(mappedBy.flat());
    const seen = new Map<Effort, number>();
    surface.unsupported_efforts.forEach((effort, index) => {
      const earlier = seen.get(effort);
      if (earlier !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['unsupported_efforts', index],
          message: `duplicate effort \`${effort}\` (already listed at index ${earlier})`,
        });
      else seen.set(effort, index);
      if (mapped.has(effort))
        ctx.addIssue({
          code: 'custom',
          path: ['unsupported_efforts', index],
          message: `\`${effort}\` is mapped by the writes and listed as unsupported: an effort is one or the other`,
        });
    });
    const uncovered = EFFORTS.filter((effort) => !mapped.has(effort) && !seen.has(effort));
    if (uncovered.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['unsupported_efforts'],
        message: `${list(uncovered)} ${uncovered.length === 1 ? 'is' : 'are'} neither mapped by the writes nor listed as unsupported: together they must name all seven efforts (${EFFORTS.join(', ')})`,
      });
  })
  .meta({
    id: 'ReasoningSurface',
    title: 'Reasoning surface',
    description:
      'How one request surface translates the client effort: the fields written upstream and the efforts refused.',
  });

export const ReasoningTranslationSchema = z
  .strictObject({
    chat_completions: ReasoningSurfaceSchema.optional().describe(
      'Translation of `reasoning_effort` in chat-completions requests.',
    ),
    responses: ReasoningSurfaceSchema.optional().describe(
      'Translation of `reasoning.effort` in Responses requests.',
    ),
  })
  .refine(
    (translation) => translation.chat_completions !== undefined || translation.responses !== undefined,
    {
      error: 'configure at least one surface: `chat_completions` or `responses`',
    },
  )
  .meta({
    id: 'ReasoningTranslation',
    title: 'Reasoning translation',
    description:
      'Reasoning-effort translation per request surface. A client request without an effort injects nothing; a surface that is not configured forwards the effort unchanged.',
  });

// ---------------------------------------------------------------------------------------------
// Fallback and the share controller (spec 2.5, 3.1)
// ---------------------------------------------------------------------------------------------

// AIMD fields carry their default as documentation only (`meta`, not `.default()`): the parsed config
// keeps "not set" distinguishable from "set to the default value".
export const AimdOverridesSchema = z
  .strictObject({
    latency_budget_ms: z
      .int()
      .min(1)
      .optional()
      .describe(
        `First-token latency in milliseconds above which an attempt on the preferred provider counts as a breach.`,
      )
      .meta({ default: AIMD_DEFAULTS.latency_budget_ms }),
    breach_rate_target: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(`Breach rate (0-1) above which the share decreases.`)
      .meta({ default: AIMD_DEFAULTS.breach_rate_target }),
    recovery_breach_rate: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(`Breach rate (0-1) at or below which the share may increase; at most \`breach_rate_target\`.`)
      .meta({ default: AIMD_DEFAULTS.recovery_breach_rate }),
    window_samples: z
      .int()
      .min(1)
      .optional()
      .describe(`Completed outcomes over which the breach rate is measured.`)
      .meta({ default: AIMD_DEFAULTS.window_samples }),
    min_samples: z
      .int()
      .min(1)
      .optional()
      .describe(`Completed outcomes needed before a latency-driven decision; at most \`window_samples\`.`)
      .meta({ default: AIMD_DEFAULTS.min_samples }),
    share_step: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(`Additive share increase per healthy dwell or idle interval (0 < step <= 1).`)
      .meta({ default: AIMD_DEFAULTS.share_step }),
    share_decay: z
      .number()
      .gt(0)
      .lt(1)
      .optional()
      .describe(`Multiplicative decrease factor applied when the breach rate is exceeded (0 < decay < 1).`)
      .meta({ default: AIMD_DEFAULTS.share_decay }),
    share_floor: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(`Minimum share kept so the preferred provider stays measured (0 < floor <= 1).`)
      .meta({ default: AIMD_DEFAULTS.share_floor }),
    dwell_ms: z
      .int()
      .min(0)
      .optional()
      .describe(`Minimum milliseconds between adjustments, and healthy time required before an increase.`)
      .meta({ default: AIMD_DEFAULTS.dwell_ms }),
    idle_recovery_ms: z
      .int()
      .min(0)
      .optional()
      .describe(
        `Interval in milliseconds that earns one increase step while too few samples exist to judge; 0 disables.`,
      )
      .meta({ default: AIMD_DEFAULTS.idle_recovery_ms }),
    overload_statuses: z
      .array(ErrorStatusSchema)
      .superRefine(uniqueItems('status'))
      .meta({ uniqueItems: true })
      .optional()
      .describe(`Upstream error statuses (400-599) from the preferred provider that count as breaches.`)
      .meta({ default: AIMD_DEFAULTS.overload_statuses }),
  })
  .superRefine((overrides, ctx) => {
    // Relations hold between effective values, so an override is checked against the other field's
    // default too. The issue goes to a field the user actually set.
    const effective = resolveAimd(overrides);
    const ordered = (
      low: 'recovery_breach_rate' | 'min_samples',
      high: 'breach_rate_target' | 'window_samples',
    ): void => {
      if (effective[low] <= effective[high]) return;
      const source = (field: keyof AimdParameters): string =>
        overrides[field] === undefined
          ? `${String(effective[field])}, the default`
          : String(effective[field]);
      const at = overrides[low] !== undefined ? low : high;
      ctx.addIssue({
        code: 'custom',
        path: [at],
        message: `\`${low}\` (${source(low)}) must not exceed \`${high}\` (${source(high)})`,
      });
    };
    ordered('recovery_breach_rate', 'breach_rate_target');
    ordered('min_samples', 'window_samples');
  })
  .meta({
    id: 'AimdOverrides',
    title: 'AIMD overrides',
    description:
      'Overrides of the first-token share controller defaults. Fields left out keep their default. The controller runs on pools with `strategy: priority`, fallback enabled and more than one provider.',
  });

export const FallbackSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe('Turns failover on. `false` keeps the settings but makes a single attempt per request.'),
    on_status: z
      .array(StatusMatcherSchema)
      .superRefine(uniqueItems('status'))
      .meta({ uniqueItems: true })
      .default([])
      .describe(
        'Upstream response statuses that move on to the next provider. Entries are full codes (100-599) or prefix wildcards: one digit (`5` = any 5xx) or two digits (`50` = 500-509). Empty: no status triggers failover.',
      ),
    on_rate_limit: z
      .boolean()
      .default(false)
      .describe(
        "Move on to the next provider when a provider entry's own `rate_limit` or `concurrency_limit` refuses, instead of answering 429.",
      ),
    on_connection_error: z
      .boolean()
      .default(true)
      .describe(
        'Move on to the next provider when the upstream cannot be reached (connect error, reset before a response).',
      ),
    max_attempts: z
      .int()
      .min(1)
      .optional()
      .describe(
        'Attempts per request including the first; at most the number of providers, each attempt going to a different one. Default: the number of providers.',
      ),
    first_token_timeout_ms: z
      .int()
      .positive()
      .optional()
      .describe(
        'Failover deadline in milliseconds: an attempt whose first token has not arrived by then is abandoned and the next provider tried; on the last attempt the client gets 504 `first_token_timeout`. Absent: no deadline. Where the share controller runs it must be at least the effective `latency_budget_ms`.',
      ),
    aimd: z
      .union([z.literal(false), AimdOverridesSchema])
      .optional()
      .describe(
        'First-token share controller of a priority pool. Absent: defaults apply where the controller runs. `false`: the pool opts out. An object: overrides of single parameters (only valid with `strategy: priority`).',
      ),
  })
  .meta({
    id: 'Fallback',
    title: 'Fallback',
    description:
      'Retry and failover across the providers of a pool. Failover happens only before the first byte is sent to the client.',
  });

// ---------------------------------------------------------------------------------------------
// Provider entries and targets (spec 2.2, DESIGN 6)
// ---------------------------------------------------------------------------------------------

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
    strict_mode: globalOnly(),
  };
}

export const ProviderSchema = z
  .strictObject({
    url: UrlSchema.describe(
      "Base URL of this provider (http or https), for example `http://10.0.0.5:8000/v1`. The request path is appended; a base ending in `/v1` absorbs the request path's leading `/v1`.",
    ),
    name: NonEmptyString.optional().describe(
      'Identity of the provider in logs, metrics and the share controller. Default: the `url`. Identities must be unique within a pool.',
    ),
    weight: z
      .number()
      .positive()
      .default(1)
      .describe(
        'Relative share of traffic under `weighted_random` (a positive number). Ignored by `priority`.',
      ),
    ...upstreamFields('provider'),
  })
  .meta({
    id: 'Provider',
    title: 'Provider entry',
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
    .optional()
    .describe(
      'Provider entries, in definition order (the order `priority` tries them; the first is the preferred provider). Makes the target a pool.',
    ),
  strategy: z
    .enum(STRATEGIES)
    .optional()
    // Documented, not applied: a single-provider target must be able to leave it out.
    .meta({ default: DEFAULT_STRATEGY })
    .describe(
      'How a pool picks the provider of the first attempt: `weighted_random` picks at random in proportion to `weight`; `priority` prefers the first entry and tries the others in order. Pools only.',
    ),
  fallback: FallbackSchema.optional().describe(
    'Retry and failover across the providers. Pools only. Absent: a single attempt per request.',
  ),
  keys: z
    .array(secretOr(ClientKeyLiteralSchema))
    .optional()
    .describe(
      'Client keys accepted for this target: literal bearer tokens, names of `auth.key_definitions` entries, or [secret references](#secret-reference) (whose value is always a token). When present (even empty) the target requires `Authorization: Bearer <token>` and also accepts the global keys. Absent: no client authentication.',
    ),
  ...upstreamFields('target'),
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

export const TargetSchema = TargetObjectSchema.superRefine((target, ctx) => checkTarget(target, ctx)).meta({
  id: 'Target',
  title: 'Target',
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

// ---------------------------------------------------------------------------------------------
// Root, envelope
// ---------------------------------------------------------------------------------------------

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
    targets: TargetsSchema.describe(
      'Model alias -> target. A request selects the alias with its body `model` or the `model-override` header. A key `alias:class` whose `alias` is also a key is a request-class pool of that alias.',
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

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
/** The config as written in the file (defaults not yet applied). */
export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;
export type GatewayConfigEnvelope = z.output<typeof GatewayConfigEnvelopeSchema>;
export type EnvelopeMetadata = z.output<typeof EnvelopeMetadataSchema>;
export type AuthConfig = z.output<typeof AuthSchema>;
export type KeyDefinition = z.output<typeof KeyDefinitionSchema>;
export type TargetConfig = z.output<typeof TargetObjectSchema>;
export type ProviderConfig = z.output<typeof ProviderSchema>;
export type FallbackConfig = z.output<typeof FallbackSchema>;
export type AimdOverrides = z.output<typeof AimdOverridesSchema>;
export type RateLimitConfig = z.output<typeof RateLimitSchema>;
export type ConcurrencyLimitConfig = z.output<typeof ConcurrencyLimitSchema>;
export type ReasoningTranslation = z.output<typeof ReasoningTranslationSchema>;
export type ReasoningSurface = z.output<typeof ReasoningSurfaceSchema>;
export type ReasoningWrite = z.output<typeof ReasoningWriteSchema>;
export type UnsupportedParamsList = GatewayConfig['reject_unsupported_params'];

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

// ---------------------------------------------------------------------------------------------
// Resolution helpers shared with the runtime, so validation and behaviour cannot drift apart
// ---------------------------------------------------------------------------------------------

export function isPoolTarget<T extends Pick<TargetConfig, 'providers'>>(
  target: T,
): target is T & Pick<PoolTarget, 'providers'> {
  return target.providers !== undefined;
}

/** Identity of a provider entry in logs, metrics and AIMD state. */
export function providerIdentity(provider: Pick<ProviderConfig, 'name' | 'url'>): string {
  return provider.name ?? provider.url;
}

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

/** Every AIMD parameter: the override where given, else the default. */
export function resolveAimd(overrides: AimdOverrides | undefined): AimdParameters {
  return Object.freeze({
    latency_budget_ms: overrides?.latency_budget_ms ?? AIMD_DEFAULTS.latency_budget_ms,
    breach_rate_target: overrides?.breach_rate_target ?? AIMD_DEFAULTS.breach_rate_target,
    recovery_breach_rate: overrides?.recovery_breach_rate ?? AIMD_DEFAULTS.recovery_breach_rate,
    window_samples: overrides?.window_samples ?? AIMD_DEFAULTS.window_samples,
    min_samples: overrides?.min_samples ?? AIMD_DEFAULTS.min_samples,
    share_step: overrides?.share_step ?? AIMD_DEFAULTS.share_step,
    share_decay: overrides?.share_decay ?? AIMD_DEFAULTS.share_decay,
    share_floor: overrides?.share_floor ?? AIMD_DEFAULTS.share_floor,
    dwell_ms: overrides?.dwell_ms ?? AIMD_DEFAULTS.dwell_ms,
    idle_recovery_ms: overrides?.idle_recovery_ms ?? AIMD_DEFAULTS.idle_recovery_ms,
    overload_statuses: Object.freeze([...(overrides?.overload_statuses ?? AIMD_DEFAULTS.overload_statuses)]),
  });
}

/**
 * Whether the share controller runs on a target as configured (spec 3.1): a `priority` pool with
 * fallback enabled, more than one provider, and `aimd` not `false`.
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
    for (const field of ['strategy', 'fallback'] as const)
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

  const identities = new Map<string, number>();
  providers.forEach((provider, index) => {
    const identity = providerIdentity(provider);
    const earlier = identities.get(identity);
    if (earlier === undefined) identities.set(identity, index);
    else
      ctx.addIssue({
        code: 'custom',
        path: ['providers', index, provider.name !== undefined ? 'name' : 'url'],
        message: `provider identity \`${identity}\` is already used by providers[${earlier}]: give each entry a distinct \`name\``,
      });
  });

  const fallback = target.fallback;
  if (fallback === undefined) return;
  if (fallback.max_attempts !== undefined && fallback.max_attempts > providers.length)
    ctx.addIssue({
      code: 'custom',
      path: ['fallback', 'max_attempts'],
      message: `${fallback.max_attempts} attempts exceed the ${providers.length} provider(s) of the pool: each attempt goes to a different provider`,
    });
  const strategy = target.strategy ?? DEFAULT_STRATEGY;
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

/**
 * The cross-field rules in words, for the generated reference. Each line corresponds to a check
 * above; keep them together when a rule changes.
 */
export const CROSS_FIELD_RULES: readonly string[] = Object.freeze([
  '`strict_mode` is global: it is only valid at the root of the configuration, not inside a target or provider entry.',
  'A target has either `url` (single-provider target) or `providers` (pool), not both and not neither.',
  '`strategy` and `fallback` are only valid on a pool.',
  '`propagate_trace_context` is not valid on the top level of a pool; set it on each provider entry.',
  'Provider identities (`name`, or `url` when no name is given) are unique within a pool.',
  '`fallback.max_attempts` is at most the number of providers of the pool.',
  '`fallback.aimd` as an object is only valid on a pool with `strategy: priority`.',
  'Where the share controller runs (a `priority` pool with fallback enabled, more than one provider and `aimd` not `false`), `fallback.first_token_timeout_ms`, when set, is at least the effective `latency_budget_ms` (the override, else the default 2000).',
  'AIMD parameters are checked on their effective values (override, else default): `recovery_breach_rate` <= `breach_rate_target` and `min_samples` <= `window_samples`.',
  'Reasoning translation: every write of a surface maps the same set of efforts; the mapped efforts and `unsupported_efforts` are disjoint and together name all seven efforts (none, minimal, low, medium, high, xhigh, max); writes of a surface do not share or nest their `target_path`.',
  '`reject_unsupported_params` names must be in the unsupported-parameter catalog and appear once.',
  'A target key `alias:class` (split at the last colon) whose `alias` is also a target key is a request-class pool of that alias: `inflight_limit`, `account_inflight_limits` and `batch_inflight_limit` are read from the alias default pool and are errors on the request-class pool; request classes do not nest.',
  'A bearer token appears once across `auth.global_keys` and `auth.key_definitions`, compared after secret references are resolved.',
  'A secret reference has exactly one of `from_file` and `from_env`; its resolved value passes the checks of a literal in the same field (a `gateway_key` is a valid header value; a client key is non-empty and without whitespace).',
  '`response_headers` names are HTTP tokens, unique ignoring case, and not framing headers (`content-length`, `transfer-encoding`, `connection`, ...).',
]);
