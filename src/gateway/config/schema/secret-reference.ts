/** Secrets: a literal value, or a reference resolved when the configuration is loaded. */
import { z } from 'zod';
import { ENV_NAME_PATTERN, HeaderValueSchema, NonEmptyString } from './fields.js';

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
export const secretOr = (literal: z.ZodString) => z.union([literal, SecretReferenceSchema]);

/** A client bearer token as written literally (a `keys` entry may also name a key definition). */
export const ClientKeyLiteralSchema = NonEmptyString;

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
export const literalOf = (value: string | SecretReference): string | undefined =>
  typeof value === 'string' ? value : undefined;
