import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { spawnProgram } from '../helpers/process.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import {
  jsonReply,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { untilEquals } from '../helpers/wait.js';

// Two gateway processes pointed at one real Redis (`--shared-state`): the limits hold across both,
// a killed process's slots come back after the lease, and a Redis outage follows the failure policy.

let redis: RedisServer;
let fast: RecordingUpstream;
/** Answers with `holding` unless a test says otherwise. */
let slow: RecordingUpstream;
const holds: (() => void)[] = [];
const gateways: StartedGateway[] = [];
let prefixCounter = 0;

/** Streams one frame, then holds the body (and so the request's slots) until `releaseHeld()`. */
const holding: UpstreamHandler = async (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: {"n":1}\n\n');
  await new Promise<void>((resolve) => holds.push(resolve));
  res.end('data: [DONE]\n\n');
};

function releaseHeld(): void {
  for (const release of holds.splice(0)) release();
}

beforeAll(async () => {
  redis = await startRedis();
  fast = await startUpstream(jsonReply(200, { id: 'cmpl', object: 'chat.completion' }));
  slow = await startUpstream(holding);
}, 300_000);

afterAll(async () => {
  releaseHeld();
  await Promise.all([fast?.close(), slow?.close()]);
  await redis?.close();
});

afterEach(async () => {
  releaseHeld();
  slow.respondWith(holding);
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
  // A test that stopped Redis leaves it running again for the next one.
  await redis.start();
});

/** One key prefix per test: gateways of the same test share limits, tests never do. */
function newPrefix(): string {
  return `gw-test-${process.pid}-${prefixCounter++}:`;
}

async function sharedGateways(
  config: unknown,
  prefix: string,
  argsPerGateway: string[][],
): Promise<StartedGateway[]> {
  const started = await Promise.all(
    argsPerGateway.map((args) =>
      startGateway(config, {
        // A generous per-call budget: these tests are about sharing, not latency, and a loaded CI
        // machine must not turn a slow answer into a degraded decision.
        args: [
          '--shared-state',
          redis.url,
          '--shared-state-prefix',
          prefix,
          '--shared-state-timeout-ms',
          '1000',
          ...args,
        ],
      }),
    ),
  );
  gateways.push(...started);
  return started;
}

interface Answer {
  status: number;
  code: string | null;
  retryAfter: string | null;
  /** The `x-ratelimit-*` headers. */
  limits: Record<string, string>;
}

async function call(
  gateway: StartedGateway,
  model: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await response.text();
  let code: string | null = null;
  if (response.status !== 200) code = (JSON.parse(text) as { error: { code: string | null } }).error.code;
  const limits: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.startsWith('x-ratelimit-')) limits[name] = value;
  });
  return { status: response.status, code, retryAfter: response.headers.get('retry-after'), limits };
}

/** Opens a stream through the slow upstream and resolves once its headers arrived (slot held). */
async function hold(gateway: StartedGateway, model: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [], stream: true }),
  });
  expect(response.status).toBe(200);
  return { done: () => response.text().catch(() => '') };
}

async function metric(gateway: StartedGateway, name: string, labels: Record<string, string> = {}) {
  return metricValue(await gateway.metrics(), name, labels);
}

const waitForMetric = (gateway: StartedGateway, name: string, value: number) =>
  untilEquals(() => metric(gateway, name), value, name, 15_000);

const acme = { authorization: 'Bearer acme-key' };
const auth = { key_definitions: { acme: { key: 'acme-key', labels: { account: 'acme' } } } };

describe('token budgets shared by two gateway processes', () => {
  it("each response's usage is charged to one budget that both replicas read", async () => {
    // 100 prompt + 50 completion tokens per response.
    const metered = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'cmpl',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
        }),
      );
    });
    try {
      // 250 tokens, refilled at 6 a minute (0.1 a second).
      const config = {
        targets: { m: { url: metered.url, token_limit: { tokens_per_minute: 6, burst_tokens: 250 } } },
      };
      const [a, b] = await sharedGateways(config, newPrefix(), [[], []]);
      // The charge is sent when a response ends; give it a moment to land before the next request.
      const settle = () => sleep(200);
      const first = await call(a!, 'm'); // 250 -> 100
      expect(first.status).toBe(200);
      expect(first.limits).toEqual({
        'x-ratelimit-limit-tokens': '250',
        'x-ratelimit-remaining-tokens': '250',
        'x-ratelimit-reset-tokens': '0s',
      });
      await settle();
      const second = await call(b!, 'm'); // 100 -> -50
      expect(second.status).toBe(200);
      // The other replica's charge, read from Redis.
      expect(second.limits['x-ratelimit-remaining-tokens']).toBe('100');
      await settle();
      for (const gateway of [a!, b!]) {
        const refused = await call(gateway, 'm');
        expect(refused).toMatchObject({ status: 429, code: 'token_rate_limit' });
        expect(refused.limits['x-ratelimit-remaining-tokens']).toBe('0');
        // 50 tokens below zero at 0.1 a second.
        expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(495);
        expect(Number(refused.retryAfter)).toBeLessThanOrEqual(501);
      }
      expect(metered.requests).toHaveLength(2);
    } finally {
      await metered.close();
    }
  });
});

