import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConcurrencyPermits } from '../../../src/gateway/limits/concurrency.js';
import { accountKey, decideTogether } from '../../../src/gateway/limits/redis/limiters.js';
import type { Grant } from '../../../src/gateway/limits/types.js';
import { LimitLevels } from '../../../src/gateway/limits/limit-headers.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { grant, openStore, refusal, sleep, uniquePrefix, type TestStore } from './helpers.js';

// The Lua scripts and the shared limiters against a real Redis server. Two stores on one prefix stand
// for two replicas: they share nothing but Redis.

let redis: RedisServer;
let admin: Redis;
const open: TestStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
}, 300_000);

afterAll(async () => {
  admin?.disconnect();
  await redis?.close();
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.store.close()));
});

async function replicas(
  count: number,
  options: { leaseMs?: number; prefix?: string } = {},
): Promise<TestStore[]> {
  const prefix = options.prefix ?? uniquePrefix();
  const stores: TestStore[] = [];
  for (let i = 0; i < count; i++)
    stores.push(await openStore(redis.url, { prefix, leaseMs: options.leaseMs }));
  open.push(...stores);
  return stores;
}

const target = { scope: 'target' as const, subject: 'llama' };

describe('shared token bucket', () => {
  it('gives exactly burst_size grants across replicas, however the calls interleave', async () => {
    const [a, b] = await replicas(2);
    const params = { requests_per_second: 0.001, burst_size: 5 };
    const limiters = [a!, b!].map((t) => t.store.tokenBucket('target:llama:rate', params, target));
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.acquire()));
    expect(answers.filter((answer) => answer.ok)).toHaveLength(5);
    const refused = refusal(answers.find((answer) => !answer.ok)!);
    expect([refused.status, refused.code, refused.scope, refused.subject]).toEqual([
      429,
      'rate_limit',
      'target',
      'llama',
    ]);
  });

  it('refills by server time up to the capacity, never beyond', async () => {
    const [a] = await replicas(1);
    // One token per 200 ms: the refusal right after the burst only needs the calls to come within
    // 200 ms of each other, even on a loaded machine.
    const limiter = a!.store.tokenBucket(
      'target:llama:rate',
      { requests_per_second: 5, burst_size: 2 },
      target,
    );
    grant(await limiter.acquire());
    grant(await limiter.acquire());
    refusal(await limiter.acquire());
    // 1 s at 5/s refills 5 tokens' worth; the capacity keeps 2.
    await sleep(1000);
    grant(await limiter.acquire());
    grant(await limiter.acquire());
    refusal(await limiter.acquire());
  });

  it('refills at requests_per_second', async () => {
    const [a] = await replicas(1);
    const perSecond = 100;
    const limiter = a!.store.tokenBucket(
      'target:llama:rate',
      { requests_per_second: perSecond, burst_size: 1000 },
      target,
    );
    // Empty the bucket, let it refill for a while, then count what it gives. The server's refill
    // happened between the emptying call and the last (refused) call, so the count is bounded by the
    // times around those calls, however late this process's timers fire.
    let emptySent = performance.now();
    while ((await limiter.acquire()).ok) emptySent = performance.now();
    const emptied = performance.now();
    await sleep(300);
    let granted = 0;
    let lastSent = performance.now();
    while ((await limiter.acquire()).ok) {
      granted++;
      lastSent = performance.now();
    }
    const done = performance.now();
    expect(granted).toBeGreaterThanOrEqual(Math.floor(((lastSent - emptied) * perSecond) / 1000) - 1);
    expect(granted).toBeLessThanOrEqual(Math.ceil(((done - emptySent) * perSecond) / 1000) + 1);
    expect(granted).toBeGreaterThanOrEqual(25);
  });

  it('keeps the level when a reload changes the parameters (no fresh burst)', async () => {
    const [a] = await replicas(1);
    const first = a!.store.tokenBucket(
      'key:alice:rate',
      { requests_per_second: 0.001, burst_size: 3 },
      target,
    );
    for (let i = 0; i < 3; i++) grant(await first.acquire());
    const reloaded = a!.store.tokenBucket(
      'key:alice:rate',
      { requests_per_second: 0.001, burst_size: 10 },
      target,
    );
    refusal(await reloaded.acquire());
  });

  it('lets an idle bucket expire from Redis (a missing key reads as full)', async () => {
    const [a] = await replicas(1);
    const limiter = a!.store.tokenBucket('target:x:rate', { requests_per_second: 10, burst_size: 5 }, target);
    grant(await limiter.acquire());
    const ttl = await admin.pttl(a!.store.keyOf('target:x:rate'));
    // Full again after 0.5 s, plus a second of margin.
    expect(ttl).toBeGreaterThan(1000);
    expect(ttl).toBeLessThanOrEqual(1500);
  });
});

