import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SharedSpendBudget } from '../../../src/gateway/limits/redis/spend.js';
import { budgetWindow } from '../../../src/gateway/limits/spend/window.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { openStore, sleep, uniquePrefix, type TestStore } from './helpers.js';

// The spend scripts against a real Redis: reservations are all or nothing across budgets and
// replicas, a replica that stops renewing gives its reservations back, and the server's clock
// decides when a calendar window is over.

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

async function store(prefix: string, leaseMs?: number): Promise<TestStore> {
  const opened = await openStore(redis.url, { prefix, leaseMs });
  open.push(opened);
  return opened;
}

const params = (amount: number, window = 'month') => ({
  amount,
  window: budgetWindow(window, 'UTC'),
  defaultMaxTokens: 10,
});

describe('shared spend budgets', () => {
  it('reserve all or nothing: the budget without room refuses and the others keep theirs', async () => {
    const { store: s } = await store(uniquePrefix());
    const key = s.spendBudget('key:alice:budget', 'key', 'alice', params(10));
    const account = s.spendBudget('account-budget:acme', 'account', 'acme', params(3));
    const first = await key.book.reserve([key, account], [2, 2]);
    expect(first.ok).toBe(true);
    const refused = await key.book.reserve([key, account], [2, 2]);
    // Only the reservation in flight stands in the way: a second.
    expect(refused).toMatchObject({
      ok: false,
      code: 'budget_exceeded',
      scope: 'account',
      subject: 'acme',
      retryAfterSeconds: 1,
    });
    expect(await key.book.snapshot([key, account])).toEqual([
      { spent: 0, reserved: 2 },
      { spent: 0, reserved: 2 },
    ]);
    if (first.ok) first.settle(1.5);
    await sleep(100);
    expect(await key.book.snapshot([key, account])).toEqual([
      { spent: 1.5, reserved: 0 },
      { spent: 1.5, reserved: 0 },
    ]);
    // Now what was spent stands in the way: until the month ends.
    const spentOut = await key.book.reserve([key, account], [2, 2]);
    const monthEnd = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1);
    expect(spentOut.ok ? undefined : spentOut.retryAfterSeconds).toBeCloseTo(
      (monthEnd - Date.now()) / 1000,
      -1,
    );
  });

  it('a replica that stops renewing gives its reservations back when their leases lapse', async () => {
    const prefix = uniquePrefix();
    const gone = await store(prefix, 300);
    const live = await store(prefix, 300);
    const budget = (t: TestStore) => t.store.spendBudget('key:alice:budget', 'key', 'alice', params(5));
    expect((await budget(gone).book.reserve([budget(gone)], [4])).ok).toBe(true);
    // The live replica renews its own reservation across several leases.
    expect((await budget(live).book.reserve([budget(live)], [1])).ok).toBe(true);
    await gone.store.close();
    open.splice(open.indexOf(gone), 1);
    expect((await budget(live).book.reserve([budget(live)], [1])).ok).toBe(false);
    await sleep(900);
    expect(await budget(live).book.snapshot([budget(live)])).toEqual([{ spent: 0, reserved: 1 }]);
    expect((await budget(live).book.reserve([budget(live)], [4])).ok).toBe(true);
  });

  it('a replica that dies gives its reservations back even when no other replica touches the budget', async () => {
    const prefix = uniquePrefix();
    const gone = await store(prefix, 300);
    const budget = gone.store.spendBudget('account-budget:acme', 'account', 'acme', params(5));
    expect((await budget.book.reserve([budget], [4])).ok).toBe(true);
    await gone.store.close();
    open.splice(open.indexOf(gone), 1);
    await sleep(700);
    // Its reservation's sets expired with their last lease; a replica that reads it later sees none.
    const reader = await store(prefix);
    const again = reader.store.spendBudget('account-budget:acme', 'account', 'acme', params(5));
    expect(await again.book.snapshot([again])).toEqual([{ spent: 0, reserved: 0 }]);
    expect((await again.book.reserve([again], [5])).ok).toBe(true);
  });

  it('every key the scripts write expires; reading a budget writes nothing', async () => {
    const prefix = uniquePrefix();
    const { store: s } = await store(prefix);
    for (const window of ['month', '10s']) {
      const budget = s.spendBudget(
        `key:k-${window}:budget`,
        'key',
        'k',
        params(1, window),
      ) as SharedSpendBudget;
      expect(await budget.book.snapshot([budget])).toEqual([{ spent: 0, reserved: 0 }]);
      // A refused first reservation writes nothing either.
      expect((await budget.book.reserve([budget], [2])).ok).toBe(false);
      expect(await admin.exists(...budget.keys)).toBe(0);
      const granted = await budget.book.reserve([budget], [0.5]);
      if (!granted.ok) throw new Error(granted.code);
      granted.settle(0.25);
      await sleep(100);
      for (const key of budget.keys) expect(await admin.pttl(key), key).not.toBe(-1);
    }
  });

  it("the server's clock ends a calendar window, whatever the replica's clock said", async () => {
    const { store: s } = await store(uniquePrefix());
    const budget = s.spendBudget('key:alice:budget', 'key', 'alice', params(10)) as SharedSpendBudget;
    const now = Date.now();
    const hour = 3_600_000;
    const keys = [...budget.keys];
    // Charged in [now - 1h, now + 1h).
    expect(
      await s.client.settleSpend(keys, [30_000, 'r1', 4, 'c', now - hour, now + hour, now + 2 * hour]),
    ).toBe(true);
    const read = async (args: (string | number)[]) => {
      const answer = await s.client.readSpend(keys, args);
      if (!answer.ok) throw new Error(answer.reason);
      return Number(answer.reply[0]);
    };
    expect(await read(['c', now - hour, now + hour, now + 2 * hour])).toBe(4);
    // A replica whose clock still says the window runs until a moment ago: the server is past it,
    // so the next window is current, and it has spent nothing.
    expect(await read(['c', now - hour, now - 1, now + hour])).toBe(0);
  });
});
