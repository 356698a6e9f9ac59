import { Registry as IndexRegistry, collectDefaultMetrics as indexDefaults } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Counter, Registry, collectDefaultMetrics } from '../../src/gateway/telemetry/prom-client.js';

/**
 * The gateway loads prom-client's parts from their own modules and makes the process CPU counters
 * itself (src/gateway/telemetry/prom-client.ts): the default series must stay prom-client's, name
 * for name, with the same help and type, and the classes must be the index's own.
 */
describe("prom-client's default metrics without its index", () => {
  it('exports the same metric names, help and types as collectDefaultMetrics', async () => {
    const reference = new IndexRegistry();
    indexDefaults({ register: reference });
    const ours = new Registry();
    collectDefaultMetrics(ours);
    const shape = async (registry: IndexRegistry): Promise<string[]> =>
      (await registry.getMetricsAsJSON()).map((m) => `${m.name} ${String(m.type)} ${m.help}`).sort();
    expect(await shape(ours)).toEqual(await shape(reference));
    expect(ours).toBeInstanceOf(IndexRegistry);
  });

  it('counts process CPU seconds, user plus system', async () => {
    const registry = new Registry();
    collectDefaultMetrics(registry);
    let spent = 0;
    for (let i = 0; i < 2e6; i++) spent += Math.sqrt(i);
    expect(spent).toBeGreaterThan(0);
    const values = Object.fromEntries(
      (await registry.getMetricsAsJSON())
        .filter((m) => m.name.startsWith('process_cpu_'))
        .map((m) => [m.name, m.values[0]?.value ?? Number.NaN]),
    );
    expect(values['process_cpu_user_seconds_total']).toBeGreaterThan(0);
    expect(values['process_cpu_seconds_total']).toBeCloseTo(
      values['process_cpu_user_seconds_total']! + values['process_cpu_system_seconds_total']!,
      6,
    );
    expect(new Counter({ name: 'x', help: 'x', registers: [] })).toBeInstanceOf(
      (await import('prom-client')).Counter,
    );
  });
});
