import { Registry } from 'prom-client';
import { AimdMetrics } from '../../src/gateway/balance/aimd-metrics.js';
import { ShareController } from '../../src/gateway/balance/aimd.js';
import type { Random } from '../../src/gateway/balance/strategies.js';
import { resolveAimd, type AimdOverrides } from '../../src/gateway/config/schema/index.js';
import { ManualClock } from '../../src/gateway/limits/clock.js';
import { seededRandom } from '../../bench/support/random.ts';

/**
 * Random numbers handed out in order. Running out is a test failure: it means the code drew more
 * numbers than the test expected.
 */
export function scripted(values: readonly number[]): Random & { readonly drawn: () => number } {
  let index = 0;
  const random = (): number => {
    const value = values[index];
    if (value === undefined) throw new Error(`scripted random exhausted after ${index} draws`);
    index++;
    return value;
  };
  return Object.assign(random, { drawn: () => index });
}

/** A small seeded generator (mulberry32), so proportion tests are repeatable. */
export const seeded: (seed: number) => Random = seededRandom;

/**
 * Test parameters chosen so every threshold is exact in binary floating point: with a window of 8
 * and at least 4 samples, 1 breach in 8 is exactly the recovery rate and 2 in 8 exactly the target.
 * Shares move by eighths: 1 -> 0.5 -> 0.25 -> 0.125 (the floor), and up by 0.125.
 */
export const TEST_AIMD: AimdOverrides = {
  latency_budget_ms: 1000,
  breach_rate_target: 0.25,
  recovery_breach_rate: 0.125,
  window_samples: 8,
  min_samples: 4,
  share_step: 0.125,
  share_decay: 0.5,
  share_floor: 0.125,
  dwell_ms: 1000,
  idle_recovery_ms: 0,
  overload_statuses: [429, 503, 529],
};

export const OK_MS = 100;
export const SLOW_MS = 1500;

export function controllerFixture(overrides: AimdOverrides = {}, random: Random = scripted([])) {
  const registry = new Registry();
  const metrics = new AimdMetrics(registry, 'gateway');
  const clock = new ManualClock(0);
  const params = resolveAimd({ ...TEST_AIMD, ...overrides });
  const series = metrics.series('llama', 'llama', params.overload_statuses);
  series.setActive(true);
  const controller = new ShareController({ params, clock, random, series });
  const read = (name: string, labels: Record<string, string> = {}) =>
    metricValue(registry, `gateway_${name}`, { model: 'llama', pool: 'llama', ...labels });
  /** Advances the clock by `ms`, applies the due time transitions and returns the share. */
  const shareAfter = (ms: number): number => {
    clock.advance(ms);
    controller.tick();
    return controller.share;
  };
  return { registry, metrics, clock, params, controller, read, shareAfter };
}

/** Feeds completed preferred outcomes: `o` ok (fast first token), `b` breach (slow first token). */
export function feed(controller: ShareController, pattern: string): void {
  for (const c of pattern) {
    if (c === 'o') controller.observeFirstToken(OK_MS);
    else if (c === 'b') controller.observeFirstToken(SLOW_MS);
    else if (c !== ' ') throw new Error(`unknown outcome ${c}`);
  }
}

/**
 * Reads one sample from the text exposition, the way a scraper sees it. Labels must match exactly
 * (the same set), so `le` must be given for histogram buckets. Undefined when the series is absent.
 */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const text = await registry.metrics();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      found[pair[1]!] = pair[2]!;
    const wanted = Object.entries(labels);
    if (Object.keys(found).length !== wanted.length) continue;
    if (wanted.every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}
