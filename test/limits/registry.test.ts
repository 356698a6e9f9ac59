import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { LimiterRegistry, limiterId } from '../../src/gateway/limits/registry.js';
import type { Admission, Grant } from '../../src/gateway/limits/types.js';

const target = { scope: 'target', subject: 'llama' } as const;

function grant(result: Admission): Grant {
  if (!result.ok) throw new Error(`expected a grant, got ${result.code}`);
  return result;
}

describe('limiterId', () => {
  it('names what a limiter limits', () => {
    expect(limiterId.targetRate('llama')).toBe('target:llama:rate');
    expect(limiterId.keyConcurrency('team-a')).toBe('key:team-a:concurrency');
    expect(limiterId.account('llama')).toBe('account:llama');
    expect(limiterId.batch('llama')).toBe('batch:llama');
    expect(limiterId.providerRate('llama', 'a')).toBe('provider:llama:a:rate');
  });
});

describe('LimiterRegistry across reloads', () => {
  it('reuses a limiter whose identity and parameters are unchanged, state included', () => {
    const clock = new ManualClock();
    const first = LimiterRegistry.empty(clock).rebuild();
    const bucket = first.tokenBucket('target:llama:rate', { requests_per_second: 1, burst_size: 2 }, target);
    const permits = first.concurrency('target:llama:concurrency', { max_concurrent_requests: 1 }, target);
    const registry = first.finish();
    bucket.tryTake();
    bucket.tryTake();
    const held = grant(permits.acquire());

    const second = registry.rebuild();
    // Whole config objects may be passed: only the limit fields are compared.
    const config = { requests_per_second: 1, burst_size: 2, unrelated: 'x' };
    expect(second.tokenBucket('target:llama:rate', config, target)).toBe(bucket);
    expect(second.concurrency('target:llama:concurrency', { max_concurrent_requests: 1 }, target)).toBe(
      permits,
    );
    second.finish();
    expect(bucket.tryTake()).toBe(false);
    expect(permits.acquire().ok).toBe(false);
    held.release();
  });

  it('replaces a token bucket whose parameters changed, starting at the old level, not full', () => {
    const clock = new ManualClock();
    const first = LimiterRegistry.empty(clock).rebuild();
    const old = first.tokenBucket('target:llama:rate', { requests_per_second: 1, burst_size: 10 }, target);
    const registry = first.finish();
    for (let i = 0; i < 8; i++) old.tryTake();

    const second = registry.rebuild();
    const raised = second.tokenBucket(
      'target:llama:rate',
      { requests_per_second: 5, burst_size: 20 },
      target,
    );
    second.finish();
    expect(raised).not.toBe(old);
    expect(raised.available()).toBeCloseTo(2, 9);

    // Built again from the first table: the old bucket (2 tokens) seeds a smaller one, clamped.
    const third = registry.rebuild();
    const lowered = third.tokenBucket('target:llama:rate', { requests_per_second: 1, burst_size: 1 }, target);
    expect(lowered.available()).toBe(1);
  });

  it('replaces a concurrency limiter whose limit changed; old holders count until they release into the old one', () => {
    const first = LimiterRegistry.empty(new ManualClock()).rebuild();
    const old = first.concurrency('target:llama:concurrency', { max_concurrent_requests: 4 }, target);
    const registry = first.finish();
    const held = [grant(old.acquire()), grant(old.acquire()), grant(old.acquire())];

    const second = registry.rebuild();
    const next = second.concurrency('target:llama:concurrency', { max_concurrent_requests: 2 }, target);
    second.finish();
    expect(next).not.toBe(old);
    expect(next.inUse()).toBe(3);
    expect(next.acquire().ok).toBe(false);

    held[0]!.release();
    held[1]!.release();
    const fresh = grant(next.acquire());
    expect(next.acquire().ok).toBe(false);
    // Releases twice over, from both tables, never push any count below zero.
    for (const g of [...held, ...held, fresh, fresh]) g.release();
    expect(old.inUse()).toBe(0);
    expect(next.inUse()).toBe(0);
    expect(grant(next.acquire())).toBeDefined();
  });

  it('keeps a removed in-flight limiter draining, visible in the gauge, and resumes it if the alias returns', () => {
    const first = LimiterRegistry.empty(new ManualClock()).rebuild();
    const inflight = first.accountInflight('account:llama', 'llama', { inflight_limit: 1 });
    first.accountInflight('account:qwen', 'qwen', { inflight_limit: 1 });
    const r1 = first.finish();
    const held = grant(inflight.acquire('acme'));
    grant(inflight.acquire(undefined));

    const b2 = r1.rebuild();
    b2.accountInflight('account:qwen', 'qwen', { inflight_limit: 1 });
    const r2 = b2.finish();
    expect(r2.identities()).toEqual(['account:qwen']);
    expect(r2.drainingIdentities()).toEqual(['account:llama']);
    expect(r2.modelInflight()).toEqual(
      new Map([
        ['qwen', 0],
        ['llama', 2],
      ]),
    );

    const b3 = r2.rebuild();
    const back = b3.accountInflight('account:llama', 'llama', { inflight_limit: 1 });
    const r3 = b3.finish();
    expect(back).toBe(inflight);
    expect(back.acquire('acme').ok).toBe(false);
    expect(r3.drainingIdentities()).toEqual([]);
    held.release();
  });

  it('links a returning identity with new parameters to its draining predecessor', () => {
    const first = LimiterRegistry.empty(new ManualClock()).rebuild();
    const batch = first.batch('batch:llama', 'llama', { batch_inflight_limit: 5, enforce: true });
    const r1 = first.finish();
    const held = grant(batch.acquire());

    const r2 = r1.rebuild().finish();
    expect(r2.batchInflight()).toEqual(new Map([['llama', 1]]));

    const b3 = r2.rebuild();
    const next = b3.batch('batch:llama', 'llama', { batch_inflight_limit: 1, enforce: true });
    b3.finish();
    expect(next).not.toBe(batch);
    expect(next.acquire().ok).toBe(false);
    held.release();
    expect(grant(next.acquire())).toBeDefined();
  });

  it('drops idle removed limiters and token buckets at the next reload', () => {
    const first = LimiterRegistry.empty(new ManualClock()).rebuild();
    first.tokenBucket('target:a:rate', { requests_per_second: 1, burst_size: 1 }, target);
    first.concurrency('target:a:concurrency', { max_concurrent_requests: 1 }, target);
    first.accountInflight('account:a', 'a', {});
    const r2 = first.finish().rebuild().finish();
    expect(r2.identities()).toEqual([]);
    expect(r2.drainingIdentities()).toEqual([]);
  });

  it('treats override maps with the same entries in another order as unchanged', () => {
    const first = LimiterRegistry.empty(new ManualClock()).rebuild();
    const inflight = first.accountInflight('account:llama', 'llama', {
      inflight_limit: 2,
      account_inflight_limits: { a: 1, b: 2 },
    });
    const b2 = first.finish().rebuild();
    expect(
      b2.accountInflight('account:llama', 'llama', {
        inflight_limit: 2,
        account_inflight_limits: { b: 2, a: 1 },
      }),
    ).toBe(inflight);
    const b3 = b2.finish().rebuild();
    const changed = b3.accountInflight('account:llama', 'llama', {
      inflight_limit: 2,
      account_inflight_limits: { b: 2, a: 3 },
    });
    expect(changed).not.toBe(inflight);
  });

  it('returns the same instance when one table asks twice with the same parameters', () => {
    const b = LimiterRegistry.empty(new ManualClock()).rebuild();
    const a = b.accountInflight('account:llama', 'llama', { inflight_limit: 2 });
    expect(b.accountInflight('account:llama', 'llama', { inflight_limit: 2 })).toBe(a);
    expect(() => b.accountInflight('account:llama', 'llama', { inflight_limit: 3 })).toThrow(
      /different parameters/,
    );
  });

  it('refuses use of a builder after finish', () => {
    const b = LimiterRegistry.empty(new ManualClock()).rebuild();
    b.finish();
    expect(() => b.batch('batch:x', 'x', { enforce: false })).toThrow(/after finish/);
    expect(() => b.finish()).toThrow(/after finish/);
  });
});
