import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AimdMetrics } from '../../src/gateway/balance/aimd-metrics.js';
import { ShareController, type AttemptProbe } from '../../src/gateway/balance/aimd.js';
import { resolveAimd, type AimdOverrides } from '../../src/gateway/config/schema/index.js';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { metricValue, seeded } from './helpers.js';

type Role = 'preferred' | 'alternate';
type Command =
  | { kind: 'advance'; ms: number }
  | { kind: 'firstToken'; ms: number; role: Role }
  | { kind: 'deadline'; ms: number; role: Role }
  | { kind: 'status'; status: number; role: Role }
  | { kind: 'unknown'; role: Role }
  | { kind: 'start'; role: Role }
  | { kind: 'end' }
  | { kind: 'prefer' };

const role = fc.constantFrom<Role>('preferred', 'preferred', 'alternate');
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 4000 }) }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('firstToken' as const),
      ms: fc.integer({ min: 0, max: 3000 }),
      role,
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('deadline' as const),
      ms: fc.integer({ min: 0, max: 3000 }),
      role,
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      status: fc.constantFrom(200, 429, 500, 503),
      role,
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('unknown' as const), role }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('start' as const), role }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('end' as const) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('prefer' as const) }), weight: 1 },
);

/** Any parameters the schema accepts (dwell at least 1 ms: 0 means "per evaluation", see aimd.ts). */
const parameters: fc.Arbitrary<AimdOverrides> = fc
  .record({
    latency_budget_ms: fc.integer({ min: 1, max: 2500 }),
    breach_rate_target: fc.double({ min: 0, max: 1, noNaN: true }),
    recovery_fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    window_samples: fc.integer({ min: 1, max: 20 }),
    min_fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    share_step: fc.double({ min: 0.001, max: 1, noNaN: true }),
    share_decay: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
    share_floor: fc.double({ min: 0.001, max: 1, noNaN: true }),
    dwell_ms: fc.integer({ min: 1, max: 5000 }),
    idle_recovery_ms: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8000 })),
    overload_statuses: fc.subarray([429, 503, 529]),
  })
  .map(({ recovery_fraction, min_fraction, ...p }) => ({
    ...p,
    recovery_breach_rate: p.breach_rate_target * recovery_fraction,
    min_samples: Math.max(1, Math.round(p.window_samples * min_fraction)),
  }));

function build(overrides: AimdOverrides, seed: number) {
  const registry = new Registry();
  const params = resolveAimd(overrides);
  const series = new AimdMetrics(registry, 'gateway').series('m', 'p', params.overload_statuses);
  const clock = new ManualClock(0);
  const controller = new ShareController({ params, clock, random: seeded(seed), series });
  return { registry, params, clock, controller, open: [] as AttemptProbe[] };
}

/** Runs one command. Outcome commands go through probes, as the dispatch stage will. */
function run(target: ReturnType<typeof build>, c: Command, onAdvance?: (ms: number) => void): void {
  const { controller, clock, open } = target;
  switch (c.kind) {
    case 'advance':
      if (onAdvance) onAdvance(c.ms);
      else clock.advance(c.ms);
      return;
    case 'start':
      open.push(controller.startAttempt(c.role));
      return;
    case 'end':
      open.shift()?.end();
      return;
    case 'prefer':
      controller.preferFirst();
      return;
    default: {
      const probe = controller.startAttempt(c.role);
      if (c.kind === 'firstToken') probe.firstToken(c.ms);
      else if (c.kind === 'deadline') probe.deadlineExpired(c.ms);
      else if (c.kind === 'status') probe.status(c.status);
      else probe.unknown();
      probe.end();
    }
  }
}

describe('share controller properties', () => {
  it('keeps the share in [floor, 1] and the window consistent for any sequence of events', async () => {
    await fc.assert(
      fc.asyncProperty(
        parameters,
        fc.array(command, { maxLength: 200 }),
        fc.integer(),
        async (p, commands, seed) => {
          const target = build(p, seed);
          const { controller, params } = target;
          for (const c of commands) {
            run(target, c);
            const s = controller.snapshot();
            expect(s.share).toBeGreaterThanOrEqual(params.share_floor);
            expect(s.share).toBeLessThanOrEqual(1);
            expect(s.samples).toBeLessThanOrEqual(params.window_samples);
            expect(s.breaches).toBeGreaterThanOrEqual(0);
            expect(s.breaches).toBeLessThanOrEqual(s.samples);
            expect(s.inFlight).toBe(target.open.filter((a) => a.role === 'preferred').length);
          }
          const labels = { model: 'm', pool: 'p' };
          const s = controller.snapshot();
          expect(await metricValue(target.registry, 'gateway_provider_share', labels)).toBe(s.share);
          expect(await metricValue(target.registry, 'gateway_aimd_window_samples', labels)).toBe(s.samples);
          expect(await metricValue(target.registry, 'gateway_aimd_in_flight', labels)).toBe(s.inFlight);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('decides the same whether or not it is ticked in between (lazy evaluation is exact)', async () => {
    await fc.assert(
      fc.asyncProperty(
        parameters,
        fc.array(command, { maxLength: 200 }),
        fc.integer(),
        fc.array(fc.integer({ min: 1, max: 997 }), { minLength: 1, maxLength: 5 }),
        async (p, commands, seed, slices) => {
          const lazy = build(p, seed);
          const ticked = build(p, seed);
          let k = 0;
          const advanceInSlices = (ms: number): void => {
            let left = ms;
            while (left > 0) {
              const slice = Math.min(left, slices[k++ % slices.length]!);
              ticked.clock.advance(slice);
              ticked.controller.tick();
              left -= slice;
            }
          };
          for (const c of commands) {
            run(lazy, c);
            run(ticked, c, advanceInSlices);
          }
          lazy.controller.tick();
          ticked.controller.tick();
          const a = lazy.controller.snapshot();
          const b = ticked.controller.snapshot();
          expect(b.share).toBeCloseTo(a.share, 9);
          expect({ ...b, share: 0 }).toEqual({ ...a, share: 0 });
          for (const direction of ['decrease', 'increase']) {
            const labels = { model: 'm', pool: 'p', direction };
            expect(await metricValue(ticked.registry, 'gateway_share_adjustments_total', labels)).toBe(
              await metricValue(lazy.registry, 'gateway_share_adjustments_total', labels),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