describe('limits shared by two gateway processes', () => {
  it('a burst of 5 is 5 successes in total across both', async () => {
    const config = {
      targets: { m: { url: fast.url, rate_limit: { requests_per_second: 0.001, burst_size: 5 } } },
    };
    const [a, b] = await sharedGateways(config, newPrefix(), [[], []]);
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => call(i % 2 ? a! : b!, 'm')));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(5);
    expect(answers.filter((r) => r.status === 429 && r.code === 'rate_limit')).toHaveLength(11);
    for (const gateway of [a!, b!]) expect(await metric(gateway, 'gateway_shared_state_up')).toBe(1);
  });

  it('the x-ratelimit headers count the requests of both, refusals included', async () => {
    // The key's bucket (3 at most) is tighter than the target's until it runs out.
    const config = {
      auth: {
        key_definitions: {
          acme: { key: 'acme-key', rate_limit: { requests_per_second: 0.001, burst_size: 3 } },
        },
      },
      targets: {
        m: { url: fast.url, keys: ['acme'], rate_limit: { requests_per_second: 0.001, burst_size: 10 } },
      },
    };
    const [a, b] = await sharedGateways(config, newPrefix(), [[], []]);
    const remaining: string[] = [];
    for (const gateway of [a!, b!, a!, b!]) {
      const answer = await call(gateway, 'm', acme);
      expect(answer.limits['x-ratelimit-limit-requests']).toBe('3');
      remaining.push(`${answer.status} ${answer.limits['x-ratelimit-remaining-requests']}`);
    }
    expect(remaining).toEqual(['200 2', '200 1', '200 0', '429 0']);
  });

  it('an in-flight, concurrency or batch slot held on one refuses on the other until released', async () => {
    const config = {
      auth,
      targets: {
        inflight: { url: slow.url, keys: ['acme'], inflight_limit: 1 },
        concurrency: { url: slow.url, concurrency_limit: { max_concurrent_requests: 1 } },
        batch: { url: slow.url, batch_inflight_limit: 1 },
      },
    };
    const dispatched = { 'x-gateway-dispatched': '1' };
    const [a, b] = await sharedGateways(config, newPrefix(), [
      ['--enforce-batch-inflight'],
      ['--enforce-batch-inflight'],
    ]);
    const held = [
      await hold(a!, 'inflight', acme),
      await hold(a!, 'concurrency'),
      await hold(a!, 'batch', dispatched),
    ];
    expect(await call(b!, 'inflight', acme)).toMatchObject({
      status: 429,
      code: 'inflight_limit_exceeded',
      retryAfter: '1',
    });
    expect(await call(b!, 'concurrency')).toMatchObject({ status: 429, code: 'concurrency_limit_exceeded' });
    expect(await call(b!, 'batch', dispatched)).toMatchObject({
      status: 529,
      code: 'batch_capacity_exceeded',
      retryAfter: '1',
    });
    releaseHeld();
    await Promise.all(held.map((h) => h.done()));
    slow.respondWith(jsonReply(200, { id: 'cmpl' }));
    expect((await call(b!, 'inflight', acme)).status).toBe(200);
    expect((await call(b!, 'concurrency')).status).toBe(200);
    expect((await call(b!, 'batch', dispatched)).status).toBe(200);
  });

  it("a SIGKILLed gateway's slots expire after the lease and the capacity returns", async () => {
    const config = { auth, targets: { m: { url: slow.url, keys: ['acme'], inflight_limit: 1 } } };
    const leaseSecs = 2;
    const leaseArgs = ['--shared-state-lease-secs', String(leaseSecs), '--shared-state-timeout-ms', '300'];
    const [a, b] = await sharedGateways(config, newPrefix(), [leaseArgs, leaseArgs]);
    const held = await hold(a!, 'm', acme);
    const cut = held.done();
    await a!.program.kill(); // SIGKILL: no release, no renewal
    await cut;
    const killedAt = Date.now();
    expect(await call(b!, 'm', acme)).toMatchObject({ status: 429, code: 'inflight_limit_exceeded' });
    slow.respondWith(jsonReply(200, { id: 'cmpl' }));
    let answer: Answer;
    for (;;) {
      answer = await call(b!, 'm', acme);
      if (answer.status === 200 || Date.now() - killedAt > 10_000) break;
      expect(answer.code).toBe('inflight_limit_exceeded');
      await sleep(100);
    }
    expect(answer.status).toBe(200);
    // Not before the lease could have run out (renewed at most a third of a lease before the kill).
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(((leaseSecs * 2) / 3) * 1000 - 100);
  });
});

