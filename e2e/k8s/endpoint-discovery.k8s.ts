/**
 * Endpoint discovery on a real cluster (e2e/k8s/run.sh): a Deployment of simulator pods behind a
 * Service, and a gateway release whose pools name that Service (`service:` entries), so the
 * gateway follows its EndpointSlices through the API server with the chart's Role. Requests spread
 * over every pod (read from each pod's own counters), beside the skew of the same load through the
 * Service's ClusterIP (kube-proxy picks a pod per connection); a pod added is served within 2 s of becoming ready; a pod deleted under
 * streaming load fails nothing; with prefix_affinity, the turns of a conversation land on one pod
 * (read from the pods' prefix-cache counters). The steps share one release and run in order.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CLIENT_IMAGE,
  KEEP,
  RESTRICTED_CONTAINER,
  RESTRICTED_POD,
  apps,
  baseValues,
  chat,
  clientEvent,
  clientResult,
  core,
  createNamespace,
  deleteNamespace,
  figure,
  helmRelease,
  kubectl,
  phase,
  podName,
  podRequest,
  runClient,
  sample,
  seconds,
  startClient,
  stopClient,
  waitFor,
  type LoadSummary,
} from './cluster.ts';

const NS = 'gateway-e2e-discovery';
const RELEASE = 'disc';
const COMPLETIONS = `http://${RELEASE}-gateway.${NS}.svc:80/v1/chat/completions`;
const SIM = 'sim';
const SIM_PORT = 8000;
const SIM_LABELS = { 'app.kubernetes.io/name': SIM };

/**
 * The pods' models: short plain answers, two-second streams (to be in flight when a pod goes), and
 * a prefix cache with a prefill dear enough that a cached prefix shows.
 */
const MODELS: Record<string, string> = {
  'fast.toml': [
    'name = "fast"',
    'output_tokens = 8',
    '[latency]',
    'prefill_ms = 2',
    'decode_ms = 2',
    '[prefix_cache]',
    'block_tokens = 16',
    'capacity_tokens = 200000',
  ].join('\n'),
  'medium.toml': [
    'name = "medium"',
    'output_tokens = 60',
    '[latency]',
    'prefill_ms = 20',
    'decode_ms = 30',
  ].join('\n'),
};

/** A pool over the Service's pods, asking the pods for `model`. */
const servicePool = (strategy: string, model: string) => ({
  strategy,
  providers: [
    {
      name: SIM,
      service: { name: SIM, port: SIM_PORT, path: '/v1' },
      gateway_model: model,
    },
  ],
});

const values = baseValues();
values.replicas = 1;
values.simulator = { sidecar: { enabled: false } };
values.config.spec = {
  targets: {
    spread: servicePool('round_robin', 'fast'),
    streams: servicePool('least_request', 'medium'),
    affine: servicePool('prefix_affinity', 'fast'),
    // The same pods through the Service's ClusterIP: kube-proxy picks per connection.
    clusterip: { url: `http://${SIM}.${NS}.svc:${SIM_PORT}/v1`, gateway_model: 'fast' },
  },
};

