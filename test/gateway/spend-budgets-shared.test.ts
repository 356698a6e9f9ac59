import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import {
  completion,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { until, untilEquals } from '../helpers/wait.js';

/**
 * Spend budgets shared through one real Redis by two gateway processes (`--shared-state`): they
 * reserve from one budget, so together they cannot overspend it; a gateway restarted keeps the
 * spend; and while Redis does not answer, budgets fail closed and the settlements that could not be
 * sent are recorded once it answers again.
 */

const ALICE = 'sk-shared-budget-alice-1f7c';
const PRICING = { prompt_per_million: 1000, completion_per_million: 2000 };
const REPORTED_PROMPT = 20;
const MAX_TOKENS = 10;
const COST = REPORTED_PROMPT * 0.001 + MAX_TOKENS * 0.002;
const BODY = JSON.stringify({
  model: 'chat',
  max_tokens: MAX_TOKENS,
  messages: [{ role: 'user', content: 'hi' }],
});
const RESERVATION = Math.ceil(Buffer.byteLength(BODY) / 4) * 0.001 + MAX_TOKENS * 0.002;

let redis: RedisServer;
let upstream: RecordingUpstream;
let delayMs = 0;
const held: (() => void)[] = [];
let holdNext = false;
const gateways: StartedGateway[] = [];
let prefixCounter = 0;

const answering: UpstreamHandler = async (_req, res) => {
  if (holdNext) await new Promise<void>((resolve) => held.push(resolve));
  else if (delayMs > 0) await sleep(delayMs);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify(
      completion('m', {
        usage: {
          prompt_tokens: REPORTED_PROMPT,
          completion_tokens: MAX_TOKENS,
          total_tokens: REPORTED_PROMPT + MAX_TOKENS,
        },
      }),
    ),
  );
};

beforeAll(async () => {
  redis = await startRedis();
  upstream = await startUpstream(answering);
}, 300_000);

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await upstream?.close();
  await redis?.close();
});

afterEach(async () => {
  redis.resume();
  holdNext = false;
  delayMs = 0;
  for (const release of held.splice(0)) release();
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
});

function configWith(amount: number) {
  return {
    auth: {
      key_definitions: {
        alice: { key: ALICE, budget: { amount, window: 'month', time_zone: 'America/New_York' } },
      },
    },
    targets: { chat: { url: upstream.url, keys: ['alice'], pricing: PRICING } },
  };
}

async function sharedGateway(config: unknown, prefix: string, extra: string[] = []): Promise<StartedGateway> {
  const gateway = await startGateway(config, {
    args: [
      '--shared-state',
      redis.url,
      '--shared-state-prefix',
      prefix,
      '--shared-state-timeout-ms',
      '500',
      ...extra,
    ],
  });
  gateways.push(gateway);
  return gateway;
}

function post(gateway: StartedGateway): Promise<Response> {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
    body: BODY,
  });
}

async function spent(gateway: StartedGateway): Promise<number> {
  return (
    metricValue(await gateway.metrics(), 'gateway_budget_spent', { scope: 'key', budget: 'alice' }) ??
    Number.NaN
  );
}

describe('spend budgets shared through Redis', () => {
  it('two replicas reserve from one budget: 200 concurrent requests across both never overspend it, and a restart keeps the spend', async () => {
    const prefix = `gw-budget-${process.pid}-${prefixCounter++}:`;
    const amount = Number((RESERVATION * 6.5).toFixed(6));
    const [a, b] = await Promise.all([
      sharedGateway(configWith(amount), prefix),
      sharedGateway(configWith(amount), prefix),
    ]);
    delayMs = 300;
    const statuses = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const response = await post(i % 2 === 0 ? a! : b!);
        await response.text();
        return response.status;
      }),
    );
    const served = statuses.filter((s) => s === 200).length;
    expect(served + statuses.filter((s) => s === 429).length).toBe(200);
    expect(served).toBe(Math.floor(amount / RESERVATION));
    // Both replicas report the one shared figure.
    await untilEquals(async () => (await spent(a!)).toFixed(9), (served * COST).toFixed(9));
    expect((await spent(b!)).toFixed(9)).toBe((served * COST).toFixed(9));
    expect(await spent(a!)).toBeLessThanOrEqual(amount);

    // A gateway started again reads the same spend from Redis.
    await a!.stop();
    gateways.splice(gateways.indexOf(a!), 1);
    const again = await sharedGateway(configWith(amount), prefix);
    expect((await spent(again)).toFixed(9)).toBe((served * COST).toFixed(9));

    // A reload that raises the amount keeps the shared spend, and the room it leaves is the new
    // amount's.
    await again.writeConfig(configWith(amount * 2));
    await again.waitForReloads(1);
    const text = await again.metrics();
    expect(metricValue(text, 'gateway_budget_limit', { scope: 'key', budget: 'alice' })).toBeCloseTo(
      amount * 2,
      9,
    );
    expect((await spent(again)).toFixed(9)).toBe((served * COST).toFixed(9));
    expect((await post(again)).status).toBe(200);
  }, 90_000);

  it('Redis not answering: budgets fail closed (503 budget_unavailable, counted), and a settlement made meanwhile is recorded when it answers again', async () => {
    const prefix = `gw-budget-${process.pid}-${prefixCounter++}:`;
    const gateway = await sharedGateway(configWith(100), prefix);
    expect((await post(gateway)).status).toBe(200);
    await untilEquals(async () => (await spent(gateway)).toFixed(9), COST.toFixed(9));

    // A request admitted now, whose provider answers only once Redis has stopped answering.
    holdNext = true;
    const pending = post(gateway);
    await until(() => held.length === 1);
    holdNext = false;
    redis.pause();

    const refused = await post(gateway);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('budget_unavailable');
    expect(refused.headers.get('retry-after')).toBe('1');

    held.shift()!();
    expect((await pending).status).toBe(200);
    const text = await gateway.metrics();
    expect(
      metricValue(text, 'gateway_shared_state_degraded_total', { kind: 'budget', policy: 'fail_closed' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(text, 'gateway_budget_refusals_total', { scope: 'key', budget: 'alice' }),
    ).toBeGreaterThanOrEqual(1);

    redis.resume();
    // Both requests charged, once each: the settlement that timed out was sent again.
    await untilEquals(async () => (await spent(gateway)).toFixed(9), (2 * COST).toFixed(9), 'spent', 15_000);
    // The settlement that timed out waited in the gateway and was sent again; the server, which ran
    // the first one too once it woke, charged it once.
    await gateway.program.waitForLog(
      (l) => l.msg === 'spend settlements that waited for Redis are recorded',
      10_000,
    );
    await sleep(1500);
    expect((await spent(gateway)).toFixed(9)).toBe((2 * COST).toFixed(9));
    expect(
      metricValue(await gateway.metrics(), 'gateway_budget_reserved', { scope: 'key', budget: 'alice' }),
    ).toBe(0);
    expect((await post(gateway)).status).toBe(200);
  }, 60_000);
});