describe('shared counting slots', () => {
  it('share one concurrency count across replicas and give permits back on release', async () => {
    const [a, b] = await replicas(2);
    const params = { max_concurrent_requests: 2 };
    const onA = a!.store.concurrency('target:llama:concurrency', params, target);
    const onB = b!.store.concurrency('target:llama:concurrency', params, target);
    const first = grant(await onA.acquire());
    grant(await onB.acquire());
    const refused = refusal(await onA.acquire());
    expect([refused.code, refused.limit]).toEqual(['concurrency_limit_exceeded', 2]);
    refusal(await onB.acquire());
    first.release();
    await admin.ping(); // the release is fire-and-forget; one round trip later it has landed
    grant(await onB.acquire());
  });

  it('releases idempotently: a second release never frees another request slot', async () => {
    const [a] = await replicas(1);
    const limiter = a!.store.concurrency('target:llama:concurrency', { max_concurrent_requests: 2 }, target);
    const first = grant(await limiter.acquire());
    const second = grant(await limiter.acquire());
    first.release();
    first.release();
    first.release();
    await admin.ping();
    expect(await admin.zcard(a!.store.keyOf('target:llama:concurrency'))).toBe(1);
    grant(await limiter.acquire());
    refusal(await limiter.acquire());
    second.release();
    expect(a!.store.heldLeases).toBe(1);
  });

  it('counts account in-flight per account and alias, with overrides, across replicas', async () => {
    const [a, b] = await replicas(2);
    const params = { inflight_limit: 1, account_inflight_limits: { big: 2 } };
    const onA = a!.store.accountInflight('account:llama', 'llama', params);
    const onB = b!.store.accountInflight('account:llama', 'llama', params);
    const otherAlias = b!.store.accountInflight('account:qwen', 'qwen', params);
    grant(await onA.acquire('acme'));
    const refused = refusal(await onB.acquire('acme'));
    expect([refused.status, refused.code, refused.account, refused.alias, refused.retryAfterSeconds]).toEqual(
      [429, 'inflight_limit_exceeded', 'acme', 'llama', 1],
    );
    grant(await onB.acquire('other')); // another account has its own count
    grant(await otherAlias.acquire('acme')); // and another alias too
    grant(await onA.acquire('big'));
    grant(await onB.acquire('big'));
    refusal(await onA.acquire('big'));
    // Requests without an account, and the alias total, stay in this process.
    for (let i = 0; i < 5; i++) grant(await onA.acquire(undefined));
    expect(onA.inFlight()).toBe(7);
    expect(await admin.zcard(accountKey(a!.store.keyOf('account:llama'), 'acme'))).toBe(1);
  });

  it('keeps accounts whose names look like separators apart', async () => {
    const [a] = await replicas(1);
    const limiter = a!.store.accountInflight('account:llama', 'llama', { inflight_limit: 1 });
    grant(await limiter.acquire('a@b'));
    grant(await limiter.acquire('a'));
    grant(await limiter.acquire('a%40b'));
    refusal(await limiter.acquire('a@b'));
  });

  it('caps batch in flight per alias with 529 batch_capacity_exceeded', async () => {
    const [a, b] = await replicas(2);
    const params = { batch_inflight_limit: 2, enforce: true };
    const onA = a!.store.batch('batch:llama', 'llama', params);
    const onB = b!.store.batch('batch:llama', 'llama', params);
    grant(await onA.acquire());
    grant(await onB.acquire());
    const refused = refusal(await onA.acquire());
    expect([refused.status, refused.code, refused.type, refused.retryAfterSeconds]).toEqual([
      529,
      'batch_capacity_exceeded',
      'overloaded_error',
      1,
    ]);
  });

  it('keeps counting held slots when a reload changes the limit', async () => {
    const [a] = await replicas(1);
    const old = a!.store.concurrency('key:alice:concurrency', { max_concurrent_requests: 3 }, target);
    const held: Grant[] = [];
    for (let i = 0; i < 3; i++) held.push(grant(await old.acquire()));
    const lowered = a!.store.concurrency('key:alice:concurrency', { max_concurrent_requests: 2 }, target);
    refusal(await lowered.acquire());
    held.pop()!.release();
    held.pop()!.release();
    grant(await lowered.acquire());
    refusal(await lowered.acquire());
  });
});

