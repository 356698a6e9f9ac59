import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

/**
 * The parts of `prom-client` the gateway uses, loaded from their own modules. The package's index
 * also loads the Pushgateway client (`node:https`, `node:zlib`), the cluster aggregator and every
 * default metric, whose process-CPU collector requires `@opentelemetry/api` for exemplars the gateway
 * never enables: about 18 MB of RSS in every gateway process (docs/performance.md). The classes are
 * the very ones the index exports (the index requires these same files), so a registry or metric
 * made either way is the same class. Types still come from `'prom-client'`. The version is pinned in
 * package.json, and test/telemetry/lazy-modules.test.ts starts a gateway and
 * test/telemetry/default-metrics.test.ts compares the metric names with the index's
 * `collectDefaultMetrics`, so a release that moves these files fails there.
 */
const load = createRequire(import.meta.url);

export const Registry = load('prom-client/lib/registry.js') as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const Counter = load('prom-client/lib/counter.js') as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = load('prom-client/lib/gauge.js') as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = load('prom-client/lib/histogram.js') as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;

type Collector = (registry: Prom.Registry, config: Record<string, unknown>) => void;

/** prom-client's default collectors but the process CPU one, in `collectDefaultMetrics`'s order. */
const DEFAULTS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  ...(typeof process.getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

/**
 * The same series as prom-client's `collectDefaultMetrics({ register })`: its own collectors, and
 * the three process CPU counters made here with the same names, help and values (prom-client's own
 * `processCpuTotal` differs only in loading `@opentelemetry/api` for exemplars).
 */
export function collectDefaultMetrics(registry: Prom.Registry): void {
  const config = { eventLoopMonitoringPrecision: 10 };
  let last = process.cpuUsage();
  const user: Prom.Counter = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    // Use this one metric's `collect` to set all three, as prom-client does.
    collect() {
      const now = process.cpuUsage();
      const userSeconds = (now.user - last.user) / 1e6;
      const systemSeconds = (now.system - last.system) / 1e6;
      last = now;
      user.inc(userSeconds);
      system.inc(systemSeconds);
      total.inc(userSeconds + systemSeconds);
    },
  });
  const system = new Counter({
    name: 'process_cpu_system_seconds_total',
    help: 'Total system CPU time spent in seconds.',
    registers: [registry],
  });
  const total = new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
  });
  for (const name of DEFAULTS) (load(`prom-client/lib/metrics/${name}.js`) as Collector)(registry, config);
}
