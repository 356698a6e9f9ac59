/** Authentication (spec 2.4). */
import { z } from 'zod';
import { NonEmptyString } from './fields.js';
import { ClientKeyLiteralSchema, literalOf, secretOr, tokenOwnershipIssues } from './secret-reference.js';
import { BudgetSchema, ConcurrencyLimitSchema, RateLimitSchema, TokenLimitSchema } from './limits.js';

export const KeyDefinitionSchema = z
  .strictObject({
    key: secretOr(ClientKeyLiteralSchema).describe(
      'The bearer token clients send (`Authorization: Bearer <key>`, or `x-api-key: <key>`): the token itself, or a [secret reference](#secret-reference) (`{ from_file: /path }` or `{ from_env: NAME }`).',
    ),
    rate_limit: RateLimitSchema.optional().describe(
      "Token bucket for this key alone; checked before the target's bucket, and both must pass.",
    ),
    concurrency_limit: ConcurrencyLimitSchema.optional().describe(
      "Concurrency cap for this key alone; checked in addition to the target's cap.",
    ),
    token_limit: TokenLimitSchema.optional().describe(
      "Token budget of this key alone, across every target; checked in addition to the target's and the account's.",
    ),
    budget: BudgetSchema.optional().describe(
      "Spend budget of this key alone, across every target; checked in addition to the target's and the account's. Every target the key is accepted on needs prices.",
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

export const AccountSchema = z
  .strictObject({
    token_limit: TokenLimitSchema.optional().describe(
      'Token budget shared by all keys of the account, across every target.',
    ),
    budget: BudgetSchema.optional().describe(
      'Spend budget shared by all keys of the account, across every target. Every target its keys are accepted on needs prices.',
    ),
  })
  .meta({
    id: 'Account',
    title: 'Account',
    description: 'Limits of one account (the `account` label of its keys).',
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
    accounts: z
      .record(NonEmptyString, AccountSchema)
      .optional()
      .describe(
        'Limits of accounts, by the `account` label of their keys: account -> limits. Every key of the account shares them, on every target.',
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

export type AuthConfig = z.output<typeof AuthSchema>;
export type KeyDefinition = z.output<typeof KeyDefinitionSchema>;