describe('leases', () => {
  it('a replica that stops renewing (crashed) loses its slots after the lease', async () => {
    const [a, b] = await replicas(2, { leaseMs: 1000 });
    const params = { max_concurrent_requests: 1 };
    grant(await a!.store.concurrency('target:llama:concurrency', params, target).acquire());
    // No release, no renewal: as if the process died holding the slot.
    await a!.store.close();
    const onB = b!.store.concurrency('target:llama:concurrency', params, target);
    refusal(await onB.acquire());
    await sleep(1200);
    grant(await onB.acquire());
  });

  it('a live replica renews its slots, so a long request keeps its slot past the lease', async () => {
    // Renewed every 400 ms: only a stall of 800 ms could let it lapse.
    const [a, b] = await replicas(2, { leaseMs: 1200 });
    const params = { inflight_limit: 1 };
    const held = grant(await a!.store.accountInflight('account:llama', 'llama', params).acquire('acme'));
    const onB = b!.store.accountInflight('account:llama', 'llama', params);
    await sleep(2000);
    refusal(await onB.acquire('acme'));
    held.release();
    await admin.ping();
    grant(await onB.acquire('acme'));
  });

  it('renewal puts held slots back after Redis lost them (restart without persistence)', async () => {
    const [a] = await replicas(1, { leaseMs: 600 });
    const limiter = a!.store.concurrency('target:llama:concurrency', { max_concurrent_requests: 1 }, target);
    grant(await limiter.acquire());
    const key = a!.store.keyOf('target:llama:concurrency');
    await admin.del(key);
    // Renewed every 200 ms: wait for the first renewal after the loss.
    const deadline = Date.now() + 5000;
    while ((await admin.zcard(key)) === 0 && Date.now() < deadline) await sleep(20);
    expect(await admin.zcard(key)).toBe(1);
    refusal(await limiter.acquire());
  });
});

