/**
 * The gateway on Kubernetes, end to end (kind, run by e2e/kind/run.sh): install with the simulator
 * sidecar, completions through the Service, live ConfigMap reload on the same pods, an invalid edit
 * that keeps serving, a rolling restart under load with no dropped request or stream, SIGTERM in
 * the middle of a long stream, fault modes surfacing as the spec says, and metrics.
 * The steps share one release and run in order.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import {
  ADMIN_SERVICE_URL,
  NAMESPACE,
  RELEASE,
  ROOT,
  SERVICE_URL,
  clientResult,
  core,
  createNamespace,
  deleteNamespace,
  gatewayPods,
  get,
  helm,
  podKey,
  podMetrics,
  readGatewayConfig,
  rolloutComplete,
  rolloutRestart,
  runClient,
  sample,
  setGatewayConfig,
  startClient,
  clientLog,
  waitFor,
} from './cluster.ts';

interface Summary {
  total: number;
  ok: number;
  failed: number;
  incompleteStreams: number;
  statuses: Record<string, number>;
  errors: unknown[];
}
interface StreamResult {
  status: number;
  chunks: number;
  done: boolean;
  error: string | null;
  ms: number;
}

const chat = (model: string, stream: boolean, extra: Record<string, unknown> = {}) => ({
  model,
  stream,
  max_tokens: 1000,
  messages: [{ role: 'user', content: 'hello from the kind e2e' }],
  ...extra,
});
const COMPLETIONS = `${SERVICE_URL}/v1/chat/completions`;
/** The kubelet refreshes ConfigMap volumes on its sync period: allow generously for it. */
const PROPAGATION_MS = 180_000;

beforeAll(async () => {
  await deleteNamespace();
  await waitFor('the old namespace to go', 120_000, async () =>
    (await core.listNamespace()).items.some((n) => n.metadata?.name === NAMESPACE) ? undefined : true,
  );
  await createNamespace();
  helm([
    'install',
    RELEASE,
    join(ROOT, 'charts/gateway'),
    '--namespace',
    NAMESPACE,
    '--values',
    join(ROOT, 'e2e/kind/values.yaml'),
    '--wait',
    '--timeout',
    '5m',
  ]);
}, 600_000);

afterAll(async () => {
  if (process.env.E2E_KIND_KEEP !== '1') await deleteNamespace();
});

