import { describe, expect, it } from 'vitest';
import { BatchInflight } from '../../../src/gateway/limits/batch.js';
import { ManualClock } from '../../../src/gateway/limits/clock.js';
import { ConcurrencyPermits } from '../../../src/gateway/limits/concurrency.js';
import { AccountInflight } from '../../../src/gateway/limits/inflight.js';
import {
  batchRefusal,
  concurrencyRefusal,
  inflightRefusal,
  rateLimitRefusal,
} from '../../../src/gateway/limits/refusals.js';
import { TokenBucket } from '../../../src/gateway/limits/token-bucket.js';
import { refusal } from './helpers.js';

// The shared limiters must answer exactly what the in-memory ones answer (spec 7.1): a client cannot
// tell which store decided.
describe('shared refusals equal the in-memory refusals', () => {
  const subject = { scope: 'key' as const, subject: 'alice' };

  it('rate limit', () => {
    const bucket = new TokenBucket({ requests_per_second: 1, burst_size: 1 }, subject, new ManualClock());
    bucket.acquire();
    expect(rateLimitRefusal(subject)).toEqual(refusal(bucket.acquire()));
  });

  it('concurrency', () => {
    const permits = new ConcurrencyPermits({ max_concurrent_requests: 1 }, subject);
    permits.acquire();
    expect(concurrencyRefusal(subject, 1)).toEqual(refusal(permits.acquire()));
  });

  it('account in-flight', () => {
    const inflight = new AccountInflight('llama', { inflight_limit: 1 });
    inflight.acquire('acme');
    expect(inflightRefusal('llama', 'acme', 1)).toEqual(refusal(inflight.acquire('acme')));
  });

  it('batch', () => {
    const batch = new BatchInflight('llama', { batch_inflight_limit: 1, enforce: true });
    batch.acquire();
    expect(batchRefusal('llama', 1)).toEqual(refusal(batch.acquire()));
  });
});
