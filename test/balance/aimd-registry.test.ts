import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AimdMetrics } from '../../src/gateway/balance/aimd-metrics.js';
import {
  AimdRegistry,
  describePool,
  sameParameters,
  type PoolDescriptor,
} from '../../src/gateway/balance/aimd-registry.js';
import { AIMD_DEFAULTS, TargetSchema, resolveAimd } from '../../src/gateway/config/schema/index.js';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { feed, metricValue, scripted, TEST_AIMD } from './helpers.js';

function setup() {
  const prom = new Registry();
  const clock = new ManualClock(0);
  const registry = new AimdRegistry({
    metrics: new AimdMetrics(prom, 'gateway'),
    clock,
    random: scripted([]),
  });
  const read = (name: string, pool = 'llama', model = 'llama', labels: Record<string, string> = {}) =>
    metricValue(prom, `gateway_${name}`, { model, pool, ...labels });
  return { prom, clock, registry, read };
}

/** An eligible pool of `llama` with TEST_AIMD parameters; fields can be overridden. */
function pool(overrides: Partial<PoolDescriptor> = {}): PoolDescriptor {
  return {
    key: 'llama',
    model: 'llama',
    providers: ['primary', 'backup'],
    eligible: true,
    aimd: TEST_AIMD,
    firstTokenTimeoutMs: 3000,
    ...overrides,
  };
}

/** Rebuilds with one pool and returns its controller, which must exist. */
function activeController(registry: AimdRegistry, descriptor: PoolDescriptor) {
  const controller = registry.rebuild([descriptor]).get(descriptor.key);
  expect(controller).toBeDefined();
  return controller!;
}

describe('describePool', () => {
  // Which targets are eligible is aimdApplies' truth table (test/config/schema-helpers.test.ts).
  it('describes validated targets with the eligibility aimdApplies decides', () => {
    const [pooled, optedOut, single] = [
      {
        providers: [{ url: 'http://a', name: 'a' }, { url: 'http://b' }],
        strategy: 'priority',
        fallback: { aimd: { latency_budget_ms: 500 }, first_token_timeout_ms: 900 },
      },
      {
        providers: [{ url: 'http://a' }, { url: 'http://b' }],
        strategy: 'priority',
        fallback: { aimd: false },
      },
      { url: 'http://a' },
    ].map((raw) => TargetSchema.parse(raw));
    expect(describePool('llama:fast', 'llama', pooled!)).toEqual({
      key: 'llama:fast',
      model: 'llama',
      providers: ['a', 'http://b'],
      eligible: true,
      aimd: { latency_budget_ms: 500 },
      firstTokenTimeoutMs: 900,
    });
    expect(describePool('llama', 'llama', optedOut!)).toMatchObject({ eligible: false, aimd: false });
    expect(describePool('one', 'one', single!)).toMatchObject({ providers: ['http://a'], eligible: false });
  });
});

describe('parameters', () => {
  it('compares resolved values, with overload statuses as a set', () => {
    expect(sameParameters(resolveAimd(undefined), resolveAimd({ latency_budget_ms: 2000 }))).toBe(true);
    expect(sameParameters(resolveAimd(undefined), AIMD_DEFAULTS)).toBe(true);
    expect(
      sameParameters(
        resolveAimd({ overload_statuses: [503, 429] }),
        resolveAimd({ overload_statuses: [429, 503] }),
      ),
    ).toBe(true);
    expect(
      sameParameters(
        resolveAimd({ overload_statuses: [503] }),
        resolveAimd({ overload_statuses: [503, 429] }),
      ),
    ).toBe(false);
    expect(sameParameters(resolveAimd(undefined), resolveAimd({ share_floor: 0.1 }))).toBe(false);
  });
});

