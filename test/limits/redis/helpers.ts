import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { FailurePolicies } from '../../../src/gateway/limits/redis/policy.js';
import { DEFAULT_FAILURE_POLICIES } from '../../../src/gateway/limits/redis/policy.js';
import { SharedLimitStore } from '../../../src/gateway/limits/redis/store.js';
import type { Grant, Refusal } from '../../../src/gateway/limits/types.js';
import type { Logger } from '../../../src/gateway/telemetry/logger.js';
import { SharedStateMetrics } from '../../../src/gateway/telemetry/metrics.js';

/** A logger whose JSON lines land in `lines`. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

export interface TestStore {
  store: SharedLimitStore;
  registry: Registry;
  lines: Record<string, unknown>[];
  /** Value of `test_shared_state_degraded_total{kind,policy}`. */
  degraded(kind: string, policy: string): Promise<number>;
  up(): Promise<number>;
}

let prefixCounter = 0;

/** A fresh key prefix per test, so tests sharing one Redis never see each other's keys. */
export function uniquePrefix(): string {
  return `test${process.pid}-${prefixCounter++}:`;
}

export async function openStore(
  url: string,
  options: {
    prefix: string;
    leaseMs?: number;
    timeoutMs?: number;
    policies?: FailurePolicies;
    wait?: boolean;
  },
): Promise<TestStore> {
  const registry = new Registry();
  const { logger, lines } = captureLogger();
  const store = new SharedLimitStore({
    url,
    prefix: options.prefix,
    policies: options.policies ?? DEFAULT_FAILURE_POLICIES,
    leaseMs: options.leaseMs ?? 30_000,
    // Generous unless a test is about the timeout: a loaded machine must not degrade a decision.
    timeoutMs: options.timeoutMs ?? 1000,
    logger,
    metrics: new SharedStateMetrics(registry, 'test'),
  });
  if (options.wait ?? true) {
    if (!(await store.client.waitUntilReady(5000))) throw new Error(`no Redis at ${url}`);
  }
  const sample = async (name: string, labels: Record<string, string>): Promise<number> => {
    const metric = await registry.getSingleMetric(name)!.get();
    const value = metric.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
    return value?.value ?? 0;
  };
  return {
    store,
    registry,
    lines,
    degraded: (kind, policy) => sample('test_shared_state_degraded_total', { kind, policy }),
    up: () => sample('test_shared_state_up', {}),
  };
}

export function grant<R extends Refusal>(result: Grant | R): Grant {
  if (!result.ok) throw new Error(`expected a grant, got ${result.code}`);
  return result;
}

export function refusal<R extends Refusal>(result: Grant | R): R {
  if (result.ok) throw new Error('expected a refusal, got a grant');
  return result;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
