import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, monotonicClock } from '../../src/gateway/limits/clock.js';
import { TokenBucket } from '../../src/gateway/limits/token-bucket.js';
import { NO_OP_GRANT } from '../../src/gateway/limits/types.js';

const subject = { scope: 'target', subject: 'llama' } as const;

function bucket(requests_per_second: number, burst_size: number, clock = new ManualClock(), seed?: number) {
  return { clock, bucket: new TokenBucket({ requests_per_second, burst_size }, subject, clock, seed) };
}

function drain(b: TokenBucket): number {
  let n = 0;
  while (b.tryTake()) n++;
  return n;
}

describe('TokenBucket', () => {
  it('starts full and refuses once burst is spent', () => {
    const { bucket: b } = bucket(1, 3);
    expect(drain(b)).toBe(3);
    expect(b.tryTake()).toBe(false);
  });

  it('refills continuously, including fractional rates', () => {
    const { clock, bucket: b } = bucket(0.5, 1);
    expect(b.tryTake()).toBe(true);
    clock.advance(1999);
    expect(b.tryTake()).toBe(false);
    expect(b.available()).toBeCloseTo(0.9995, 6);
    clock.advance(1);
    expect(b.tryTake()).toBe(true);
  });

  it('accumulates fractional tokens across calls', () => {
    const { clock, bucket: b } = bucket(10, 5);
    drain(b);
    for (let i = 0; i < 3; i++) {
      clock.advance(25);
      expect(b.tryTake()).toBe(false);
    }
    expect(b.available()).toBeCloseTo(0.75, 9);
    clock.advance(25);
    expect(b.tryTake()).toBe(true);
    expect(b.tryTake()).toBe(false);
  });

  it('does not refuse a request that is on time because of floating point', () => {
    const { clock, bucket: b } = bucket(3, 1);
    expect(b.tryTake()).toBe(true);
    for (let i = 0; i < 30; i++) {
      clock.advance(1000 / 3);
      expect(b.tryTake()).toBe(true);
    }
  });

  it('never holds more than burst after a long idle time', () => {
    const { clock, bucket: b } = bucket(100, 4);
    clock.advance(3_600_000);
    expect(b.available()).toBe(4);
    expect(drain(b)).toBe(4);
  });

  it('refuses everything with a zero burst and never refills with a zero rate', () => {
    const zeroBurst = bucket(10, 0);
    zeroBurst.clock.advance(10_000);
    expect(zeroBurst.bucket.tryTake()).toBe(false);
    const zeroRate = bucket(0, 2);
    expect(drain(zeroRate.bucket)).toBe(2);
    zeroRate.clock.advance(1e9);
    expect(zeroRate.bucket.tryTake()).toBe(false);
  });

  it('starts from a seeded level, clamped to capacity', () => {
    expect(bucket(1, 5, new ManualClock(), 2).bucket.available()).toBe(2);
    expect(bucket(1, 5, new ManualClock(), 50).bucket.available()).toBe(5);
    expect(bucket(1, 5, new ManualClock(), -1).bucket.available()).toBe(0);
  });

  it('acquire returns the no-op grant or a typed rate_limit refusal', () => {
    const { bucket: b } = bucket(1, 1);
    expect(b.acquire()).toBe(NO_OP_GRANT);
    const refusal = b.acquire();
    expect(refusal).toEqual({
      ok: false,
      kind: 'rate_limit',
      scope: 'target',
      subject: 'llama',
      status: 429,
      code: 'rate_limit',
      type: 'rate_limit_error',
      retryAfterSeconds: undefined,
      message: 'Rate limit exceeded',
    });
    // One frozen object per bucket: refusing allocates nothing.
    expect(b.acquire()).toBe(refusal);
    expect(Object.isFrozen(refusal)).toBe(true);
  });

  it('works on the default monotonic clock', () => {
    const b = new TokenBucket({ requests_per_second: 1, burst_size: 2 }, subject, monotonicClock);
    expect(drain(b)).toBe(2);
  });
});

describe('TokenBucket properties', () => {
  const params = fc.record({
    rps: fc.double({ min: 0.1, max: 1000, noNaN: true }),
    burst: fc.integer({ min: 0, max: 50 }),
  });
  const steps = fc.array(fc.record({ dt: fc.double({ min: 0, max: 500, noNaN: true }), tries: fc.nat(5) }), {
    maxLength: 200,
  });

  it('never admits more than burst plus what the rate refilled, over any window', () => {
    fc.assert(
      fc.property(params, steps, ({ rps, burst }, plan) => {
        const { clock, bucket: b } = bucket(rps, burst);
        const admitted: number[] = [];
        for (const { dt, tries } of plan) {
          clock.advance(dt);
          for (let i = 0; i < tries; i++) if (b.tryTake()) admitted.push(clock.now());
          expect(b.available()).toBeLessThanOrEqual(burst);
        }
        for (let i = 0; i < admitted.length; i++) {
          for (let j = i; j < admitted.length; j++) {
            const window = admitted[j]! - admitted[i]!;
            expect(j - i + 1).toBeLessThanOrEqual(burst + Math.floor((rps * window) / 1000 + 1e-6));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  // A bucket asked at least once per token interval never reaches capacity while it holds a leftover
  // fraction (burst >= 2), so nothing refilled is lost to the cap: admissions equal burst plus
  // rate x time, less the fraction of a token not yet complete.
  it('admits burst plus rate times elapsed time in the long run when asked often enough', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.1, max: 1000, noNaN: true }),
        fc.integer({ min: 2, max: 50 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 100, maxLength: 400 }),
        (rps, burst, fractions) => {
          const { clock, bucket: b } = bucket(rps, burst);
          let admitted = drain(b);
          for (const f of fractions) {
            clock.advance((f * 1000) / rps);
            admitted += drain(b);
          }
          const ideal = burst + (rps * clock.now()) / 1000;
          expect(admitted).toBeLessThanOrEqual(ideal + 1e-6);
          expect(admitted).toBeGreaterThan(ideal - 1);
        },
      ),
      { numRuns: 300 },
    );
  });
});
