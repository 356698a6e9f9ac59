import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DegradedDecisions } from '../../../src/gateway/limits/redis/degraded.js';
import { parseFailurePolicies, type FailurePolicies } from '../../../src/gateway/limits/redis/policy.js';
import { SharedStateMetrics } from '../../../src/gateway/telemetry/metrics.js';
import { captureLogger } from './helpers.js';

function policies(text: string): FailurePolicies {
  const parsed = parseFailurePolicies(text);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.policies;
}

describe('degraded decisions', () => {
  it('counts every decision and logs at most one warn line per kind per second, with the count', async () => {
    const registry = new Registry();
    const metrics = new SharedStateMetrics(registry, 'x');
    const { logger, lines } = captureLogger();
    let now = 0;
    const decisions = new DegradedDecisions(
      policies('rate=fail_open,batch=fail_closed'),
      metrics,
      logger,
      () => now,
    );

    expect(decisions.decide('rate', 'disconnected')).toBe('fail_open');
    for (let i = 0; i < 9; i++) decisions.decide('rate', 'timeout');
    expect(decisions.decide('batch', 'disconnected')).toBe('fail_closed');
    now = 999;
    decisions.decide('rate', 'timeout');
    now = 1000;
    decisions.decide('rate', 'error');

    const text = await registry.metrics();
    expect(text).toContain('x_shared_state_degraded_total{kind="rate",policy="fail_open"} 12');
    expect(text).toContain('x_shared_state_degraded_total{kind="batch",policy="fail_closed"} 1');
    const warns = lines.filter((l) => l.level === 40);
    expect(warns.map((l) => [l.kind, l.policy, l.reason, l.decisions, l.msg])).toEqual([
      ['rate', 'fail_open', 'disconnected', 1, 'shared limit unavailable: granted by failure policy'],
      ['batch', 'fail_closed', 'disconnected', 1, 'shared limit unavailable: refused by failure policy'],
      // The second line for rate stands for the eleven decisions after the first line, itself included.
      ['rate', 'fail_open', 'error', 11, 'shared limit unavailable: granted by failure policy'],
    ]);
  });
});