describe('registry: reloads', () => {
  it('returns a controller for eligible pools and undefined for the rest', async () => {
    const { registry, read } = setup();
    const result = registry.rebuild([
      pool(),
      pool({ key: 'mistral', model: 'mistral', eligible: false }),
      pool({ key: 'solo', model: 'solo', eligible: false, providers: ['http://solo'] }),
    ]);
    expect([...result.keys()]).toEqual(['llama', 'mistral', 'solo']);
    expect(result.get('llama')?.state).toBe('active');
    expect(result.get('mistral')).toBeUndefined();
    expect(result.get('solo')).toBeUndefined();
    expect(registry.controller('llama')).toBe(result.get('llama'));
    expect(await read('aimd_active')).toBe(1);
    expect(await read('provider_share')).toBe(1);
    // Pools that never ran a controller get no series at all.
    expect(await read('aimd_active', 'mistral', 'mistral')).toBeUndefined();
  });

  it('carries the same controller, state and all, when identity, parameters and deadline are unchanged', async () => {
    const { registry, clock, read } = setup();
    const controller = activeController(registry, pool());
    feed(controller, 'bbbb');
    clock.advance(100);
    const carried = [
      pool(),
      pool({ providers: ['primary', 'other-backup', 'third'] }), // only the preferred one counts
      pool({ aimd: { ...TEST_AIMD, overload_statuses: [529, 503, 429] } }),
    ];
    for (const descriptor of carried) expect(activeController(registry, descriptor)).toBe(controller);
    expect(controller.snapshot()).toMatchObject({ share: 0.5, lastAdjustmentAt: 0 });
    expect(await read('provider_share')).toBe(0.5);
    expect(await read('aimd_active')).toBe(1);
  });

  it('treats default parameters spelled out as unchanged', () => {
    const { registry } = setup();
    const controller = activeController(registry, pool({ aimd: undefined }));
    expect(
      activeController(registry, pool({ aimd: { latency_budget_ms: AIMD_DEFAULTS.latency_budget_ms } })),
    ).toBe(controller);
  });

  const changes: [string, Partial<PoolDescriptor>][] = [
    ['preferred provider identity', { providers: ['renamed-primary', 'backup'] }],
    ['provider order (a new preferred provider)', { providers: ['backup', 'primary'] }],
    ['an AIMD parameter', { aimd: { ...TEST_AIMD, dwell_ms: 2000 } }],
    ['the overload statuses', { aimd: { ...TEST_AIMD, overload_statuses: [429] } }],
    ['overrides removed (back to defaults)', { aimd: undefined }],
    ['the explicit deadline', { firstTokenTimeoutMs: 4000 }],
    ['the deadline removed', { firstTokenTimeoutMs: undefined }],
    ['the model label', { model: 'llama3' }],
  ];
  for (const [what, change] of changes) {
    it(`starts a new controller at share 1 when ${what} changes`, async () => {
      const { registry, read } = setup();
      const old = activeController(registry, pool());
      feed(old, 'bbbb');
      const fresh = activeController(registry, pool(change));
      expect(fresh).not.toBe(old);
      expect(fresh.share).toBe(1);
      expect(old.state).toBe('retired');
      const model = change.model ?? 'llama';
      expect(await read('provider_share', 'llama', model)).toBe(1);
      expect(await read('aimd_active', 'llama', model)).toBe(1);
      if (model !== 'llama') expect(await read('aimd_active', 'llama', 'llama')).toBe(0);
    });
  }

  it('starts a new controller when a deadline is added', () => {
    const { registry } = setup();
    const old = activeController(registry, pool({ firstTokenTimeoutMs: undefined }));
    expect(activeController(registry, pool({ firstTokenTimeoutMs: 3000 }))).not.toBe(old);
  });

  it('keeps a replaced controller from touching the share its successor owns, and lets its attempts drain', async () => {
    const { registry, read } = setup();
    const old = activeController(registry, pool());
    const attempt = old.startAttempt('preferred');
    const fresh = activeController(registry, pool({ firstTokenTimeoutMs: 5000 }));
    const next = fresh.startAttempt('preferred');
    expect(await read('aimd_in_flight')).toBe(2);
    feed(old, 'bbbb'); // outcomes of requests that started on the old table
    attempt.end();
    expect(fresh.share).toBe(1);
    expect(await read('provider_share')).toBe(1);
    expect(await read('aimd_window_samples')).toBe(0);
    expect(await read('aimd_in_flight')).toBe(1);
    next.end();
    expect(await read('aimd_in_flight')).toBe(0);
  });

  it('rejects a pool described twice and changes nothing', () => {
    const { registry } = setup();
    const controller = activeController(registry, pool());
    expect(() => registry.rebuild([pool({ providers: ['primary'] }), pool()])).toThrow(/twice/);
    expect(registry.controller('llama')).toBe(controller);
    expect(controller.state).toBe('active');
  });
});

