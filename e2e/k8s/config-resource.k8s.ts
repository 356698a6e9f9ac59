/**
 * Configuration through the Kubernetes API on a real cluster (config.source resource): the chart
 * installs the GatewayConfig CRD and object; the API server refuses invalid objects naming the
 * field; an edit is served by every replica within a second (the ConfigMap path measured beside
 * it); the status says what was accepted and how many replicas serve it; a refused generation keeps
 * the old one serving; a gone replica stops counting; the API server stopped for 30 s under load
 * costs nothing; RBAC removed is named in the log; a rolling restart serves the object. The steps
 * share one release and run in order; each prints its figures.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import {
  KEEP,
  ROOT,
  apps,
  baseValues,
  chat,
  clientEvent,
  clientResult,
  core,
  createNamespace,
  custom,
  deleteNamespace,
  figure,
  gatewayPods,
  helm,
  helmRelease,
  kubectl,
  phase,
  podMetrics,
  podName,
  podRequest,
  rolloutComplete,
  runClient,
  sample,
  seconds,
  startClient,
  waitFor,
  type LoadSummary,
} from './cluster.ts';

const NS = 'gateway-e2e-resource';
const RELEASE = 'gwr';
const FULLNAME = `${RELEASE}-gateway`;
/** A file-mode release beside it: the ConfigMap path, measured in the same run. */
const FILE_RELEASE = 'gwf';
const FILE_FULLNAME = `${FILE_RELEASE}-gateway`;
const CHART = join(ROOT, 'charts/gateway');
const COMPLETIONS = `http://${FULLNAME}.${NS}.svc:80/v1/chat/completions`;
const GROUP = { group: 'llm-gateway.dev', version: 'v1alpha1', plural: 'gatewayconfigs' };
const EDITS = 5;

const values = baseValues();
(values.config as Record<string, unknown>).source = 'resource';
/** A client key written as a literal into config.spec: the chart moves it into its key Secret. */
const KEY = 'sk-e2e-resource-team-r-5c1e07';
/** A literal key added back by a `helm upgrade` of config.spec after the last one was removed. */
const KEY_UPGRADED = 'sk-e2e-resource-team-u-9a41d2';
values.config.spec.auth = { key_definitions: { 'team-r': { key: KEY } } };
values.config.spec.targets.secured = {
  url: 'http://127.0.0.1:8000/v1',
  gateway_model: 'fast',
  keys: ['team-r'],
};

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}
interface GatewayConfig {
  metadata: { generation: number; resourceVersion: string; uid: string };
  spec: { targets: Record<string, unknown> };
  status?: {
    observedGeneration?: number;
    serving?: string;
    conditions?: Condition[];
    replicas?: { pod: string; servedGeneration?: number; heartbeatTime: string }[];
  };
}

const readObject = async (): Promise<GatewayConfig> =>
  (await custom.getNamespacedCustomObject({ ...GROUP, namespace: NS, name: FULLNAME })) as GatewayConfig;

