import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/gateway/telemetry/metrics.js';

/** The lines of one metric family in a text exposition, HELP and TYPE included. */
function family(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.includes(`${name} `) || line.includes(`${name}_`) || line.includes(`${name}{`));
}

/** Same name, help and buckets as the gateway's, kept by prom-client itself: the reference output. */
async function reference(observations: [string, string, number][]): Promise<Registry> {
  const registry = new Registry();
  const histogram = new Histogram({
    name: 'gateway_request_duration_seconds',
    help: 'Time from request arrival to the end of the response body.',
    labelNames: ['model', 'traffic'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  for (const [model, traffic, value] of observations) histogram.observe({ model, traffic }, value);
  return registry;
}

describe('request duration histogram (counted outside prom-client, published at collection)', () => {
  // Bounds are inclusive (a value equal to a bound counts in it), zero and beyond the last bound
  // included, two label sets, one label value that needs escaping.
  const observations: [string, string, number][] = [
    ['chat', 'realtime', 0],
    ['chat', 'realtime', 0.005],
    ['chat', 'realtime', 0.0051],
    ['chat', 'realtime', 0.3],
    ['chat', 'realtime', 300],
    ['chat', 'realtime', 301],
    ['chat', 'dispatched', 1],
    ['we"ird\\model', 'realtime', 42],
  ];

  it('renders exactly what prom-client renders for the same observations', async () => {
    const metrics = new GatewayMetrics('gateway');
    for (const [model, traffic, value] of observations) metrics.durationOf.get(model, traffic).observe(value);
    const expected = family(
      await (await reference(observations)).metrics(),
      'gateway_request_duration_seconds',
    );
    const actual = family(await metrics.render(), 'gateway_request_duration_seconds');
    expect(expected.length).toBe(2 + 3 * 18);
    expect(actual).toEqual(expected);
  });

  it('gives the same JSON as prom-client (getMetricsAsJSON)', async () => {
    const metrics = new GatewayMetrics('gateway');
    for (const [model, traffic, value] of observations) metrics.durationOf.get(model, traffic).observe(value);
    const pick = async (registry: Registry) =>
      (await registry.getMetricsAsJSON()).find((m) => m.name === 'gateway_request_duration_seconds')!;
    const expected = await pick(await reference(observations));
    const actual = await pick(metrics.registry);
    expect(actual.type).toBe(expected.type);
    expect(actual.help).toBe(expected.help);
    const normalized = (values: unknown[]) =>
      values.map((v) =>
        JSON.stringify(
          v,
          Object.keys(v as object)
            .filter((k) => k !== 'exemplar')
            .sort(),
        ),
      );
    expect(normalized(actual.values)).toEqual(normalized(expected.values));
  });

  it('a series exists from its first use, at zero, and counts on from there', async () => {
    const metrics = new GatewayMetrics('gateway');
    const child = metrics.durationOf.get('chat', 'realtime');
    expect(await metrics.render()).toContain(
      'gateway_request_duration_seconds_count{model="chat",traffic="realtime"} 0',
    );
    child.observe(0.02);
    child.observe(0.02);
    expect(metrics.durationOf.get('chat', 'realtime')).toBe(child);
    const text = await metrics.render();
    expect(text).toContain(
      'gateway_request_duration_seconds_bucket{le="0.01",model="chat",traffic="realtime"} 0',
    );
    expect(text).toContain(
      'gateway_request_duration_seconds_bucket{le="0.025",model="chat",traffic="realtime"} 2',
    );
    expect(text).toContain('gateway_request_duration_seconds_sum{model="chat",traffic="realtime"} 0.04');
    expect(text).toContain('gateway_request_duration_seconds_count{model="chat",traffic="realtime"} 2');
  });
});