describe('Redis stopped and restarted under load', () => {
  it('fail_closed refuses, fail_open grants, every degraded decision is counted, and Redis decides again once back', async () => {
    const config = {
      targets: {
        rated: { url: fast.url, rate_limit: { requests_per_second: 0.001, burst_size: 3 } },
        busy: { url: fast.url, concurrency_limit: { max_concurrent_requests: 50 } },
      },
    };
    const [closed, open] = await sharedGateways(config, newPrefix(), [
      ['--shared-state-failure', 'fail_closed'],
      ['--shared-state-failure', 'fail_open'],
    ]);
    const both = [closed!, open!];
    const alternate = (count: number) =>
      Promise.all(Array.from({ length: count }, (_, i) => call(both[i % 2]!, 'rated')));

    // Background load on another limited alias through the whole outage: every answer is a success or
    // the limit's own refusal, never an error or a hang.
    let loading = true;
    const background: Answer[] = [];
    const load = (async () => {
      while (loading) background.push(...(await Promise.all(both.map((g) => call(g, 'busy')))));
    })();

    try {
      // Redis up: one shared bucket of 3.
      const before = await alternate(8);
      expect(before.filter((r) => r.status === 200)).toHaveLength(3);

      await redis.stop();
      for (const gateway of both) await waitForMetric(gateway, 'gateway_shared_state_up', 0);
      const degradedBefore = {
        closed: (await metric(closed!, 'gateway_shared_state_degraded_total', { kind: 'rate' })) ?? 0,
        open: (await metric(open!, 'gateway_shared_state_degraded_total', { kind: 'rate' })) ?? 0,
      };
      for (let i = 0; i < 3; i++) {
        expect(await call(closed!, 'rated')).toMatchObject({ status: 429, code: 'rate_limit' });
        expect((await call(open!, 'rated')).status).toBe(200);
      }
      expect(
        await metric(closed!, 'gateway_shared_state_degraded_total', { kind: 'rate', policy: 'fail_closed' }),
      ).toBe(degradedBefore.closed + 3);
      expect(
        await metric(open!, 'gateway_shared_state_degraded_total', { kind: 'rate', policy: 'fail_open' }),
      ).toBe(degradedBefore.open + 3);
      const busyDegraded = (gateway: StartedGateway, policy: string) =>
        metric(gateway, 'gateway_shared_state_degraded_total', { kind: 'concurrency', policy });
      expect(await busyDegraded(closed!, 'fail_closed')).toBeGreaterThan(0);
      expect(await busyDegraded(open!, 'fail_open')).toBeGreaterThan(0);
      const warned = closed!.program.logs.find(
        (l) => l.msg === 'shared limit unavailable: refused by failure policy' && l.kind === 'rate',
      );
      expect(warned).toMatchObject({ level: 'warn', kind: 'rate', policy: 'fail_closed' });

      await redis.start();
      for (const gateway of both) await waitForMetric(gateway, 'gateway_shared_state_up', 1);
      const degradedAfter = await metric(open!, 'gateway_shared_state_degraded_total', { kind: 'rate' });
      // The restarted Redis is empty: a fresh shared bucket of 3, enforced across both again.
      const after = await alternate(8);
      expect(after.filter((r) => r.status === 200)).toHaveLength(3);
      expect(after.filter((r) => r.code === 'rate_limit')).toHaveLength(5);
      expect(await metric(open!, 'gateway_shared_state_degraded_total', { kind: 'rate' })).toBe(
        degradedAfter,
      );
    } finally {
      loading = false;
      await load;
    }
    expect(background.length).toBeGreaterThan(0);
    const outcomes = new Set(background.map((r) => `${r.status} ${r.code}`));
    for (const outcome of outcomes) expect(['200 null', '429 concurrency_limit_exceeded']).toContain(outcome);
  });

  it('starts while Redis is unreachable, reports it, and decides by the default policy', async () => {
    const config = {
      targets: {
        rated: { url: fast.url, rate_limit: { requests_per_second: 0.001, burst_size: 1 } },
        batch: { url: fast.url, batch_inflight_limit: 5 },
      },
    };
    const gateway = await startGateway(config, {
      args: ['--shared-state', 'redis://user:hunter2@127.0.0.1:1', '--enforce-batch-inflight'],
    });
    gateways.push(gateway);
    const logs = gateway.program.logs;
    expect(logs.find((l) => l.msg?.startsWith('shared state not reachable at startup'))).toMatchObject({
      level: 'warn',
      sharedState: 'redis://127.0.0.1:1',
    });
    expect(JSON.stringify(logs)).not.toContain('hunter2');
    expect(await metric(gateway, 'gateway_shared_state_up')).toBe(0);
    // Defaults: rate fails open, batch fails closed. The bucket's level is unknown: no rate-limit
    // headers, and the provider's own (its limits, not the client's) are still dropped.
    fast.respondWith(
      jsonReply(200, { id: 'cmpl', object: 'chat.completion' }, { 'x-ratelimit-remaining-requests': '9999' }),
    );
    try {
      for (let i = 0; i < 2; i++) {
        const answer = await call(gateway, 'rated');
        expect(answer.status).toBe(200);
        expect(answer.limits).toEqual({});
      }
    } finally {
      fast.respondWith(jsonReply(200, { id: 'cmpl', object: 'chat.completion' }));
    }
    expect(await call(gateway, 'batch', { 'x-gateway-dispatched': '1' })).toMatchObject({
      status: 529,
      code: 'batch_capacity_exceeded',
    });
  });
});

