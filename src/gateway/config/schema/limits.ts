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

export type RateLimitConfig = z.output<typeof RateLimitSchema>;
export type ConcurrencyLimitConfig = z.output<typeof ConcurrencyLimitSchema>;
