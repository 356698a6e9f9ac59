/** Field types and checks that several sections of the configuration use. */
import { z } from 'zod';
import { EFFORTS } from './constants.js';

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
export const TARGET_PATH_PATTERN = /^(\/([^~/]|~[01])+)+$/;
/** Segments that would reach an object prototype when a write is applied with plain assignment. */
export const FORBIDDEN_PATH_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);
/** An alias is sent as a model name and used as a metric label: no whitespace or control characters. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
export const ALIAS_PATTERN = /^[^\s\u0000-\u001f\u007f]+$/;
/** A POSIX environment variable name: what a shell or a container spec can set. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The items as inline code, comma-separated, for messages. */
export const codeList = (items: readonly (string | number)[]): string =>
  items.map((i) => `\`${i}\``).join(', ');

/** Reports every repeated item of an array at the index of the repetition. */
export function uniqueItems<T extends string | number>(what: string) {
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
export const globalOnly = () =>
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

/**
 * Bounds that let the Kubernetes API server price its checks of a GatewayConfig (a CEL rule's cost
 * is estimated from the largest lists, maps and strings it may meet) and keep a configuration a
 * size a person can review: far above any deployment's needs.
 */
export const LIMITS = {
  /** Aliases and request-class pools in `targets`. */
  targets: 1000,
  /** Provider entries of one pool. */
  providers: 64,
  /** Characters of a URL. */
  urlLength: 2048,
  /** Characters of a provider name. */
  nameLength: 253,
} as const;

export const UrlSchema = z
  .url({
    protocol: /^https?$/,
    // Only the format failure gets this text; a value of the wrong type keeps the generic message.
    error: (issue) =>
      issue.code === 'invalid_format' ? 'must be an absolute http:// or https:// URL' : undefined,
  })
  .max(LIMITS.urlLength, { error: `must be at most ${LIMITS.urlLength} characters` })
  .refine((url) => {
    const parsed = URL.parse(url);
    return parsed === null || (parsed.search === '' && parsed.hash === '');
  }, 'must not carry a query string or fragment: it is a base URL the request path and query are appended to');

export const NonEmptyString = z.string().min(1, { error: 'must not be empty' });

export const HeaderNameSchema = z
  .string()
  .regex(HEADER_NAME_PATTERN, {
    error: "must be a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
  })
  .refine((name) => !MANAGED_HEADERS.has(name.toLowerCase()), {
    error: 'names a header the proxy manages itself (framing or connection header); it cannot be set',
  });

export const HeaderValueSchema = z
  .string()
  .regex(HEADER_VALUE_PATTERN, { error: 'must not contain line breaks or NUL characters' });

/** HTTP status code, or a one- or two-digit prefix wildcard (`5` = any 5xx, `50` = 500-509). */
export const StatusMatcherSchema = z
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

export const ErrorStatusSchema = z
  .int()
  .refine((v) => v >= 400 && v <= 599, { error: 'must be an HTTP error status code (400-599)' })
  .meta({ minimum: 400, maximum: 599 });

export const EffortSchema = z.enum(EFFORTS);

export const NonNegativeInt = z.int().min(0, { error: 'must be a non-negative integer' });

// ---------------------------------------------------------------------------------------------
// Rules for the Kubernetes API server
// ---------------------------------------------------------------------------------------------

/**
 * A cross-field rule in CEL, which the API server checks when a GatewayConfig object is applied
 * (`x-kubernetes-validations` of the CustomResourceDefinition that `gateway crd` prints). It states
 * again, in CEL, a `superRefine` check of the same schema, so it lives next to that check; the
 * process still runs the check itself (a file, and an object applied past a stale CRD).
 */
export interface KubernetesRule {
  readonly rule: string;
  readonly message?: string;
  /** A CEL expression giving the message, to name the values involved. */
  readonly messageExpression?: string;
  /** Where the API server reports the refusal, relative to the schema the rule is on (`.fallback.max_attempts`). */
  readonly fieldPath?: string;
}

/** The meta key the CRD generator reads, and `gateway schema` leaves out. */
export const KUBERNETES_RULES_KEY = 'x-kubernetes-validations';

export const kubernetesRules = (
  ...rules: KubernetesRule[]
): { [KUBERNETES_RULES_KEY]: readonly KubernetesRule[] } => ({ [KUBERNETES_RULES_KEY]: rules });