describe('shutdown', () => {
  it('releases the slot of a stream cut at the drain deadline, then closes the Redis connection', async () => {
    const config = { auth, targets: { m: { url: slow.url, keys: ['acme'], inflight_limit: 1 } } };
    const prefix = newPrefix();
    const [a, b] = await sharedGateways(config, prefix, [['--shutdown-timeout-secs', '1'], []]);
    const held = await hold(a!, 'm', acme);
    const cut = held.done();
    a!.program.proc.kill('SIGTERM');
    // The stream outlives the 1 s drain deadline and is cut: its slot is released, not left to expire.
    const { code } = await a!.program.exited;
    await cut;
    expect(code).toBe(1);
    expect(a!.program.logs.some((l) => l.msg === 'shared state connection closed')).toBe(true);
    expect(a!.program.logs.some((l) => l.msg?.toString().startsWith('shared state unreachable'))).toBe(false);
    slow.respondWith(jsonReply(200, { id: 'cmpl' }));
    expect((await call(b!, 'm', acme)).status).toBe(200);
  });
});

describe('shared-state flags', () => {
  async function run(args: string[], env: Record<string, string> = {}) {
    const program = spawnProgram('gateway', args, { env });
    const { code } = await program.exited;
    return { code, text: program.text() };
  }

  it.each([
    [['--shared-state', 'http://127.0.0.1:6379'], '--shared-state must be a redis://host:port'],
    [['--shared-state', 'not a url'], '--shared-state must be a redis:// or rediss:// URL.'],
    [['--shared-state-failure', 'fail_maybe'], '--shared-state-failure: "fail_maybe" is not a policy'],
    [['--shared-state-failure', 'rate=fail_open,rate=fail_closed'], 'rate is given twice'],
    [['--shared-state-lease-secs', '0'], '--shared-state-lease-secs must be positive'],
    [['--shared-state-timeout-ms', '0'], '--shared-state-timeout-ms must be between 1 and 10000'],
    [['--shared-state-prefix', 'has space'], '--shared-state-prefix must be 1 to 64 printable characters'],
    [
      ['--shared-state-lease-secs', '0.1', '--shared-state-timeout-ms', '50'],
      'must be at least three times --shared-state-timeout-ms',
    ],
  ])('rejects %j with exit code 2', async (args, message) => {
    const { code, text } = await run(['-f', '/nonexistent.json', ...args]);
    expect(code).toBe(2);
    expect(text).toContain(message);
  });

  it('never echoes a password from a bad URL, and reads the URL from the environment', async () => {
    const { code, text } = await run(['-f', '/nonexistent.json'], {
      GATEWAY_SHARED_STATE: 'http://user:hunter2@example:1',
    });
    expect(code).toBe(2);
    expect(text).toContain('got "http://example:1"');
    expect(text).not.toContain('hunter2');
  });
});
