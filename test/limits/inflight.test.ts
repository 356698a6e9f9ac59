import { describe, expect, it } from 'vitest';
import { AccountInflight } from '../../src/gateway/limits/inflight.js';
import type { Grant, InflightRefusal } from '../../src/gateway/limits/types.js';

function grant(result: Grant | InflightRefusal): Grant {
  if (!result.ok) throw new Error(`expected a grant, got ${result.code}`);
  return result;
}

describe('AccountInflight', () => {
  const params = { inflight_limit: 2, account_inflight_limits: { big: 4, blocked: 0 } };

  it('caps each account at the default limit, separately', () => {
    const limiter = new AccountInflight('llama', params);
    grant(limiter.acquire('acme'));
    grant(limiter.acquire('acme'));
    expect(limiter.acquire('acme').ok).toBe(false);
    grant(limiter.acquire('other'));
    expect(limiter.countFor('acme')).toBe(2);
    expect(limiter.countFor('other')).toBe(1);
  });

  it('applies per-account overrides, including 0', () => {
    const limiter = new AccountInflight('llama', params);
    for (let i = 0; i < 4; i++) grant(limiter.acquire('big'));
    expect(limiter.acquire('big').ok).toBe(false);
    expect(limiter.acquire('blocked').ok).toBe(false);
    expect(limiter.limitFor('big')).toBe(4);
    expect(limiter.limitFor('anyone')).toBe(2);
  });

  it('leaves accounts unlimited without a default, except those overridden', () => {
    const limiter = new AccountInflight('llama', { account_inflight_limits: { small: 1 } });
    for (let i = 0; i < 100; i++) grant(limiter.acquire('acme'));
    grant(limiter.acquire('small'));
    expect(limiter.acquire('small').ok).toBe(false);
  });

  it('refuses with what the pipeline needs for 429 inflight_limit_exceeded and Retry-After: 1', () => {
    const limiter = new AccountInflight('llama', { inflight_limit: 1 });
    grant(limiter.acquire('acme'));
    expect(limiter.acquire('acme')).toEqual({
      ok: false,
      kind: 'inflight',
      scope: 'account',
      alias: 'llama',
      account: 'acme',
      limit: 1,
      status: 429,
      code: 'inflight_limit_exceeded',
      type: 'rate_limit_error',
      retryAfterSeconds: 1,
      message: 'Too many requests in flight for this account',
    });
  });

  it('counts requests without an account in the alias total but never refuses them', () => {
    const limiter = new AccountInflight('llama', { inflight_limit: 0 });
    const grants = Array.from({ length: 5 }, () => grant(limiter.acquire(undefined)));
    expect(limiter.acquire('acme').ok).toBe(false);
    expect(limiter.inFlight()).toBe(5);
    for (const g of grants) g.release();
    expect(limiter.inFlight()).toBe(0);
  });

  it('alias total counts every realtime request, accounted or not', () => {
    const limiter = new AccountInflight('llama', params);
    const a = grant(limiter.acquire('acme'));
    grant(limiter.acquire(undefined));
    grant(limiter.acquire('big'));
    expect(limiter.inFlight()).toBe(3);
    a.release();
    a.release();
    expect(limiter.inFlight()).toBe(2);
    expect(limiter.countFor('acme')).toBe(0);
  });

  it('releases idempotently, so a slot freed on body end and on disconnect is freed once', () => {
    const limiter = new AccountInflight('llama', { inflight_limit: 1 });
    const g = grant(limiter.acquire('acme'));
    g.release();
    g.release();
    const again = grant(limiter.acquire('acme'));
    expect(limiter.acquire('acme').ok).toBe(false);
    g.release();
    expect(limiter.countFor('acme')).toBe(1);
    again.release();
    expect(limiter.countFor('acme')).toBe(0);
  });

  it('counts holders of its predecessor per account and in the total until they drain', () => {
    const old = new AccountInflight('llama', { inflight_limit: 3 });
    const held = [grant(old.acquire('acme')), grant(old.acquire('acme')), grant(old.acquire(undefined))];
    const next = new AccountInflight('llama', { inflight_limit: 2 }, old);
    expect(next.countFor('acme')).toBe(2);
    expect(next.inFlight()).toBe(3);
    expect(next.acquire('acme').ok).toBe(false);
    held[0]!.release();
    const fresh = grant(next.acquire('acme'));
    expect(next.countFor('acme')).toBe(2);
    for (const g of held) g.release();
    expect(next.inFlight()).toBe(1);
    fresh.release();
    expect(next.inFlight()).toBe(0);
    expect(old.inFlight()).toBe(0);
  });
});