/** The simulator pods that are running, not being deleted, and ready. */
async function simPods(): Promise<V1Pod[]> {
  const list = await core.listNamespacedPod({
    namespace: NS,
    labelSelector: `app.kubernetes.io/name=${SIM}`,
  });
  return list.items.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

/** One pod's counter (summed over its label sets), read through the API server's pod proxy. */
async function podCounter(pod: string, metric: string): Promise<number> {
  const res = await podRequest(NS, pod, SIM_PORT, '/metrics');
  if (res.status !== 200) throw new Error(`metrics of ${pod}: ${res.status}`);
  return sample(res.body, metric);
}

async function counters(pods: readonly string[], metric: string): Promise<number[]> {
  return Promise.all(pods.map((pod) => podCounter(pod, metric)));
}

/** Requests each pod finished while `run` ran, from the pods' own counters. */
async function servedDuring(pods: readonly string[], run: () => Promise<unknown>): Promise<number[]> {
  const before = await counters(pods, 'vllm:request_success_total');
  await run();
  const after = await counters(pods, 'vllm:request_success_total');
  return after.map((n, i) => n - before[i]!);
}

const skew = (counts: readonly number[]): number =>
  Math.max(...counts) / (counts.reduce((a, b) => a + b, 0) / counts.length);

function scaleSims(replicas: number): void {
  kubectl(['scale', '--namespace', NS, `deployment/${SIM}`, `--replicas=${replicas}`]);
}

beforeAll(async () => {
  await createNamespace(NS);
  await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'sim-models' }, data: MODELS },
  });
  await apps.createNamespacedDeployment({
    namespace: NS,
    body: {
      metadata: { name: SIM, labels: SIM_LABELS },
      spec: {
        replicas: 3,
        selector: { matchLabels: SIM_LABELS },
        template: {
          metadata: { labels: SIM_LABELS },
          spec: {
            automountServiceAccountToken: false,
            securityContext: RESTRICTED_POD,
            // The simulator closes its connections on SIGTERM, as an engine that stops does; the
            // pause before it lets the pod's endpoint turn terminating and its streams finish.
            terminationGracePeriodSeconds: 30,
            containers: [
              {
                name: 'simulator',
                image: CLIENT_IMAGE,
                imagePullPolicy: 'Never',
                command: ['/nodejs/bin/node', '/app/bin/sim.js', 'serve'],
                args: ['--host=0.0.0.0', `--port=${SIM_PORT}`, '--models=/etc/sim/models'],
                ports: [{ name: 'http', containerPort: SIM_PORT }],
                readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 1 },
                lifecycle: { preStop: { sleep: { seconds: 8 } } },
                securityContext: RESTRICTED_CONTAINER,
                resources: { requests: { cpu: '20m', memory: '48Mi' }, limits: { memory: '192Mi' } },
                volumeMounts: [{ name: 'models', mountPath: '/etc/sim/models', readOnly: true }],
              },
            ],
            volumes: [{ name: 'models', configMap: { name: 'sim-models' } }],
          },
        },
      },
    },
  });
  await core.createNamespacedService({
    namespace: NS,
    body: {
      metadata: { name: SIM, labels: SIM_LABELS },
      spec: { selector: SIM_LABELS, ports: [{ name: 'http', port: SIM_PORT, targetPort: 'http' }] },
    },
  });
  await waitFor('three ready simulator pods', 180_000, async () =>
    (await simPods()).length === 3 ? true : undefined,
  );
  helmRelease('install', RELEASE, NS, 'discovery', values);
}, 600_000);

beforeEach((ctx) => phase(`test: ${ctx.task.name}`));

afterAll(async () => {
  if (!KEEP) await deleteNamespace(NS);
});

