import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { LimitLevels, durationText } from '../../src/gateway/limits/limit-headers.js';
import { TokenBucket } from '../../src/gateway/limits/token-bucket.js';
import { TokenBudget } from '../../src/gateway/limits/token-budget.js';

/** The `x-ratelimit-*` headers: the tightest limit of each kind, in OpenAI's names and formats. */

describe('durationText', () => {
  it.each([
    [0, '0s'],
    [-5, '0s'],
    [1, '1ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [360_000, '6m0s'],
    [3_600_000, '1h0m0s'],
    [3_723_500, '1h2m3.5s'],
  ])('%d ms is %s', (ms, text) => {
    expect(durationText(ms)).toBe(text);
  });
});

describe('LimitLevels', () => {
  it('reports nothing when no limit was seen', () => {
    expect(new LimitLevels().headers()).toBeUndefined();
  });

  it('keeps the tightest of each kind: the fewest remaining, then the longest to refill', () => {
    const levels = new LimitLevels();
    // 10 of 20 left at 2/s (5 s to full), then 3 of 5 at 1/s (2 s), then 3 of 50 at 0.5/s (94 s).
    levels.requests(20, 10, 2);
    levels.requests(5, 3, 1);
    levels.requests(50, 3, 0.5);
    levels.requests(100, 99.5, 1);
    // A budget in debt reports 0 left and the time to refill from below zero.
    levels.tokens(1000, -200, 10);
    levels.tokens(600, 600, 10);
    expect(levels.headers()).toEqual({
      'x-ratelimit-limit-requests': '50',
      'x-ratelimit-remaining-requests': '3',
      'x-ratelimit-reset-requests': '1m34s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '2m0s',
    });
  });

  it('reports only the kinds it saw', () => {
    const levels = new LimitLevels();
    levels.tokens(600, 600, 10);
    expect(levels.headers()).toEqual({
      'x-ratelimit-limit-tokens': '600',
      'x-ratelimit-remaining-tokens': '600',
      'x-ratelimit-reset-tokens': '0s',
    });
  });

  it("reads the in-memory bucket and budget after the request's take and before its charge", () => {
    const clock = new ManualClock();
    const bucket = new TokenBucket(
      { requests_per_second: 4, burst_size: 3 },
      { scope: 'key', subject: 'k' },
      clock,
    );
    const budget = new TokenBudget({ tokens_per_minute: 600, burst_tokens: 100 }, 'target', 't', clock);
    expect(bucket.tryTake()).toBe(true);
    budget.charge(30);
    const levels = new LimitLevels();
    bucket.reportTo(levels);
    budget.reportTo(levels);
    expect(levels.headers()).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '250ms',
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '70',
      'x-ratelimit-reset-tokens': '3s',
    });
  });
});
