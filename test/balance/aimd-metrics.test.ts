import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AimdMetrics, FIRST_TOKEN_BUCKETS } from '../../src/gateway/balance/aimd-metrics.js';
import { metricValue } from './helpers.js';

const SPEC_METRICS: [name: string, type: string][] = [
  ['provider_share', 'gauge'],
  ['share_adjustments_total', 'counter'],
  ['aimd_active', 'gauge'],
  ['aimd_window_samples', 'gauge'],
  ['aimd_window_breach_rate', 'gauge'],
  ['aimd_in_flight', 'gauge'],
  ['aimd_unknown_total', 'counter'],
  ['aimd_overload_breaches_total', 'counter'],
  ['first_token_seconds', 'histogram'],
  ['first_token_breaches_total', 'counter'],
];

/** Label names of the samples of one metric family, from the text exposition. */
function labelNames(text: string, name: string): string[] {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    for (const match of line.matchAll(/([a-z_]+)="/g)) names.add(match[1]!);
  }
  return [...names].sort();
}

describe('AIMD metrics', () => {
  it('declares exactly the spec metrics, with their types, under the given prefix', async () => {
    const registry = new Registry();
    new AimdMetrics(registry, 'edge').series('llama', 'llama:fast', [429, 503]);
    const text = await registry.metrics();
    const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
    expect(declared).toEqual(SPEC_METRICS.map(([name, type]) => [`edge_${name}`, type]));
  });

  it('labels every series by model and pool, plus direction, status or role', async () => {
    const registry = new Registry();
    const series = new AimdMetrics(registry, 'gateway').series('llama', 'llama:fast', [429]);
    // What a new controller and the registry write first.
    series.setShare(1);
    series.setActive(true);
    const text = await registry.metrics();
    const extra: Record<string, string[]> = {
      share_adjustments_total: ['direction'],
      aimd_overload_breaches_total: ['status'],
      first_token_seconds: ['role'],
      first_token_breaches_total: ['role'],
    };
    for (const [name] of SPEC_METRICS) {
      const family = name === 'first_token_seconds' ? `gateway_${name}_count` : `gateway_${name}`;
      expect(labelNames(text, family)).toEqual(['model', 'pool', ...(extra[name] ?? [])].sort());
    }
  });

  it('publishes every label set at zero as soon as a pool has a controller', async () => {
    const registry = new Registry();
    new AimdMetrics(registry, 'gateway').series('llama', 'llama:fast', [429, 503]);
    const at = (name: string, labels: Record<string, string> = {}) =>
      metricValue(registry, `gateway_${name}`, { model: 'llama', pool: 'llama:fast', ...labels });
    for (const direction of ['decrease', 'increase'])
      expect(await at('share_adjustments_total', { direction })).toBe(0);
    for (const status of ['429', '503']) expect(await at('aimd_overload_breaches_total', { status })).toBe(0);
    for (const role of ['preferred', 'alternate']) {
      expect(await at('first_token_breaches_total', { role })).toBe(0);
      expect(await at('first_token_seconds_count', { role })).toBe(0);
    }
    expect(await at('aimd_unknown_total')).toBe(0);
    expect(await at('aimd_in_flight')).toBe(0);
    expect(await at('aimd_window_samples')).toBe(0);
  });

  it('uses real first-token buckets including a 10 s edge', async () => {
    expect(FIRST_TOKEN_BUCKETS).toContain(10);
    const registry = new Registry();
    const series = new AimdMetrics(registry, 'gateway').series('llama', 'llama');
    series.firstToken('preferred', 9.5);
    series.firstToken('preferred', 10.5);
    const text = await registry.metrics();
    const edges = [
      ...text.matchAll(
        /gateway_first_token_seconds_bucket\{le="([^"]+)",model="llama",pool="llama",role="preferred"\}/g,
      ),
    ].map((m) => m[1]);
    expect(edges).toEqual([...FIRST_TOKEN_BUCKETS.map(String), '+Inf']);
    const bucket = (le: string) =>
      metricValue(registry, 'gateway_first_token_seconds_bucket', {
        model: 'llama',
        pool: 'llama',
        role: 'preferred',
        le,
      });
    expect(await bucket('7.5')).toBe(0);
    expect(await bucket('10')).toBe(1);
    expect(await bucket('20')).toBe(2);
  });

  it('hands out one series per pool and keeps pools apart', async () => {
    const registry = new Registry();
    const metrics = new AimdMetrics(registry, 'gateway');
    const a = metrics.series('llama', 'llama');
    expect(metrics.series('llama', 'llama')).toBe(a);
    const b = metrics.series('llama', 'llama:batch');
    a.setShare(0.5);
    b.setShare(0.25);
    b.inFlight(1);
    b.inFlight(1);
    b.inFlight(-1);
    expect(await metricValue(registry, 'gateway_provider_share', { model: 'llama', pool: 'llama' })).toBe(
      0.5,
    );
    expect(
      await metricValue(registry, 'gateway_provider_share', { model: 'llama', pool: 'llama:batch' }),
    ).toBe(0.25);
    expect(
      await metricValue(registry, 'gateway_aimd_in_flight', { model: 'llama', pool: 'llama:batch' }),
    ).toBe(1);
  });

  it('lets two gateways in one process keep separate registries', () => {
    const first = new Registry();
    const second = new Registry();
    new AimdMetrics(first, 'gateway');
    expect(() => new AimdMetrics(second, 'gateway')).not.toThrow();
    expect(() => new AimdMetrics(first, 'gateway')).toThrow(/already been registered/);
  });
});
