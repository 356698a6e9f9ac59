import { describe, expect, it } from 'vitest';
import { arrivalSchedule, startedAtTick, type StreamOutcome } from '../../bench/drivers/streaming.ts';

describe('the streaming open loop arrival schedule', () => {
  it('spaces periodic arrivals exactly one mean gap apart', () => {
    const at = arrivalSchedule('periodic', 100, 5);
    expect(Array.from(at)).toEqual([0, 10, 20, 30, 40]);
  });

  it('draws Poisson arrivals at the asked rate, the same schedule for the same seed', () => {
    const count = 20_000;
    const at = arrivalSchedule('poisson', 100, count);
    expect(Array.from(at)).toEqual(Array.from(arrivalSchedule('poisson', 100, count)));
    expect(Array.from(at)).not.toEqual(Array.from(arrivalSchedule('poisson', 100, count, 2)));
    const gaps: number[] = [];
    for (let k = 1; k < count; k++) gaps.push(at[k]! - at[k - 1]!);
    expect(gaps.every((gap) => gap >= 0)).toBe(true);
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    expect(mean).toBeGreaterThan(9.7);
    expect(mean).toBeLessThan(10.3);
    // Exponential gaps: the standard deviation equals the mean, and about 1 - 1/e fall below it.
    const sd = Math.sqrt(gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length);
    expect(sd / mean).toBeGreaterThan(0.95);
    expect(sd / mean).toBeLessThan(1.05);
    const below = gaps.filter((g) => g < mean).length / gaps.length;
    expect(below).toBeGreaterThan(0.61);
    expect(below).toBeLessThan(0.65);
  });

  it('spreads Poisson arrivals over the phase of a 10 ms cycle instead of locking to one point', () => {
    const at = arrivalSchedule('poisson', 100, 10_000);
    const buckets = new Array<number>(10).fill(0);
    for (const t of at) buckets[Math.floor(t % 10)]!++;
    for (const n of buckets) expect(n).toBeGreaterThan(800);
  });
});

describe('a paced stream that started at an upstream tick', () => {
  const outcome = (gaps: number[]): StreamOutcome => ({
    status: 200,
    ttfb: 1,
    events: 51,
    complete: true,
    gaps,
  });

  it('is told by the gap between its first two events', () => {
    // 10 ms ticks: within a tenth of the interval of either end of the cycle counts as at a tick.
    expect(startedAtTick(outcome([0.4, 10, 10]), 10)).toBe(true);
    expect(startedAtTick(outcome([9.6, 10, 10]), 10)).toBe(true);
    expect(startedAtTick(outcome([1.2, 10, 10]), 10)).toBe(false);
    expect(startedAtTick(outcome([5, 10, 10]), 10)).toBe(false);
    expect(startedAtTick(outcome([8.8, 10, 10]), 10)).toBe(false);
  });

  it('is not claimed for a stream without a second event', () => {
    expect(startedAtTick(outcome([]), 10)).toBe(false);
  });
});