describe('endpoint discovery', () => {
  it('spreads requests over every pod of the Service, beside the skew of the same load through its ClusterIP', async () => {
    const pods = (await simPods()).map(podName);
    expect(pods).toHaveLength(3);
    const batch = (model: string) => () =>
      runClient<LoadSummary>(NS, {
        mode: 'requests',
        url: COMPLETIONS,
        bodies: [chat(model, false)],
        count: 90,
        concurrency: 3,
      });
    let summary: LoadSummary | undefined;
    const discovered = await servedDuring(pods, async () => (summary = await batch('spread')()));
    let viaClusterIp: LoadSummary | undefined;
    const clusterIp = await servedDuring(pods, async () => (viaClusterIp = await batch('clusterip')()));
    figure('discovery-spread', {
      pods: pods.length,
      service_entry: discovered.join(' / '),
      service_entry_skew: skew(discovered),
      clusterip_url: clusterIp.join(' / '),
      clusterip_url_skew: skew(clusterIp),
    });
    expect(summary!.completed).toBe(90);
    expect(viaClusterIp!.completed).toBe(90);
    // Round robin over the members: every pod its third, whatever the connections do.
    expect(discovered.reduce((a, b) => a + b, 0)).toBe(90);
    for (const count of discovered) expect(count).toBeGreaterThanOrEqual(25);
  });

  it('serves a pod added by scaling to 4 within 2 s of it becoming ready', async () => {
    const before = new Set((await simPods()).map(podName));
    const load = await startClient(NS, {
      mode: 'load',
      url: COMPLETIONS,
      bodies: [chat('spread', false)],
      concurrency: 2,
      maxMs: 240_000,
    });
    try {
      await clientEvent(NS, load, 'load-started');
      scaleSims(4);
      // The moment the new pod is ready, as the API server reports it (polled, so up to 100 ms late).
      const { pod, readyAt } = await waitFor(
        'a fourth ready pod',
        180_000,
        async () => {
          const added = (await simPods()).find((p) => !before.has(podName(p)));
          return added === undefined ? undefined : { pod: podName(added), readyAt: Date.now() };
        },
        100,
      );
      const servedAt = await waitFor(
        `${pod} to serve`,
        30_000,
        async () => ((await podCounter(pod, 'vllm:request_success_total')) > 0 ? Date.now() : undefined),
        100,
      );
      figure('discovery-new-pod', { pod, served_after_ready_ms: servedAt - readyAt });
      expect(servedAt - readyAt).toBeLessThan(2000);
    } finally {
      stopClient(NS, load);
    }
    const summary = await clientResult<LoadSummary>(NS, load);
    expect(summary.failed).toBe(0);
  });

  it('fails no stream when a pod is deleted under streaming load', async () => {
    const pods = await simPods();
    expect(pods.length).toBeGreaterThanOrEqual(4);
    const load = await startClient(NS, {
      mode: 'load',
      url: COMPLETIONS,
      bodies: [chat('streams', true), chat('spread', false)],
      concurrency: 6,
      maxMs: 240_000,
    });
    const victim = podName(pods[0]!);
    let goneAfterMs: number | undefined;
    try {
      await clientEvent(NS, load, 'load-started');
      // Streams in flight on every pod, the victim's among them.
      await waitFor(
        `streams in flight on ${victim}`,
        30_000,
        async () => ((await podCounter(victim, 'vllm:num_requests_running')) > 0 ? true : undefined),
        100,
      );
      const deletedAt = Date.now();
      await core.deleteNamespacedPod({ name: victim, namespace: NS });
      await waitFor(`${victim} to be gone`, 120_000, async () =>
        (await core.listNamespacedPod({ namespace: NS })).items.some((p) => podName(p) === victim)
          ? undefined
          : true,
      );
      goneAfterMs = Date.now() - deletedAt;
      await waitFor('four ready pods again', 120_000, async () =>
        (await simPods()).length === 4 ? true : undefined,
      );
    } finally {
      stopClient(NS, load);
    }
    const summary = await clientResult<LoadSummary>(NS, load);
    figure('discovery-pod-deleted', {
      sent: summary.sent,
      streams: summary.streams,
      failed: summary.failed,
      cut: summary.cut,
      pod_gone_after_s: seconds(goneAfterMs ?? Number.NaN),
    });
    expect(summary.errors).toEqual([]);
    expect(summary.failed).toBe(0);
    expect(summary.cut).toBe(0);
    expect(summary.streams).toBeGreaterThan(0);
  });

  it("with prefix_affinity, a conversation's turns land on one pod and hit its prefix cache", async () => {
    const pods = (await simPods()).map(podName);
    /** The turns of one conversation: a long system prompt of its own, then a growing history. */
    const conversation = (id: number) => {
      const system = `You are the assistant of conversation ${id}. ${'Follow the house style guide closely. '.repeat(40)}`;
      const messages: { role: string; content: string }[] = [{ role: 'system', content: system }];
      const turns = [];
      for (let turn = 1; turn <= 6; turn++) {
        messages.push({ role: 'user', content: `Turn ${turn} of conversation ${id}: what comes next?` });
        turns.push({ ...chat('affine', false), messages: [...messages], max_tokens: 8 });
        messages.push({ role: 'assistant', content: `Answer ${turn}.` });
      }
      return turns;
    };
    const landed: number[] = [];
    const hitRates: number[] = [];
    for (const id of [1, 2, 3]) {
      const queriesBefore = await counters(pods, 'vllm:prefix_cache_queries_total');
      const hitsBefore = await counters(pods, 'vllm:prefix_cache_hits_total');
      const summary = await runClient<LoadSummary>(NS, {
        mode: 'requests',
        url: COMPLETIONS,
        bodies: conversation(id),
        count: 6,
        concurrency: 1,
      });
      expect(summary.completed).toBe(6);
      const queries = (await counters(pods, 'vllm:prefix_cache_queries_total')).map(
        (n, i) => n - queriesBefore[i]!,
      );
      const hits = (await counters(pods, 'vllm:prefix_cache_hits_total')).map((n, i) => n - hitsBefore[i]!);
      const on = queries.flatMap((n, i) => (n > 0 ? [i] : []));
      // Every turn looked its prompt up in one pod's cache, and found the turns before it there.
      expect(on).toHaveLength(1);
      landed.push(on[0]!);
      hitRates.push(hits[on[0]!]! / queries[on[0]!]!);
      expect(hits[on[0]!]!).toBeGreaterThan(0);
    }
    figure('discovery-affinity', {
      pods: pods.length,
      conversation_pods: landed.map((i) => pods[i]).join(' / '),
      hit_rates: hitRates.map((r) => `${Math.round(r * 100)}%`).join(' / '),
    });
  });
});