describe('gateway on kind', () => {
  it('installs under the restricted Pod Security Standard and passes helm test', () => {
    const out = helm(['test', RELEASE, '--namespace', NAMESPACE, '--timeout', '3m', '--logs']);
    expect(out).toContain('ok: readiness');
    expect(out).toContain('ok: completion through the simulator');
  }, 240_000);

  it('serves completions and streams through the Service', async () => {
    const plain = await runClient<Summary>({
      mode: 'requests',
      url: COMPLETIONS,
      body: chat('fast', false),
      count: 40,
      concurrency: 4,
    });
    expect(plain).toMatchObject({ total: 40, ok: 40, failed: 0 });
    const streams = await runClient<Summary>({
      mode: 'requests',
      url: COMPLETIONS,
      body: chat('chat', true),
      count: 20,
      concurrency: 4,
    });
    expect(streams).toMatchObject({ total: 20, ok: 20, failed: 0, incompleteStreams: 0 });
  }, 240_000);

  it(
    'picks up a ConfigMap edit live, on the same pods, without a restart',
    async () => {
      const before = (await gatewayPods()).map(podKey).sort();
      expect(before).toHaveLength(2);
      const config = parseYaml(await readGatewayConfig()) as { spec: { targets: Record<string, unknown> } };
      config.spec.targets['live-added'] = { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' };
      await setGatewayConfig(toYaml(config));

      for (const pod of await gatewayPods()) {
        await waitFor(`${pod.metadata?.name} to serve the new alias`, PROPAGATION_MS, async () => {
          const models = await get(`http://${pod.status?.podIP}:3000/v1/models`);
          return models.body.includes('"live-added"') ? true : undefined;
        });
        expect(
          sample(await podMetrics(pod), 'gateway_config_reloads_total', { result: 'success' }),
        ).toBeGreaterThanOrEqual(1);
      }
      const answer = await runClient<Summary>({
        mode: 'requests',
        url: COMPLETIONS,
        body: chat('live-added', false),
        count: 10,
        concurrency: 2,
      });
      expect(answer).toMatchObject({ ok: 10, failed: 0 });
      expect((await gatewayPods()).map(podKey).sort()).toEqual(before);
    },
    PROPAGATION_MS * 3,
  );

  it(
    'refuses an invalid edit and keeps serving the last good configuration',
    async () => {
      const before = (await gatewayPods()).map(podKey).sort();
      const good = await readGatewayConfig();
      await setGatewayConfig(good.replace('strategy: priority', 'strategy: fastest-please'));
      for (const pod of await gatewayPods()) {
        await waitFor(`${pod.metadata?.name} to reject the edit`, PROPAGATION_MS, async () => {
          const failures = sample(await podMetrics(pod), 'gateway_config_reloads_total', {
            result: 'failure',
          });
          return failures >= 1 ? true : undefined;
        });
        const ready = await get(`http://${pod.status?.podIP}:9090/readyz`);
        expect(ready.status).toBe(200);
      }
      const still = await runClient<Summary>({
        mode: 'requests',
        url: COMPLETIONS,
        body: chat('live-added', true),
        count: 10,
        concurrency: 2,
      });
      expect(still).toMatchObject({ ok: 10, failed: 0 });
      expect((await gatewayPods()).map(podKey).sort()).toEqual(before);
      await setGatewayConfig(good);
    },
    PROPAGATION_MS * 3,
  );

  it('rolls every pod under load without dropping a request or a stream', async () => {
    const before = new Set((await gatewayPods()).map((p) => p.metadata?.uid));
    const load = await startClient({
      mode: 'load',
      url: COMPLETIONS,
      body: chat('medium', true),
      durationMs: 120_000,
      concurrency: 6,
    });
    await waitFor('the load to start', 60_000, async () =>
      (await clientLog(load)).includes('load-started') ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 10_000));
    await rolloutRestart();
    await waitFor('the rollout to complete', 300_000, rolloutComplete);
    const after = await gatewayPods();
    expect(after.every((p) => !before.has(p.metadata?.uid))).toBe(true);

    const result = await clientResult<Summary>(load, 240_000);
    expect(result.total).toBeGreaterThan(100);
    expect(result.errors).toEqual([]);
    expect(result).toMatchObject({ failed: 0, incompleteStreams: 0 });
  }, 600_000);

  it('lets a long stream finish when its pod gets SIGTERM', async () => {
    const [pod] = await gatewayPods();
    const client = await startClient({
      mode: 'stream',
      url: `http://${pod!.status?.podIP}:3000/v1/chat/completions`,
      body: chat('long', true),
    });
    await waitFor('the stream to start', 60_000, async () =>
      (await clientLog(client)).includes('first-chunk') ? true : undefined,
    );
    // Deleting the pod sends SIGTERM with the chart's termination budget.
    await core.deleteNamespacedPod({ name: pod!.metadata!.name!, namespace: NAMESPACE });
    const stream = await clientResult<StreamResult>(client, 120_000);
    expect(stream).toMatchObject({ status: 200, done: true, error: null });
    expect(stream.chunks).toBeGreaterThan(50);
    expect(stream.ms).toBeGreaterThan(10_000); // it really outlived the 5 s shutdown delay
    await waitFor('the replacement pod', 180_000, rolloutComplete);
  }, 420_000);

  it.each([
    ['cut_between_frames', true],
    ['cut_mid_frame', true],
    ['reset', true],
    ['mid_tool_call', true],
    ['no_done', false],
  ] as const)(
    'surfaces the %s fault after the first byte as a stream that never claims success',
    async (mode, abrupt) => {
      const pods = await gatewayPods();
      const errorsBefore = (await Promise.all(pods.map(podMetrics))).reduce(
        (sum, m) => sum + (sample(m, 'gateway_upstream_errors_total', { model: 'fast' }) || 0),
        0,
      );
      const result = await runClient<StreamResult>({
        mode: 'stream',
        url: COMPLETIONS,
        body: chat('fast', true),
        headers: { 'x-sim-fault': `${mode};after_chunks=3` },
      });
      expect(result.status).toBe(200);
      expect(result.chunks).toBeGreaterThanOrEqual(3); // the partial output reached the client
      expect(result.done).toBe(false); // and no [DONE] was invented
      if (abrupt) {
        const errorsAfter = (await Promise.all(pods.map(podMetrics))).reduce(
          (sum, m) => sum + (sample(m, 'gateway_upstream_errors_total', { model: 'fast' }) || 0),
          0,
        );
        expect(errorsAfter).toBeGreaterThan(errorsBefore);
      }
    },
    120_000,
  );

  it('exports its metrics on the admin Service', async () => {
    const metrics = await get(`${ADMIN_SERVICE_URL}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^gateway_config_info\{hash="[0-9a-f]{64}"\} 1$/m);
    expect(metrics.body).toContain('gateway_request_duration_seconds_bucket');
    expect(metrics.body).toContain('gateway_shutdown_forced_connections_total 0');
    // The Service picks one pod; the request count is summed over every pod.
    const all = await Promise.all((await gatewayPods()).map(podMetrics));
    const served = all.reduce(
      (sum, m) => sum + (sample(m, 'gateway_requests_total', { model: 'fast', status: '200' }) || 0),
      0,
    );
    expect(served).toBeGreaterThan(0);
  }, 120_000);
});
