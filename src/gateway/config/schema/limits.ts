/** Rate, concurrency and token limits (spec 2.3), and spend budgets. */
import { z } from 'zod';
import { CALENDAR_UNITS, ROLLING_PATTERN, isTimeZone } from '../../limits/spend/window.js';
import { kubernetesRules } from './fields.js';

/** A calendar unit or a rolling duration, as one string (so the CRD can check it as one). */
const WINDOW_PATTERN = new RegExp(`^(${CALENDAR_UNITS.join('|')})$|${ROLLING_PATTERN.source}`);

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

export const TokenLimitSchema = z
  .strictObject({
    tokens_per_minute: z
      .int()
      .min(1)
      .describe('Tokens (prompt + completion, as the provider reports them) the budget refills per minute.'),
    burst_tokens: z
      .int()
      .min(1)
      .optional()
      .describe('Most tokens the budget holds after an idle spell. Default: `tokens_per_minute`.'),
  })
  .meta({
    id: 'TokenLimit',
    title: 'Token limit',
    description:
      "A token budget. A request is admitted while the budget is positive; its response's usage is charged when it ends, so one large response may take the budget below zero. A request refused gets 429 with code `token_rate_limit` and `Retry-After` the seconds until the budget is positive again.",
  });

/** Completion tokens a budget reserves for a request that sets no maximum, unless configured. */
export const DEFAULT_BUDGET_MAX_TOKENS = 4096;

/** Why a rolling window takes no time zone, in the gateway's message and the CRD's alike. */
const CALENDAR_ONLY_TIME_ZONE = '`time_zone` only applies to `hour`, `day`, `week` and `month`';

export const BudgetSchema = z
  .strictObject({
    amount: z
      .number()
      .positive()
      .describe(
        'What the window may spend, in the currency unit of the configured `pricing` (a positive number).',
      ),
    window: z
      .string()
      .regex(WINDOW_PATTERN, {
        error:
          'must be `hour`, `day`, `week`, `month`, or a rolling duration: an integer and `s`, `m`, `h` or `d` (`30m`, `24h`, `7d`)',
      })
      .describe(
        'When spending starts again from zero. `hour`, `day`, `week` (ISO: from Monday) and `month` are calendar windows of `time_zone`. A duration (`30m`, `24h`, `7d`: an integer and `s`, `m`, `h` or `d`) is a rolling window: the spend of that long before now, counted in 60 slots, so a charge leaves it between 59/60 of the duration and the whole duration after it was made.',
      ),
    time_zone: z
      .string()
      .refine(isTimeZone, {
        error: 'not an IANA time zone this gateway knows (such as `UTC` or `Europe/Berlin`)',
      })
      .optional()
      .describe(
        'IANA time zone of a calendar window (`Europe/Berlin`). Absent: `UTC`. Not valid with a rolling window.',
      ),
    default_max_tokens: z
      .int()
      .min(1)
      .optional()
      .describe(
        `Completion tokens reserved for a request that sets none of \`max_tokens\`, \`max_completion_tokens\` and \`max_output_tokens\`. Absent: ${DEFAULT_BUDGET_MAX_TOKENS}.`,
      ),
  })
  .superRefine((budget, ctx) => {
    if (budget.time_zone !== undefined && !(CALENDAR_UNITS as readonly string[]).includes(budget.window))
      ctx.addIssue({
        code: 'custom',
        path: ['time_zone'],
        message: `a rolling window (\`${budget.window}\`) has no time zone: ${CALENDAR_ONLY_TIME_ZONE}`,
      });
  })
  .meta({
    ...kubernetesRules({
      rule: `!has(self.time_zone) || self.window in [${CALENDAR_UNITS.map((unit) => `'${unit}'`).join(', ')}]`,
      fieldPath: '.time_zone',
      message: `a rolling window has no time zone: ${CALENDAR_ONLY_TIME_ZONE}`,
    }),
    id: 'Budget',
    title: 'Spend budget',
    description:
      "A currency limit over a window. At admission a request reserves the most it may cost (its prompt estimated from the body's size, plus its completion maximum, at the highest prices of the target's providers) and is refused with 429 `budget_exceeded` when that does not fit; when it ends, the reservation is replaced by the cost its provider reported. Every model the budget may be charged for needs a `pricing`.",
  });

export type RateLimitConfig = z.output<typeof RateLimitSchema>;
export type TokenLimitConfig = z.output<typeof TokenLimitSchema>;
export type ConcurrencyLimitConfig = z.output<typeof ConcurrencyLimitSchema>;
export type BudgetConfig = z.output<typeof BudgetSchema>;
