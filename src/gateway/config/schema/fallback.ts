/** Fallback across the providers of a pool (spec 2.5). */
import { z } from 'zod';
import { StatusMatcherSchema, uniqueItems } from './fields.js';
import { AimdOverridesSchema } from './aimd.js';

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

export type FallbackConfig = z.output<typeof FallbackSchema>;
