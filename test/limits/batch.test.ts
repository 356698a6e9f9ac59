import { describe, expect, it } from 'vitest';
import { BatchInflight } from '../../src/gateway/limits/batch.js';
import type { BatchRefusal, Grant } from '../../src/gateway/limits/types.js';

function grant(result: Grant | BatchRefusal): Grant {
  if (!result.ok) throw new Error(`expected a grant, got ${result.code}`);
  return result;
}

describe('BatchInflight', () => {
  it('caps the alias when enforced, refusing with 529 batch_capacity_exceeded and Retry-After: 1', () => {
    const limiter = new BatchInflight('llama', { batch_inflight_limit: 2, enforce: true });
    grant(limiter.acquire());
    const second = grant(limiter.acquire());
    expect(limiter.acquire()).toEqual({
      ok: false,
      kind: 'batch',
      scope: 'alias',
      alias: 'llama',
      limit: 2,
      status: 529,
      code: 'batch_capacity_exceeded',
      type: 'overloaded_error',
      retryAfterSeconds: 1,
      message: 'Batch capacity exceeded',
    });
    second.release();
    second.release();
    grant(limiter.acquire());
    expect(limiter.inFlight()).toBe(2);
  });

  it('counts but never refuses when the cap is loaded but not enforced', () => {
    const limiter = new BatchInflight('llama', { batch_inflight_limit: 1, enforce: false });
    for (let i = 0; i < 10; i++) grant(limiter.acquire());
    expect(limiter.inFlight()).toBe(10);
  });

  it('is uncapped when the limit is absent', () => {
    const limiter = new BatchInflight('llama', { enforce: true });
    for (let i = 0; i < 1000; i++) grant(limiter.acquire());
    expect(limiter.inFlight()).toBe(1000);
  });

  it('counts holders of its predecessor until they drain', () => {
    const old = new BatchInflight('llama', { enforce: false });
    const held = [grant(old.acquire()), grant(old.acquire())];
    const next = new BatchInflight('llama', { batch_inflight_limit: 2, enforce: true }, old);
    expect(next.acquire().ok).toBe(false);
    held[0]!.release();
    grant(next.acquire());
    expect(next.inFlight()).toBe(2);
    held[1]!.release();
    expect(next.inFlight()).toBe(1);
  });
});