describe('one request, one round trip', () => {
  async function scriptCalls(): Promise<number> {
    const stats = await admin.info('commandstats');
    let calls = 0;
    for (const match of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  }

  it('decides every limiter of a request in one script call, as asking them in order would', async () => {
    const [a] = await replicas(1);
    const store = a!.store;
    const keyRate = store.tokenBucket(
      'key:alice:rate',
      { requests_per_second: 0.001, burst_size: 2 },
      target,
    );
    const targetRate = store.tokenBucket(
      'target:llama:rate',
      { requests_per_second: 0.001, burst_size: 5 },
      target,
    );
    const concurrency = store.concurrency('target:llama:concurrency', { max_concurrent_requests: 1 }, target);
    const inflight = store.accountInflight('account:llama', 'llama', { inflight_limit: 5 });
    const asks = [
      { limiter: keyRate, account: undefined },
      { limiter: targetRate, account: undefined },
      { limiter: concurrency, account: undefined },
      { limiter: inflight, account: 'acme' },
    ];

    const before = await scriptCalls();
    const first = await decideTogether(asks)!;
    expect(await scriptCalls()).toBe(before + 1);
    expect(first.refusal).toBeUndefined();
    expect(first.grants).toHaveLength(4);

    // The concurrency slot is held: the second request stops there, after spending both tokens, and
    // never takes an in-flight slot.
    const second = await decideTogether(asks)!;
    expect(second.refusal?.code).toBe('concurrency_limit_exceeded');
    expect(second.grants).toHaveLength(2);
    const inflightKey = accountKey(store.keyOf('account:llama'), 'acme');
    expect(await admin.zcard(inflightKey)).toBe(1);

    // The request's two slots go back together, in one call.
    const beforeRelease = await scriptCalls();
    for (const grant of first.grants) grant.release();
    await sleep(50);
    expect(await scriptCalls()).toBe(beforeRelease + 1);
    expect(await admin.zcard(inflightKey)).toBe(0);
    // The key bucket is empty now: the third request stops at the first step and spends nothing.
    const third = await decideTogether(asks)!;
    expect(third.refusal?.code).toBe('rate_limit');
    expect(third.grants).toHaveLength(0);
    const level = Number(await admin.hget(store.keyOf('target:llama:rate'), 'tokens'));
    expect(Math.round(level)).toBe(3);
  });

  it('reports the level of every bucket and budget, read without taking after a refusal', async () => {
    const [a] = await replicas(1);
    const store = a!.store;
    const budget = store.tokenBudget(
      'key:alice:tokens',
      { tokens_per_minute: 60, burst_tokens: 100 },
      'key',
      'alice',
    );
    const rate = store.tokenBucket(
      'target:llama:rate',
      { requests_per_second: 0.001, burst_size: 5 },
      target,
    );
    const asks = [
      { limiter: budget, account: undefined },
      { limiter: rate, account: undefined },
    ];
    const admitted = new LimitLevels();
    expect((await decideTogether(asks, admitted)!).refusal).toBeUndefined();
    expect(admitted.headers()).toMatchObject({
      'x-ratelimit-remaining-requests': '4',
      'x-ratelimit-remaining-tokens': '100',
    });

    // 150 tokens take the budget to -50: refused at the first step, the bucket is only read.
    budget.charge(150);
    await sleep(50);
    const refused = new LimitLevels();
    expect((await decideTogether(asks, refused)!).refusal?.code).toBe('token_rate_limit');
    expect(refused.headers()).toMatchObject({
      'x-ratelimit-limit-requests': '5',
      'x-ratelimit-remaining-requests': '4',
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '0',
    });
    expect(Math.round(Number(await admin.hget(store.keyOf('target:llama:rate'), 'tokens')))).toBe(4);
  });

  it('grants the local steps before a refusal, and none after it', async () => {
    const [a] = await replicas(1);
    const store = a!.store;
    const inflight = store.accountInflight('account:llama', 'llama', { inflight_limit: 1 });
    const batch = store.batch('batch:llama', 'llama', { batch_inflight_limit: 1, enforce: true });
    grant(await batch.acquire());
    const decision = await decideTogether([
      { limiter: inflight, account: undefined }, // no account: local, never refused
      { limiter: batch, account: undefined },
      { limiter: inflight, account: 'acme' },
    ])!;
    expect(decision.refusal?.code).toBe('batch_capacity_exceeded');
    expect(decision.grants).toHaveLength(1);
    expect(inflight.inFlight()).toBe(1);
    expect(await admin.exists(accountKey(store.keyOf('account:llama'), 'acme'))).toBe(0);
  });

  it('leaves limiters of different stores, or in-memory ones, to be asked one by one', async () => {
    const [a, b] = await replicas(2);
    const onA = a!.store.concurrency('c', { max_concurrent_requests: 1 }, target);
    const onB = b!.store.concurrency('c', { max_concurrent_requests: 1 }, target);
    expect(
      decideTogether([
        { limiter: onA, account: undefined },
        { limiter: onB, account: undefined },
      ]),
    ).toBe(undefined);
    const local = new ConcurrencyPermits({ max_concurrent_requests: 1 }, target);
    expect(
      decideTogether([
        { limiter: onA, account: undefined },
        { limiter: local, account: undefined },
      ]),
    ).toBe(undefined);
    expect(decideTogether([{ limiter: local, account: undefined }])).toBe(undefined);
    expect(decideTogether([])).toBe(undefined);
  });
});