/** A merge patch of the object's spec through the API (what `kubectl apply` of an edit sends). */
async function patchSpec(spec: Record<string, unknown>): Promise<GatewayConfig> {
  return (await custom.patchNamespacedCustomObject(
    { ...GROUP, namespace: NS, name: FULLNAME, body: { spec } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )) as GatewayConfig;
}

const condition = (object: GatewayConfig, type: string): Condition | undefined =>
  object.status?.conditions?.find((c) => c.type === type);

/** The aliases one pod lists (GET /v1/models through the API server's pod proxy). */
async function aliasesOf(pod: string): Promise<string[]> {
  const res = await podRequest(NS, pod, 3000, '/v1/models', { timeoutMs: 5_000 });
  if (res.status !== 200) return [];
  return (JSON.parse(res.body) as { data: { id: string }[] }).data.map((m) => m.id);
}

/**
 * Milliseconds from `since` until every pod lists `alias`: each pod is asked again as soon as it
 * answers, so the figure is the propagation plus one pod-proxy round trip.
 */
async function servedWithin(
  pods: string[],
  alias: string,
  since: number,
  timeoutMs: number,
): Promise<number> {
  const seen = await Promise.all(
    pods.map(async (pod) => {
      while (Date.now() - since < timeoutMs) {
        if ((await aliasesOf(pod).catch((): string[] => [])).includes(alias)) return Date.now();
        await sleep(10);
      }
      throw new Error(`${pod} did not serve ${alias} within ${timeoutMs} ms`);
    }),
  );
  return Math.max(...seen) - since;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * `kubectl apply` of an object that must be refused: returns what kubectl said. Objects go to
 * kubectl as JSON: it reads YAML 1.1, where a bare `n` (a parameter name) would be `false`.
 */
function refuse(object: unknown): string {
  try {
    kubectl(['apply', '-f', '-'], JSON.stringify(object));
  } catch (error) {
    return String(error);
  }
  throw new Error('the API server accepted an object it should refuse');
}

const invalid = (name: string, target: Record<string, unknown>) => ({
  apiVersion: 'llm-gateway.dev/v1alpha1',
  kind: 'GatewayConfig',
  metadata: { name, namespace: NS },
  spec: { targets: { chat: target } },
});

/** The gateway container's log of one pod. */
const gatewayLog = (pod: string): Promise<string> =>
  core.readNamespacedPodLog({ name: pod, namespace: NS, container: 'gateway' });

/** Stops or starts the host cluster's API server (e2e/cluster/hostk8s). */
function apiserver(action: 'stop' | 'start'): void {
  const result = spawnSync('bash', [join(ROOT, 'e2e/cluster/hostk8s'), 'apiserver', action], {
    encoding: 'utf8',
    env: process.env,
  });
  if (result.status !== 0)
    throw new Error(`hostk8s apiserver ${action} failed:\n${result.stdout}${result.stderr}`);
}

beforeAll(async () => {
  await createNamespace(NS);
}, 300_000);

beforeEach((ctx) => phase(`test: ${ctx.task.name}`));

afterAll(async () => {
  if (!KEEP) await deleteNamespace(NS);
});

describe('configuration from the Kubernetes API', () => {
  it('installs with config.source resource: the CRD, the object, and its status 2/2 Accepted', async () => {
    const started = Date.now();
    const out = helmRelease('install', RELEASE, NS, 'resource-install', values);
    const installS = seconds(Date.now() - started);
    expect(out).toContain(`kubectl -n ${NS} get gatewayconfig ${FULLNAME}`);
    kubectl(['get', 'crd', 'gatewayconfigs.llm-gateway.dev']);
    const object = await waitFor('the status to say 2/2 and Accepted', 60_000, async () => {
      const o = await readObject();
      return o.status?.serving === '2/2' && condition(o, 'Accepted')?.status === 'True' ? o : undefined;
    });
    expect(object.status?.observedGeneration).toBe(object.metadata.generation);
    expect(condition(object, 'Ready')).toMatchObject({
      status: 'True',
      message: `2 of 2 replicas serve generation ${object.metadata.generation}`,
    });
    const table = kubectl(['get', 'gwc', '-n', NS, FULLNAME]);
    expect(table).toMatch(/NAME\s+ACCEPTED\s+SERVING\s+GENERATION\s+AGE/);
    expect(table).toMatch(new RegExp(`${FULLNAME}\\s+True\\s+2/2\\s+${object.metadata.generation}\\s`));
    const served = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      bodies: [chat('chat', true), chat('fast', false)],
      count: 8,
      concurrency: 2,
    });
    expect(served).toMatchObject({ completed: 8, failed: 0, cut: 0 });
    // The key lives in the chart's Secret; the object references its file, which the pods read.
    expect(JSON.stringify(object.spec)).not.toContain(KEY);
    const keyed = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      headers: { authorization: `Bearer ${KEY}` },
      bodies: [chat('secured', false)],
      count: 2,
      concurrency: 1,
    });
    expect(keyed).toMatchObject({ completed: 2, failed: 0 });
    const unkeyed = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      bodies: [chat('secured', false)],
      count: 1,
      concurrency: 1,
    });
    expect(unkeyed.statuses).toEqual({ 401: 1 });
    const rss = await Promise.all(
      (await gatewayPods(NS, RELEASE)).map(async (p) =>
        sample(await podMetrics(NS, podName(p)), 'process_resident_memory_bytes'),
      ),
    );
    figure('resource install', {
      helm_install_wait_s: installS,
      idle_rss_mib: rss.map((b) => Math.round(b / 2 ** 20)).join('/'),
    });
  });

  it('the API server refuses a wrong type, an unknown field and cross-field errors, naming the field', () => {
    const providers = [
      { name: 'a', url: 'http://127.0.0.1:8000/v1' },
      { name: 'b', url: 'http://127.0.0.1:8000/v1' },
    ];
    const refusals: string[] = [];
    const refusedApply = (object: unknown): string => {
      const said = refuse(object);
      refusals.push(said);
      return said;
    };
    const wrongType = refusedApply(
      invalid('e2e-wrong-type', {
        url: 'http://127.0.0.1:8000/v1',
        rate_limit: { requests_per_second: 'fast', burst_size: 1 },
      }),
    );
    expect(wrongType).toContain('spec.targets.chat.rate_limit.requests_per_second');
    expect(wrongType).toContain('must be of type number');
    const unknown = refusedApply(
      invalid('e2e-unknown-field', { url: 'http://127.0.0.1:8000/v1', retries: 3 }),
    );
    expect(unknown).toContain('unknown field "spec.targets.chat.retries"');
    const crossField = refusedApply(
      invalid('e2e-cross-field', { providers, strategy: 'priority', fallback: { max_attempts: 3 } }),
    );
    expect(crossField).toContain('spec.targets[chat].fallback.max_attempts');
    expect(crossField).toContain('`max_attempts` is at most the number of `providers`');
    const poolOnly = refusedApply(
      invalid('e2e-pool-only', { url: 'http://127.0.0.1:8000/v1', strategy: 'priority' }),
    );
    expect(poolOnly).toContain('spec.targets[chat].strategy');
    const rollingTimeZone = refusedApply(
      invalid('e2e-rolling-time-zone', {
        url: 'http://127.0.0.1:8000/v1',
        pricing: { prompt_per_million: 1, completion_per_million: 2 },
        budget: { amount: 5, window: '24h', time_zone: 'Europe/Berlin' },
      }),
    );
    expect(rollingTimeZone).toContain('spec.targets[chat].budget.time_zone');
    expect(rollingTimeZone).toContain('a rolling window has no time zone');
    expect(kubectl(['get', 'gwc', '-n', NS, '-o', 'name']).trim()).toBe(
      `gatewayconfig.llm-gateway.dev/${FULLNAME}`,
    );
    // Every shipped example is accepted as a GatewayConfig.
    let examples = 0;
    for (const dir of readdirSync(join(ROOT, 'examples'))) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, 'examples', dir, 'config.yaml'), 'utf8');
      } catch {
        continue;
      }
      const parsed = parseYaml(text) as { spec?: unknown };
      const spec = parsed.spec ?? parsed;
      kubectl(
        ['apply', '--dry-run=server', '-f', '-'],
        JSON.stringify({
          apiVersion: 'llm-gateway.dev/v1alpha1',
          kind: 'GatewayConfig',
          metadata: { name: `example-${dir}`, namespace: NS },
          spec,
        }),
      );
      examples += 1;
    }
    expect(examples).toBeGreaterThan(0);
    figure('admission', { refused: refusals.length, examples_accepted: examples });
  });

  it('helm template of every CI scenario passes a server-side dry run', () => {
    const ciDir = join(CHART, 'ci');
    const monitoring = ['ServiceMonitor', 'PodMonitor', 'PrometheusRule'].flatMap((kind) => [
      '--api-versions',
      `monitoring.coreos.com/v1/${kind}`,
    ]);
    let objects = 0;
    for (const file of readdirSync(ciDir)
      .filter((f) => f.endsWith('-values.yaml'))
      .sort()) {
      const rendered = helm([
        'template',
        'dry',
        CHART,
        '--namespace',
        NS,
        '--values',
        join(ciDir, file),
        '--kube-version',
        process.env.E2E_K8S_SERVER_VERSION ?? '1.34.0',
        ...monitoring,
      ]);
      // The Prometheus Operator's kinds are dry-run where their CRDs are installed (monitoring.k8s.ts).
      type Doc = { kind: string; apiVersion: string; metadata: { namespace?: string } };
      const documents = rendered
        .split(/^---$/m)
        .map((d) => parseYaml(d) as Doc | null)
        .filter((d): d is Doc => d !== null && typeof d === 'object' && !!d.kind)
        .filter((d) => !d.apiVersion.startsWith('monitoring.coreos.com/'));
      // Scenarios that move objects to other namespaces (namespaceOverride) are checked in this one.
      for (const d of documents) if (d.metadata.namespace !== undefined) d.metadata.namespace = NS;
      objects += documents.length;
      const applied = kubectl(
        ['apply', '--dry-run=server', '-n', NS, '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: documents }),
      );
      expect(applied.trim().split('\n').length, file).toBe(documents.length);
    }
    figure('server-side dry run', { objects });
  });

  it(`an edit is served by every replica within 1 s (median of ${EDITS}), the ConfigMap path beside it`, async () => {
    const fileValues = baseValues();
    (fileValues.simulator as { sidecar: { enabled: boolean } }).sidecar.enabled = false;
    fileValues.config.spec = { targets: { first: { url: 'http://127.0.0.1:9/v1' } } };
    helmRelease('install', FILE_RELEASE, NS, 'configmap', fileValues);
    const resourcePods = (await gatewayPods(NS, RELEASE)).map(podName);
    const filePods = (await gatewayPods(NS, FILE_RELEASE)).map(podName);
    expect(resourcePods).toHaveLength(2);
    expect(filePods).toHaveLength(2);

    const resourceMs: number[] = [];
    const targets = { ...(await readObject()).spec.targets };
    for (let i = 1; i <= EDITS; i++) {
      targets[`edit-${i}`] = { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' };
      const applied = Date.now();
      await patchSpec({ targets });
      resourceMs.push(await servedWithin(resourcePods, `edit-${i}`, applied, 30_000));
    }

    const configMapMs: number[] = [];
    const fileTargets: Record<string, unknown> = { first: { url: 'http://127.0.0.1:9/v1' } };
    for (let i = 1; i <= EDITS; i++) {
      fileTargets[`edit-${i}`] = { url: 'http://127.0.0.1:9/v1' };
      const document = toYaml({
        apiVersion: 'llm-gateway.dev/v1alpha1',
        kind: 'GatewayConfig',
        metadata: { name: FILE_FULLNAME, namespace: NS },
        spec: { targets: fileTargets },
      });
      const applied = Date.now();
      await core.patchNamespacedConfigMap(
        { name: FILE_FULLNAME, namespace: NS, body: { data: { 'config.yaml': document } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      configMapMs.push(await servedWithin(filePods, `edit-${i}`, applied, 180_000));
    }
    helm(['uninstall', FILE_RELEASE, '--namespace', NS, '--wait', '--timeout', '5m']);
    figure('configuration change served by every replica', {
      edits: EDITS,
      resource_median_ms: median(resourceMs),
      resource_max_ms: Math.max(...resourceMs),
      configmap_median_ms: median(configMapMs),
      configmap_max_ms: Math.max(...configMapMs),
    });
    expect(median(resourceMs)).toBeLessThanOrEqual(1000);
  });

  it('status after the edits: Accepted, observedGeneration current, 2/2; a generation only the process refuses keeps the old one serving', async () => {
    const current = await waitFor('the status to catch up with the edits', 30_000, async () => {
      const o = await readObject();
      return o.status?.observedGeneration === o.metadata.generation && o.status.serving === '2/2'
        ? o
        : undefined;
    });
    expect(condition(current, 'Accepted')?.status).toBe('True');

    // A base URL with a query string: valid for the API server's schema, refused by the gateway.
    const targets = { ...current.spec.targets, refused: { url: 'http://127.0.0.1:8000/v1?debug=1' } };
    const refused = await patchSpec({ targets });
    const status = await waitFor('Accepted False', 30_000, async () => {
      const o = await readObject();
      return o.status?.observedGeneration === refused.metadata.generation &&
        condition(o, 'Accepted')?.status === 'False'
        ? o
        : undefined;
    });
    const accepted = condition(status, 'Accepted')!;
    expect(accepted.reason).toBe('Invalid');
    expect(accepted.message).toContain('spec.targets.refused.url');
    expect(accepted.message).toContain('query string');
    expect(status.status?.serving).toBe('0/2');
    expect(kubectl(['get', 'gwc', '-n', NS, FULLNAME])).toMatch(new RegExp(`${FULLNAME}\\s+False\\s+0/2\\s`));
    for (const pod of (await gatewayPods(NS, RELEASE)).map(podName)) {
      const aliases = await aliasesOf(pod);
      expect(aliases).toContain(`edit-${EDITS}`);
      expect(aliases).not.toContain('refused');
    }
    const stillServing = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      bodies: [chat(`edit-${EDITS}`, false), chat('chat', true)],
      count: 6,
      concurrency: 2,
    });
    expect(stillServing).toMatchObject({ completed: 6, failed: 0 });

    const { refused: _refused, ...fixed } = targets;
    // A merge patch removes a key with null.
    await patchSpec({ targets: { ...fixed, refused: null } });
    await waitFor('Accepted True again', 30_000, async () => {
      const o = await readObject();
      return o.status?.observedGeneration === o.metadata.generation &&
        condition(o, 'Accepted')?.status === 'True' &&
        o.status.serving === '2/2'
        ? o
        : undefined;
    });
    figure('refused generation', { message_chars: accepted.message.length });
  });

  it('a replica that stopped renewing its entry stops counting within 60 s', async () => {
    const object = await readObject();
    // The entry of a pod that stopped 40 s ago, as its own field manager would have written it.
    const heartbeat = Date.now() - 40_000;
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...GROUP,
        namespace: NS,
        name: FULLNAME,
        fieldManager: 'llm-gateway/e2e-gone-pod',
        force: true,
        body: {
          apiVersion: 'llm-gateway.dev/v1alpha1',
          kind: 'GatewayConfig',
          metadata: { name: FULLNAME },
          status: {
            replicas: [
              {
                pod: 'e2e-gone-pod',
                observedGeneration: object.metadata.generation,
                accepted: true,
                servedGeneration: object.metadata.generation,
                heartbeatTime: new Date(heartbeat).toISOString().replace(/\.\d+Z$/, 'Z'),
              },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    await waitFor('the gone entry to be removed', 60_000, async () => {
      const o = await readObject();
      return o.status?.replicas?.some((r) => r.pod === 'e2e-gone-pod') === false && o.status.serving === '2/2'
        ? true
        : undefined;
    });
    const goneAfterS = seconds(Date.now() - heartbeat);
    figure('gone replica', { stopped_counting_after_s: goneAfterS });
    expect(goneAfterS).toBeLessThan(60);
  });

  it('the API server stopped for 30 s under load: nothing fails, source up 0 then 1, edits before and after served', async (ctx) => {
    if (process.env.E2E_K8S_PROVIDER_NAME !== 'hostk8s') {
      ctx.skip(
        `stopping the API server needs the host cluster (this run uses ${process.env.E2E_K8S_PROVIDER_NAME})`,
      );
      return;
    }
    const pods = await gatewayPods(NS, RELEASE);
    const load = await startClient(NS, {
      mode: 'load',
      url: COMPLETIONS,
      bodies: [chat('chat', true), chat('fast', false), chat('medium', true), chat(`edit-${EDITS}`, false)],
      concurrency: 6,
      maxMs: 65_000,
    });
    // The pods reach the API server through the `kubernetes` Service: the poll also records when
    // that address answers again (kube-proxy restores it after the API server re-registers).
    const apiService = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const apiAddress = `${apiService.spec?.clusterIP}:${apiService.spec?.ports?.[0]?.port ?? 443}`;
    const poll = await startClient(NS, {
      mode: 'poll',
      urls: pods.map((p) => `http://${p.status?.podIP}:9090/metrics`),
      metric: 'gateway_config_source_up',
      tcp: apiAddress,
      intervalMs: 250,
      maxMs: 240_000,
      untilBackUp: true,
    });
    await clientEvent(NS, load, 'load-started');
    await clientEvent(NS, poll, 'polling');
    await sleep(3_000);
    const targets = {
      ...(await readObject()).spec.targets,
      'before-outage': { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' },
    };
    await patchSpec({ targets });
    let down: number;
    try {
      apiserver('stop');
      down = Date.now();
      phase('API server stopped; waiting 30 s');
      await sleep(30_000);
    } finally {
      apiserver('start');
    }
    const returned = Date.now();
    const downS = seconds(returned - down);
    phase(`API server back after ${downS} s`);
    const afterTargets = {
      ...targets,
      'after-outage': { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' },
    };
    const applied = Date.now();
    await waitFor('the edit after the outage to be accepted', 60_000, async () => {
      await patchSpec({ targets: afterTargets });
      return true;
    });
    const names = pods.map(podName);
    let backMs: number;
    try {
      // Bounded by the cluster's own recovery too (kube-proxy restoring the `kubernetes` Service took
      // 3 to 90 s here): the gateway's own part is held to 10 s below, from the pods' own view.
      backMs = await servedWithin(names, 'after-outage', applied, 180_000);
    } catch (error) {
      const logs = await Promise.all(names.map(async (pod) => `--- ${pod}\n${await gatewayLog(pod)}`));
      throw new Error(`${String(error)}\n${logs.join('\n')}`, { cause: error });
    }
    for (const pod of names) expect(await aliasesOf(pod)).toContain('before-outage');
    // The source is up again on every pod (read through the API server, now back).
    try {
      await waitFor('gateway_config_source_up 1 on every pod', 180_000, async () => {
        const up = await Promise.all(
          names.map(async (pod) => sample(await podMetrics(NS, pod), 'gateway_config_source_up')),
        );
        return up.every((value) => value === 1) ? true : undefined;
      });
    } catch (error) {
      const logs = await Promise.all(names.map(async (pod) => `--- ${pod}\n${await gatewayLog(pod)}`));
      throw new Error(`${String(error)}\n${logs.join('\n')}`, { cause: error });
    }
    const upAgainS = seconds(Date.now() - applied);

    const summary = await clientResult<LoadSummary>(NS, load, 180_000);
    const watched = await clientResult<{ changes: Record<string, { at: number; value: number | null }[]> }>(
      NS,
      poll,
      300_000,
    );
    // Read from inside the cluster: every pod went from 1 to 0 and back to 1, and did so within a
    // few seconds of the pods' way to the API server working again (the retry ceiling is 5 s).
    const { [apiAddress]: service, ...gateways } = watched.changes;
    const backAt = (changes: { at: number; value: number | null }[]): number => changes.at(-1)!.at;
    expect(service!.map((c) => c.value)).toContain(0);
    expect(service!.at(-1)!.value).toBe(1);
    let slowestMs = 0;
    for (const [url, changes] of Object.entries(gateways)) {
      const values = changes.map((c) => c.value);
      expect(values, url).not.toContain(null);
      expect(values[0], url).toBe(1);
      expect(values, url).toContain(0);
      expect(values.at(-1), url).toBe(1);
      slowestMs = Math.max(slowestMs, backAt(changes) - backAt(service!));
    }
    const logs = await Promise.all(names.map(gatewayLog));
    for (const log of logs) {
      expect(log).toContain('the Kubernetes API server cannot be reached');
      expect(log).toContain('the Kubernetes API server answers again');
    }
    figure('API server outage', {
      down_s: downS,
      requests: summary.sent,
      streams: summary.streams,
      failed: summary.failed,
      cut: summary.cut,
      edit_after_return_served_ms: backMs,
      source_up_again_after_return_s: upAgainS,
      api_service_reachable_after_return_s: seconds(backAt(service!) - returned),
      source_up_after_api_service_reachable_s: seconds(slowestMs),
    });
    expect(summary).toMatchObject({ failed: 0, cut: 0 });
    expect(summary.sent).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThanOrEqual(10_000);
  });

  it('RBAC removed: the log names the missing permission and the last configuration serves', async () => {
    kubectl(['delete', 'rolebinding', FULLNAME, '-n', NS]);
    const removed = Date.now();
    const pods = (await gatewayPods(NS, RELEASE)).map(podName);
    await waitFor('a log line naming the refused permission', 60_000, async () => {
      const logs = await Promise.all(pods.map(gatewayLog));
      return logs.some((l) =>
        l.includes('refused patch on gatewayconfigs.llm-gateway.dev/status (403 Forbidden)'),
      )
        ? true
        : undefined;
    });
    const namedS = seconds(Date.now() - removed);
    const served = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      bodies: [chat(`edit-${EDITS}`, false), chat('chat', true)],
      count: 6,
      concurrency: 2,
    });
    expect(served).toMatchObject({ completed: 6, failed: 0 });
    for (const pod of pods) expect(await aliasesOf(pod)).toContain(`edit-${EDITS}`);
    // helm upgrade puts the binding back; the status is written again.
    helmRelease('upgrade', RELEASE, NS, 'resource-rbac', values);
    await waitFor('a log line saying the API answers again', 60_000, async () => {
      const logs = await Promise.all(pods.map(gatewayLog));
      return logs.some((l) => l.includes('answers patch on gatewayconfigs.llm-gateway.dev/status again'))
        ? true
        : undefined;
    });
    figure('RBAC removed', { named_after_s: namedS });
  });

  it('helm upgrade that removes the last literal key of config.spec, then adds one, changes the object and the key Secret, never the pods', async () => {
    const podsBefore = (await gatewayPods(NS, RELEASE)).map((p) => p.metadata?.uid).sort();
    const deploymentBefore = await apps.readNamespacedDeployment({ name: FULLNAME, namespace: NS });
    const pods = (await gatewayPods(NS, RELEASE)).map(podName);
    const unchangedPods = async (): Promise<void> => {
      const deployment = await apps.readNamespacedDeployment({ name: FULLNAME, namespace: NS });
      expect(deployment.metadata?.generation).toBe(deploymentBefore.metadata?.generation);
      expect((await gatewayPods(NS, RELEASE)).map((p) => p.metadata?.uid).sort()).toEqual(podsBefore);
    };

    // No literal key left: the key Secret stays, empty, and stays mounted.
    const keyless = structuredClone(values);
    delete keyless.config.spec.auth;
    delete keyless.config.spec.targets.secured;
    keyless.config.spec.targets.keyless = { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' };
    const generationBefore = (await readObject()).metadata.generation;
    let started = Date.now();
    helmRelease('upgrade', RELEASE, NS, 'resource-keyless', keyless);
    expect((await readObject()).metadata.generation).toBeGreaterThan(generationBefore);
    const keylessMs = await servedWithin(pods, 'keyless', started, 60_000);
    const secret = await core.readNamespacedSecret({ name: `${FULLNAME}-keys`, namespace: NS });
    expect(Object.keys(secret.data ?? {})).toEqual([]);
    await unchangedPods();

    // The first literal key again: it reaches the pods with the kubelet's sync of the Secret's
    // volume; until then the gateway refuses that generation and keeps serving the last one.
    const keyed = structuredClone(keyless);
    keyed.config.spec.auth = { key_definitions: { 'team-u': { key: KEY_UPGRADED } } };
    keyed.config.spec.targets.upgraded = { url: 'http://127.0.0.1:8000/v1', gateway_model: 'fast' };
    keyed.config.spec.targets.secured = {
      ...(values.config.spec.targets.secured as Record<string, unknown>),
      keys: ['team-u'],
    };
    started = Date.now();
    helmRelease('upgrade', RELEASE, NS, 'resource-first-key', keyed);
    expect(JSON.stringify((await readObject()).spec)).not.toContain(KEY_UPGRADED);
    const firstKeyMs = await servedWithin(pods, 'upgraded', started, 180_000);
    const served = await runClient<LoadSummary>(NS, {
      mode: 'requests',
      url: COMPLETIONS,
      headers: { authorization: `Bearer ${KEY_UPGRADED}` },
      bodies: [chat('secured', false)],
      count: 2,
      concurrency: 1,
    });
    expect(served).toMatchObject({ completed: 2, failed: 0 });
    await unchangedPods();
    await waitFor('the status to say the new generation is accepted, 2/2', 60_000, async () => {
      const o = await readObject();
      return o.status?.observedGeneration === o.metadata.generation &&
        condition(o, 'Accepted')?.status === 'True' &&
        o.status?.serving === '2/2'
        ? true
        : undefined;
    });
    figure('helm upgrade of config.spec', {
      keyless_served_by_every_replica_s: seconds(keylessMs),
      first_key_served_by_every_replica_s: seconds(firstKeyMs),
      pods_replaced: 0,
    });
  });

  it('a rolling restart with the object present: the new pods are ready and serve it', async () => {
    const before = new Set((await gatewayPods(NS, RELEASE)).map((p) => p.metadata?.uid));
    const started = Date.now();
    kubectl(['rollout', 'restart', `deployment/${FULLNAME}`, '-n', NS]);
    await waitFor('the restart to roll out', 300_000, () => rolloutComplete(NS, FULLNAME));
    const pods = await waitFor('only new pods', 180_000, async () => {
      const now = await gatewayPods(NS, RELEASE);
      return now.length === 2 && now.every((p) => !before.has(p.metadata?.uid)) ? now : undefined;
    });
    const { spec, metadata } = await readObject();
    // The models list without a key names the open aliases (a keyed one needs its key).
    const open = Object.entries(spec.targets)
      .filter(([, target]) => (target as { keys?: unknown }).keys === undefined)
      .map(([alias]) => alias)
      .sort();
    for (const pod of pods.map(podName)) expect((await aliasesOf(pod)).sort()).toEqual(open);
    await waitFor('the status to name the new pods, 2/2', 60_000, async () => {
      const o = await readObject();
      const entries = (o.status?.replicas ?? []).map((r) => r.pod).sort();
      return o.status?.serving === '2/2' &&
        JSON.stringify(entries) === JSON.stringify(pods.map(podName).sort())
        ? true
        : undefined;
    });
    figure('rolling restart', {
      rolled_out_s: seconds(Date.now() - started),
      generation: metadata.generation,
    });
  });

  it('uninstall removes the object and keeps the CRD', async () => {
    helm(['uninstall', RELEASE, '--namespace', NS, '--wait', '--timeout', '5m']);
    await waitFor('the object to go', 60_000, async () =>
      kubectl(['get', 'gwc', '-n', NS, '-o', 'name']).trim() === '' ? true : undefined,
    );
    expect(kubectl(['get', 'crd', 'gatewayconfigs.llm-gateway.dev', '-o', 'name']).trim()).toBe(
      'customresourcedefinition.apiextensions.k8s.io/gatewayconfigs.llm-gateway.dev',
    );
  });
});
