/**
 * Limits shared across replicas on a real cluster: Redis (an image assembled from the host's
 * redis-server) in the namespace, two gateway replicas pointed at it through the chart's
 * sharedState values, and one key's burst spent exactly once across both pods.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  KEEP,
  REDIS_IMAGE,
  ROOT,
  baseValues,
  chat,
  createNamespace,
  deleteNamespace,
  deploySingle,
  figure,
  phase,
  gatewayPods,
  helm,
  podMetrics,
  podName,
  runClient,
  sample,
  valuesFile,
} from './cluster.ts';

const NS = 'gateway-e2e-shared';
const RELEASE = 'shared';
const BURST = 10;
const KEY = 'e2e-shared-key-7f3a9c2b';

beforeAll(async () => {
  await createNamespace(NS);
  await deploySingle(NS, 'redis', {
    name: 'redis',
    image: REDIS_IMAGE,
    args: ['--port', '6379', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
    ports: [{ name: 'redis', containerPort: 6379 }],
    readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 1 },
    resources: { requests: { cpu: '20m', memory: '32Mi' }, limits: { memory: '128Mi' } },
  });
  const values = baseValues();
  values.sharedState = { enabled: true, url: `redis://redis.${NS}.svc:6379` };
  // This test proves that two replicas share one budget. On a two-core node that also runs the
  // control plane, a Redis pod with a 20m CPU request can take longer than the default 50 ms per call,
  // and a call answered late is decided by the failure policy (what the budget is for; tested in
  // test/limits/redis/degraded.test.ts). A second per call keeps every decision Redis's own here.
  values.gateway.extraArgs = ['--shared-state-timeout-ms', '1000'];
  values.config.spec = {
    auth: {
      key_definitions: {
        'team-a': {
          key: KEY,
          // Practically no refill during the test: the burst is all there is.
          rate_limit: { requests_per_second: 0.001, burst_size: BURST },
          labels: { account: 'team-a' },
        },
      },
    },
    targets: {
      limited: { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast', keys: ['team-a'] },
    },
  };
  helm([
    'install',
    RELEASE,
    join(ROOT, 'charts/gateway'),
    '--namespace',
    NS,
    '--values',
    valuesFile('shared', values),
    '--wait',
    '--timeout',
    '5m',
  ]);
}, 600_000);

beforeEach((ctx) => phase(`test: ${ctx.task.name}`));

afterAll(async () => {
  if (!KEEP) await deleteNamespace(NS);
});

describe('limits shared through Redis', () => {
  it("two replicas spend one key's burst exactly once between them", async () => {
    const pods = await gatewayPods(NS, RELEASE);
    expect(pods).toHaveLength(2);
    const perPod = BURST; // each pod alone would let a whole burst through
    const results = await Promise.all(
      pods.map((pod) =>
        runClient<{ sent: number; completed: number; statuses: Record<string, number> }>(NS, {
          mode: 'requests',
          url: `http://${pod.status?.podIP}:3000/v1/chat/completions`,
          headers: { authorization: `Bearer ${KEY}` },
          bodies: [chat('limited', false)],
          count: perPod,
          concurrency: 2,
        }),
      ),
    );
    const accepted = results.map((r) => r.statuses['200'] ?? 0);
    const refused = results.map((r) => r.statuses['429'] ?? 0);
    const metrics = await Promise.all(pods.map((p) => podMetrics(NS, podName(p))));
    figure('shared-limits', {
      burst: BURST,
      sent: results.reduce((s, r) => s + r.sent, 0),
      accepted_per_pod: accepted.join(' / '),
      refused_per_pod: refused.join(' / '),
      redis_up: metrics.map((m) => sample(m, 'gateway_shared_state_up')).join(' / '),
      degraded_decisions: metrics.reduce((s, m) => s + sample(m, 'gateway_shared_state_degraded_total'), 0),
    });
    // Every decision came from Redis: none fell back to the failure policy.
    for (const m of metrics) expect(sample(m, 'gateway_shared_state_up')).toBe(1);
    expect(metrics.reduce((s, m) => s + sample(m, 'gateway_shared_state_degraded_total'), 0)).toBe(0);
    expect(accepted.reduce((a, b) => a + b, 0)).toBe(BURST);
    expect(refused.reduce((a, b) => a + b, 0)).toBe(2 * perPod - BURST);
    for (const r of results)
      for (const status of Object.keys(r.statuses)) expect(['200', '429']).toContain(status);
  }, 300_000);
});
