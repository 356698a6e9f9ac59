import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConcurrencyPermits } from '../../src/gateway/limits/concurrency.js';
import type { Grant } from '../../src/gateway/limits/types.js';

const subject = { scope: 'key', subject: 'team-a' } as const;
const permits = (max: number, predecessor?: ConcurrencyPermits) =>
  new ConcurrencyPermits({ max_concurrent_requests: max }, subject, predecessor);

function grant(result: ReturnType<ConcurrencyPermits['acquire']>): Grant {
  if (!result.ok) throw new Error(`expected a grant, got ${result.code}`);
  return result;
}

describe('ConcurrencyPermits', () => {
  it('grants up to the limit, then refuses with concurrency_limit_exceeded', () => {
    const p = permits(2);
    grant(p.acquire());
    grant(p.acquire());
    expect(p.acquire()).toEqual({
      ok: false,
      kind: 'concurrency',
      scope: 'key',
      subject: 'team-a',
      limit: 2,
      status: 429,
      code: 'concurrency_limit_exceeded',
      type: 'rate_limit_error',
      retryAfterSeconds: undefined,
      message: 'Concurrency limit exceeded',
    });
    expect(p.inUse()).toBe(2);
  });

  it('gives the permit back on release, once, however often release is called', () => {
    const p = permits(2);
    const a = grant(p.acquire());
    const b = grant(p.acquire());
    a.release();
    a.release();
    a.release();
    expect(p.inUse()).toBe(1);
    grant(p.acquire());
    expect(p.acquire().ok).toBe(false);
    b.release();
    expect(p.inUse()).toBe(1);
  });

  it('refuses everything with a limit of 0', () => {
    expect(permits(0).acquire().ok).toBe(false);
  });

  it('counts the permits still held on its predecessor until they are released there', () => {
    const old = permits(10);
    const held = Array.from({ length: 8 }, () => grant(old.acquire()));
    const lowered = permits(5, old);
    expect(lowered.inUse()).toBe(8);
    expect(lowered.acquire().ok).toBe(false);
    for (const g of held.slice(0, 4)) g.release();
    expect(old.inUse()).toBe(4);
    const fresh = grant(lowered.acquire());
    expect(lowered.inUse()).toBe(5);
    expect(lowered.acquire().ok).toBe(false);
    // Old holders release into the old instance: the new count never goes below its own holders.
    for (const g of held) g.release();
    expect(old.inUse()).toBe(0);
    expect(lowered.inUse()).toBe(1);
    fresh.release();
    expect(lowered.inUse()).toBe(0);
  });
});

describe('ConcurrencyPermits properties', () => {
  type Op = { type: 'acquire' } | { type: 'release'; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.constant<Op>({ type: 'acquire' }),
    fc.nat().map<Op>((pick) => ({ type: 'release', pick })),
  );

  it('never exceeds the limit and counts exactly the unreleased grants, whatever is released twice', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.array(op, { maxLength: 200 }), (max, ops) => {
        const p = permits(max);
        const issued: Grant[] = [];
        const released = new Set<Grant>();
        for (const o of ops) {
          if (o.type === 'acquire') {
            const r = p.acquire();
            const live = issued.length - released.size;
            expect(r.ok).toBe(live < max);
            if (r.ok) issued.push(r);
          } else if (issued.length > 0) {
            const g = issued[o.pick % issued.length]!;
            g.release();
            released.add(g);
          }
          expect(p.inUse()).toBe(issued.length - released.size);
          expect(p.inUse()).toBeLessThanOrEqual(max);
          expect(p.inUse()).toBeGreaterThanOrEqual(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