describe('registry: parking', () => {
  const ineligible: [string, Partial<PoolDescriptor>][] = [
    ['one provider left', { providers: ['primary'], eligible: false }],
    ['fallback disabled or strategy no longer priority', { eligible: false }],
  ];
  for (const [why, change] of ineligible) {
    it(`parks the controller (${why}) and resumes its share when the pool is eligible again`, async () => {
      const { registry, clock, read } = setup();
      const controller = activeController(registry, pool());
      feed(controller, 'bbbb');

      const parked = registry.rebuild([pool(change)]);
      expect(parked.get('llama')).toBeUndefined();
      expect(registry.controller('llama')).toBeUndefined();
      expect(registry.stateOf('llama')).toBe('parked');
      expect(await read('aimd_active')).toBe(0);
      expect(await read('provider_share')).toBe(0.5);

      clock.advance(3_600_000);
      registry.rebuild([pool(change)]); // kept through further reloads
      registry.tick();
      expect(controller.share).toBe(0.5);

      const resumed = activeController(registry, pool({ providers: ['primary', 'new-backup'] }));
      expect(resumed).toBe(controller);
      expect(controller.share).toBe(0.5);
      expect(await read('aimd_active')).toBe(1);
    });
  }

  it('starts fresh when a different preferred provider returns', () => {
    const { registry } = setup();
    const controller = activeController(registry, pool());
    feed(controller, 'bbbb');
    registry.rebuild([pool({ providers: ['primary'], eligible: false })]);
    const next = activeController(registry, pool({ providers: ['backup', 'primary'] }));
    expect(next).not.toBe(controller);
    expect(next.share).toBe(1);
    expect(controller.state).toBe('retired');
  });

  it('does not park when the config changed otherwise as well', () => {
    const { registry } = setup();
    const controller = activeController(registry, pool());
    registry.rebuild([pool({ providers: ['primary'], eligible: false, firstTokenTimeoutMs: 9000 })]);
    expect(registry.stateOf('llama')).toBeUndefined();
    expect(controller.state).toBe('retired');
    expect(activeController(registry, pool())).not.toBe(controller);
  });

  it('discards a parked controller whose parameters change while parked', () => {
    const { registry } = setup();
    const controller = activeController(registry, pool());
    registry.rebuild([pool({ providers: ['primary'], eligible: false })]);
    registry.rebuild([
      pool({ providers: ['primary'], eligible: false, aimd: { ...TEST_AIMD, share_step: 0.25 } }),
    ]);
    expect(controller.state).toBe('retired');
    const next = activeController(registry, pool({ aimd: { ...TEST_AIMD, share_step: 0.25 } }));
    expect(next).not.toBe(controller);
  });

  it('treats aimd: false as an opt-out that discards the state', async () => {
    const { registry, read } = setup();
    const controller = activeController(registry, pool());
    feed(controller, 'bbbb');
    expect(registry.rebuild([pool({ aimd: false, eligible: false })]).get('llama')).toBeUndefined();
    expect(controller.state).toBe('retired');
    expect(await read('aimd_active')).toBe(0);
    const next = activeController(registry, pool());
    expect(next).not.toBe(controller);
    expect(next.share).toBe(1);
  });
});

describe('registry: retirement', () => {
  it('retires the controller of a removed pool; the label set stays with active 0', async () => {
    const { registry, read } = setup();
    const controller = activeController(registry, pool());
    const other = pool({ key: 'llama:batch', model: 'llama' });
    registry.rebuild([pool(), other]);
    feed(controller, 'bbbb');

    const result = registry.rebuild([other]);
    expect(result.has('llama')).toBe(false);
    expect(controller.state).toBe('retired');
    expect(registry.stateOf('llama')).toBeUndefined();
    expect(await read('aimd_active')).toBe(0);
    expect(await read('provider_share')).toBe(0.5); // last value, never removed
    expect(await read('aimd_active', 'llama:batch')).toBe(1);

    feed(controller, 'oooo oooo'); // a request of the old table finishing
    expect(controller.share).toBe(0.5);

    const back = activeController(registry, pool());
    expect(back).not.toBe(controller);
    expect(back.share).toBe(1);
    expect(await read('aimd_active')).toBe(1);
  });
});

describe('registry: the shared tick', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('advances active controllers only', () => {
    const { registry, clock } = setup();
    const idle = { ...TEST_AIMD, idle_recovery_ms: 1000 };
    registry.rebuild([pool({ aimd: idle }), pool({ key: 'other', model: 'other', aimd: idle })]);
    const active = registry.controller('llama')!;
    const parked = registry.controller('other')!;
    feed(active, 'bbbb');
    feed(parked, 'bbbb');
    registry.rebuild([
      pool({ aimd: idle }),
      pool({ key: 'other', model: 'other', aimd: idle, providers: ['primary'], eligible: false }),
    ]);
    clock.advance(1000);
    registry.tick();
    expect(active.share).toBe(0.625);
    expect(parked.share).toBe(0.5);
  });

  it('runs on one interval until stopped', async () => {
    vi.useFakeTimers();
    const { registry, clock, read } = setup();
    const controller = activeController(registry, pool({ aimd: { ...TEST_AIMD, idle_recovery_ms: 1000 } }));
    feed(controller, 'bbbb');
    registry.start(500);
    registry.start(500); // idempotent: still one interval
    expect(vi.getTimerCount()).toBe(1);
    clock.advance(1000);
    vi.advanceTimersByTime(500);
    expect(await read('provider_share')).toBe(0.625);
    registry.stop();
    expect(vi.getTimerCount()).toBe(0);
    clock.advance(1000);
    vi.advanceTimersByTime(5000);
    expect(await read('provider_share')).toBe(0.625);
  });
});
