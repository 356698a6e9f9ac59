import { describe, expect, it } from 'vitest';
import { AccountInflight } from '../../src/gateway/limits/inflight.js';
import { ConcurrencyPermits } from '../../src/gateway/limits/concurrency.js';
import { GrantSet } from '../../src/gateway/limits/grant-set.js';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { TokenBucket } from '../../src/gateway/limits/token-bucket.js';
import {
  isPromise,
  NO_OP_GRANT,
  type ConcurrencyLimiter,
  type ConcurrencyRefusal,
  type Grant,
  type MaybePromise,
  type Refusal,
} from '../../src/gateway/limits/types.js';

const key = { scope: 'key', subject: 'team-a' } as const;
const target = { scope: 'target', subject: 'llama' } as const;

describe('GrantSet', () => {
  it('releases everything it holds, newest first, once', () => {
    const order: string[] = [];
    const tracked = (name: string): Grant => ({ ok: true, release: () => order.push(name) });
    const set = new GrantSet();
    expect(set.hold(tracked('a'))).toBeNull();
    expect(set.hold(tracked('b'))).toBeNull();
    set.release();
    set.release();
    expect(order).toEqual(['b', 'a']);
    expect(set.released).toBe(true);
  });

  it('hands refusals back without releasing what it holds', () => {
    const permits = new ConcurrencyPermits({ max_concurrent_requests: 1 }, target);
    const set = new GrantSet();
    expect(set.hold(permits.acquire())).toBeNull();
    const refusal = set.hold(permits.acquire());
    expect(refusal?.code).toBe('concurrency_limit_exceeded');
    expect(permits.inUse()).toBe(1);
    set.release();
    expect(permits.inUse()).toBe(0);
  });

  it('releases at once a grant that arrives after the set was released', () => {
    const permits = new ConcurrencyPermits({ max_concurrent_requests: 1 }, target);
    const set = new GrantSet();
    set.release();
    expect(set.hold(permits.acquire())).toBeNull();
    expect(permits.inUse()).toBe(0);
  });

  it('does not keep the no-op grant of token buckets', () => {
    const set = new GrantSet();
    expect(set.hold(NO_OP_GRANT)).toBeNull();
    set.release();
  });
});

/** A stand-in for a shared (remote) limiter: same interface, answers later. */
class AsyncPermits implements ConcurrencyLimiter {
  readonly local = new ConcurrencyPermits({ max_concurrent_requests: 1 }, target);
  acquire(): Promise<Grant | ConcurrencyRefusal> {
    return new Promise((resolve) => setImmediate(() => resolve(this.local.acquire())));
  }
}

/** The admission sequence as the pipeline will run it, written once for sync and async limiters. */
async function admit(
  set: GrantSet,
  steps: readonly (() => MaybePromise<Grant | Refusal>)[],
): Promise<Refusal | null> {
  for (const step of steps) {
    let result = step();
    if (isPromise(result)) result = await result;
    const refusal = set.hold(result);
    if (refusal !== null) return refusal;
  }
  return null;
}

describe('the async-capable seam', () => {
  it('mixes in-memory (synchronous) and shared (asynchronous) limiters in one admission sequence', async () => {
    const clock = new ManualClock();
    const keyRate = new TokenBucket({ requests_per_second: 1, burst_size: 5 }, key, clock);
    const shared = new AsyncPermits();
    const account = new AccountInflight('llama', { inflight_limit: 5 });
    expect(isPromise(keyRate.acquire())).toBe(false);

    const first = new GrantSet();
    const steps = [() => keyRate.acquire(), () => shared.acquire(), () => account.acquire('acme')];
    expect(await admit(first, steps)).toBeNull();
    expect(account.countFor('acme')).toBe(1);

    const second = new GrantSet();
    const refusal = await admit(second, steps);
    expect(refusal?.kind).toBe('concurrency');
    second.release();
    expect(account.countFor('acme')).toBe(1);

    first.release();
    expect(shared.local.inUse()).toBe(0);
    expect(account.inFlight()).toBe(0);
  });

  it('does not leak a grant that resolves after the client went away', async () => {
    const shared = new AsyncPermits();
    const set = new GrantSet();
    const pending = shared.acquire();
    set.release();
    expect(set.hold(await pending)).toBeNull();
    expect(shared.local.inUse()).toBe(0);
  });
});
