import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decideTogether } from '../../../src/gateway/limits/redis/limiters.js';
import { parseFailurePolicies, type FailurePolicies } from '../../../src/gateway/limits/redis/policy.js';
import { isPromise } from '../../../src/gateway/limits/types.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { until } from '../../helpers/wait.js';
import { grant, openStore, refusal, sleep, uniquePrefix, type TestStore } from './helpers.js';

// What the shared limiters decide when Redis cannot answer: unreachable, slower than the per-call
// timeout, or gone and back.

let redis: RedisServer;
const open: TestStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
}, 300_000);

afterAll(async () => {
  await redis?.close();
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.store.close()));
});

function policies(text: string): FailurePolicies {
  const parsed = parseFailurePolicies(text);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.policies;
}

async function store(url: string, policy: string, options: { timeoutMs?: number; wait?: boolean } = {}) {
  const opened = await openStore(url, { prefix: uniquePrefix(), policies: policies(policy), ...options });
  open.push(opened);
  return opened;
}

const subject = { scope: 'target' as const, subject: 'llama' };
const rate = { requests_per_second: 0.001, burst_size: 1 };

describe('Redis unreachable', () => {
  it('decides each kind by its policy at once, counting every decision', async () => {
    // A port nobody listens on: the connection never becomes ready.
    const dead = `redis://127.0.0.1:${redis.port === 1 ? 2 : 1}`;
    const t = await store(
      dead,
      'rate=fail_open,concurrency=fail_closed,inflight=fail_closed,batch=fail_open',
      {
        wait: false,
      },
    );
    expect(await t.up()).toBe(0);
    const bucket = t.store.tokenBucket('target:llama:rate', rate, subject);
    const answer = bucket.acquire();
    // No round trip to wait for: a disconnected client answers synchronously.
    expect(isPromise(answer)).toBe(false);
    grant(await answer);
    grant(await bucket.acquire());
    const concurrency = t.store.concurrency(
      'target:llama:concurrency',
      { max_concurrent_requests: 5 },
      subject,
    );
    expect(refusal(await concurrency.acquire()).code).toBe('concurrency_limit_exceeded');
    const inflight = t.store.accountInflight('account:llama', 'llama', { inflight_limit: 5 });
    expect(refusal(await inflight.acquire('acme')).code).toBe('inflight_limit_exceeded');
    // Nothing could refuse these, so nothing is degraded: no account, or an account without a cap.
    grant(await inflight.acquire(undefined));
    const batch = t.store.batch('batch:llama', 'llama', { batch_inflight_limit: 1, enforce: true });
    const open1 = grant(await batch.acquire());
    grant(await batch.acquire());
    expect(batch.inFlight()).toBe(2);
    open1.release();
    expect(batch.inFlight()).toBe(1);
    expect(t.store.heldLeases).toBe(0);

    expect(await t.degraded('rate', 'fail_open')).toBe(2);
    expect(await t.degraded('concurrency', 'fail_closed')).toBe(1);
    expect(await t.degraded('inflight', 'fail_closed')).toBe(1);
    expect(await t.degraded('batch', 'fail_open')).toBe(2);
    const warns = t.lines.filter((l) => l.msg?.toString().startsWith('shared limit unavailable'));
    expect(warns.map((l) => [l.kind, l.policy, l.reason])).toEqual([
      ['rate', 'fail_open', 'disconnected'],
      ['concurrency', 'fail_closed', 'disconnected'],
      ['inflight', 'fail_closed', 'disconnected'],
      ['batch', 'fail_open', 'disconnected'],
    ]);
  });
});

describe('Redis slower than the per-call timeout', () => {
  it('applies the policy after the timeout and leaves no slot behind once Redis catches up', async () => {
    const t = await store(redis.url, 'fail_closed', { timeoutMs: 50 });
    const admin = new Redis(redis.url);
    try {
      const limiter = t.store.concurrency(
        'target:llama:concurrency',
        { max_concurrent_requests: 5 },
        subject,
      );
      const key = t.store.keyOf('target:llama:concurrency');
      await admin.call('CLIENT', 'PAUSE', '400', 'ALL');
      const started = performance.now();
      const answer = await limiter.acquire();
      const waited = performance.now() - started;
      expect(refusal(answer).code).toBe('concurrency_limit_exceeded');
      expect(waited).toBeLessThan(350);
      expect(await t.degraded('concurrency', 'fail_closed')).toBe(1);
      expect(t.lines.find((l) => l.kind === 'concurrency')?.reason).toBe('timeout');
      // The acquire ran when the pause ended; the release sent behind it removed the lease again.
      await until(async () => (await admin.exists(key)) === 0 || (await admin.zcard(key)) === 0);
      await sleep(100);
      expect(await admin.zcard(key)).toBe(0);
    } finally {
      admin.disconnect();
    }
  });
});

describe('Redis stopped and restarted', () => {
  it('degrades while it is gone and decides by Redis again once it is back', async () => {
    const closed = await store(redis.url, 'fail_closed');
    const openT = await store(redis.url, 'fail_open');
    const id = 'target:llama:rate';
    grant(await closed.store.tokenBucket(id, rate, subject).acquire());
    refusal(await closed.store.tokenBucket(id, rate, subject).acquire());

    await redis.stop();
    await until(async () => (await closed.up()) === 0 && (await openT.up()) === 0);
    refusal(await closed.store.tokenBucket(id, rate, subject).acquire());
    grant(await openT.store.tokenBucket(id, rate, subject).acquire());
    grant(await openT.store.tokenBucket(id, rate, subject).acquire());
    expect(await closed.degraded('rate', 'fail_closed')).toBe(1);
    expect(await openT.degraded('rate', 'fail_open')).toBe(2);

    await redis.start();
    await until(async () => (await closed.up()) === 1 && (await openT.up()) === 1);
    // A fresh Redis (no persistence): each bucket is full again, and the limit holds again.
    grant(await openT.store.tokenBucket(id, rate, subject).acquire());
    refusal(await openT.store.tokenBucket(id, rate, subject).acquire());
    expect(await openT.degraded('rate', 'fail_open')).toBe(2);
    expect(closed.lines.some((l) => l.msg === 'shared state connected; limits are decided by Redis')).toBe(
      true,
    );
  });
});

describe('one request decided by policy', () => {
  it('takes the steps in order until the first fail_closed kind, counting each decision', async () => {
    const dead = `redis://127.0.0.1:${redis.port === 1 ? 2 : 1}`;
    const t = await store(dead, 'rate=fail_open,concurrency=fail_closed,inflight=fail_open', { wait: false });
    const decision = await decideTogether([
      { limiter: t.store.tokenBucket('target:llama:rate', rate, subject), account: undefined },
      {
        limiter: t.store.concurrency('target:llama:concurrency', { max_concurrent_requests: 5 }, subject),
        account: undefined,
      },
      { limiter: t.store.accountInflight('account:llama', 'llama', { inflight_limit: 5 }), account: 'acme' },
    ])!;
    expect(decision.refusal?.code).toBe('concurrency_limit_exceeded');
    expect(decision.grants).toHaveLength(1);
    expect(await t.degraded('rate', 'fail_open')).toBe(1);
    expect(await t.degraded('concurrency', 'fail_closed')).toBe(1);
    // Never asked: nothing decided, nothing counted.
    expect(await t.degraded('inflight', 'fail_open')).toBe(0);
  });
});
