import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { LimiterRegistry } from '../../src/gateway/limits/registry.js';
import { TokenBudget } from '../../src/gateway/limits/token-budget.js';

/** A token budget: admits while positive, is charged after the response, refills by the minute. */

describe('TokenBudget', () => {
  it('admits while positive, goes below zero on a charge, and says how long until positive', () => {
    const clock = new ManualClock();
    // 60 a minute = 1 a second, 100 at most.
    const budget = new TokenBudget({ tokens_per_minute: 60, burst_tokens: 100 }, 'target', 't', clock);
    expect(budget.acquire().ok).toBe(true);
    budget.charge(150);
    expect(budget.balance()).toBe(-50);
    // Zero still refuses (admitted only while positive): the first whole second above it is the 51st.
    expect(budget.acquire()).toMatchObject({ ok: false, code: 'token_rate_limit', retryAfterSeconds: 51 });
    clock.advance(49_500);
    expect(budget.acquire()).toMatchObject({ ok: false, retryAfterSeconds: 1 });
    clock.advance(600);
    expect(budget.acquire().ok).toBe(true);
  });

  it('at exactly zero it refuses for a second; refill stops at the burst', () => {
    const clock = new ManualClock();
    const budget = new TokenBudget({ tokens_per_minute: 600 }, 'key', 'k', clock);
    budget.charge(600);
    expect(budget.acquire()).toMatchObject({ ok: false, retryAfterSeconds: 1 });
    clock.advance(3_600_000);
    expect(budget.balance()).toBe(600);
  });

  it('a reload that changes the limit carries the balance, debt included', () => {
    const clock = new ManualClock();
    const first = LimiterRegistry.empty(clock).rebuild();
    const budget = first.tokenBudget('target:t:tokens', { tokens_per_minute: 60 }, 'target', 't');
    budget.charge(100);
    const registry = first.finish();
    const next = registry.rebuild().tokenBudget('target:t:tokens', { tokens_per_minute: 120 }, 'target', 't');
    expect(next).not.toBe(budget);
    expect(next.balance()).toBe(-40);
  });
});
