/** Rate and concurrency limits (spec 2.3). */
import { z } from 'zod';

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

export type RateLimitConfig = z.output<typeof RateLimitSchema>;
export type TokenLimitConfig = z.output<typeof TokenLimitSchema>;
export type ConcurrencyLimitConfig = z.output<typeof ConcurrencyLimitSchema>;
