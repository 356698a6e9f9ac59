/**
 * The cluster side of the real-cluster suite (e2e/k8s/run.sh): the Kubernetes API through
 * @kubernetes/client-node, helm and kubectl with the run's KUBECONFIG, requests to single pods
 * through the API server's pod proxy, in-cluster client Pods (client.mjs) whose JSON result is read
 * from their log, and the figures each test prints.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
  type V1Container,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { parse as parseYaml, stringify as toYaml } from 'yaml';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const WORK = join(ROOT, 'e2e/.work/k8s');
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the real-cluster suite through \`make e2e-k8s\``);
  return value;
};

export const REPOSITORY = env('E2E_K8S_REPOSITORY');
export const DIGEST_A = env('E2E_K8S_DIGEST_A');
export const DIGEST_B = env('E2E_K8S_DIGEST_B');
export const REDIS_IMAGE = env('E2E_K8S_REDIS_IMAGE');
export const PROMETHEUS_IMAGE = env('E2E_K8S_PROMETHEUS_IMAGE');
export const CRDS_DIR = env('E2E_K8S_CRDS');
/** The image the in-cluster clients run: the gateway image, which has node and nothing else. */
export const CLIENT_IMAGE = `${REPOSITORY}@${DIGEST_A}`;
export const KEEP = process.env.E2E_K8S_KEEP === '1';

const kubeconfigPath = env('KUBECONFIG');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath);
export const core = kc.makeApiClient(CoreV1Api);
export const apps = kc.makeApiClient(AppsV1Api);
export const discovery = kc.makeApiClient(DiscoveryV1Api);
export const custom = kc.makeApiClient(CustomObjectsApi);

// ------------------------------------------------------------------------------------- figures

const T0 = Number(process.env.E2E_K8S_T0 ?? Math.floor(Date.now() / 1000));
export const elapsed = (): string => `${Math.round(Date.now() / 1000 - T0)}`.padStart(5);

/** A progress line, in the run script's format. */
export function phase(text: string): void {
  process.stdout.write(`[e2e-k8s ${elapsed()}s] ${text}\n`);
}

/**
 * A measured figure: printed, and appended to e2e/.work/k8s/figures.jsonl so the run's numbers can
 * be read back (docs/operations.md reports them).
 */
export function figure(name: string, values: Record<string, unknown>): void {
  const text = Object.entries(values)
    .map(([k, v]) => `${k} ${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(2) : String(v)}`)
    .join(', ');
  process.stdout.write(`[e2e-k8s ${elapsed()}s] FIGURE ${name}: ${text}\n`);
  mkdirSync(WORK, { recursive: true });
  appendFileSync(join(WORK, 'figures.jsonl'), `${JSON.stringify({ name, ...values })}\n`);
}

export const seconds = (ms: number): number => Math.round(ms / 100) / 10;

// ------------------------------------------------------------------------------- tools and API

/** Runs a command with the run's KUBECONFIG; returns its standard output, then its standard error. */
function run(command: string, args: string[], input?: string): string {
  const result = spawnSync(command, args, {
    cwd: ROOT,
    encoding: 'utf8',
    input,
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`,
    );
  return result.stdout + result.stderr;
}

export const helm = (args: string[]): string => run(join(ROOT, '.tools/bin/helm'), args);
export const kubectl = (args: string[], input?: string): string => run('kubectl', args, input);

/** The chart values every release of the suite starts from (e2e/k8s/values.yaml), image by digest. */
export interface ChartValues {
  image: { repository?: string; digest?: string; pullPolicy?: string };
  gateway: {
    shutdownDelaySecs: number;
    shutdownTimeoutSecs: number;
    configPollSecs: number;
    extraArgs?: string[];
  };
  config: { spec: { targets: Record<string, unknown>; [field: string]: unknown } };
  [key: string]: unknown;
}

export function baseValues(): ChartValues {
  const values = parseYaml(readFileSync(join(ROOT, 'e2e/k8s/values.yaml'), 'utf8')) as ChartValues;
  values.image.repository = REPOSITORY;
  values.image.digest = DIGEST_A;
  return values;
}

/**
 * `helm install` or `helm upgrade` of the chart (charts/gateway) with these values, written to the
 * work directory as `<label>.values.yaml`; waits for the release's pods. Returns helm's output.
 */
export function helmRelease(
  verb: 'install' | 'upgrade',
  release: string,
  namespace: string,
  label: string,
  values: unknown,
): string {
  return helm([
    verb,
    release,
    join(ROOT, 'charts/gateway'),
    '--namespace',
    namespace,
    '--values',
    valuesFile(label, values),
    '--wait',
    '--timeout',
    '5m',
  ]);
}

/** Writes chart values to a file under the work directory and returns its path. */
export function valuesFile(name: string, values: unknown): string {
  mkdirSync(WORK, { recursive: true });
  const path = join(WORK, `${name}.values.yaml`);
  writeFileSync(path, toYaml(values));
  return path;
}

export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/**
 * A namespace that enforces the restricted Pod Security Standard on every pod in it, holding the
 * in-cluster client's script.
 */
export async function createNamespace(name: string): Promise<void> {
  await deleteNamespace(name);
  await waitFor(`namespace ${name} to go`, 180_000, async () =>
    (await core.listNamespace()).items.some((n) => n.metadata?.name === name) ? undefined : true,
  );
  await core.createNamespace({
    body: { metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
  });
  await core.createNamespacedConfigMap({
    namespace: name,
    body: {
      metadata: { name: 'e2e-client' },
      data: { 'client.mjs': readFileSync(join(ROOT, 'e2e/k8s/client.mjs'), 'utf8') },
    },
  });
  // Pods cannot be created before the namespace's default service account exists.
  await waitFor(`the default service account in ${name}`, 60_000, async () =>
    (await core.readNamespacedServiceAccount({ name: 'default', namespace: name })) ? true : undefined,
  );
}

export async function deleteNamespace(name: string): Promise<void> {
  await core.deleteNamespace({ name }).catch(() => undefined);
}

export const selector = (release: string): string =>
  `app.kubernetes.io/instance=${release},app.kubernetes.io/name=gateway`;

/** The release's gateway pods that are not being deleted. */
export async function gatewayPods(namespace: string, release: string): Promise<V1Pod[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: selector(release) });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running');
}

export const podName = (pod: V1Pod): string => pod.metadata?.name ?? '?';

export const restartCounts = (pod: V1Pod): number[] =>
  [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map(
    (c) => c.restartCount,
  );

/** The Deployment is fully rolled out: every replica updated and available, no old one left. */
export async function rolloutComplete(namespace: string, name: string): Promise<boolean | undefined> {
  const d = await apps.readNamespacedDeployment({ name, namespace });
  const want = d.spec?.replicas ?? 0;
  const s = d.status;
  const done =
    (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) &&
    s?.updatedReplicas === want &&
    s?.availableReplicas === want &&
    (s?.replicas ?? 0) === want;
  return done ? true : undefined;
}

// ------------------------------------------------------------------------------ pod proxy

export interface ProxyResponse {
  status: number;
  body: string;
}

/**
 * An HTTP request to one pod's port through the API server's pod proxy
 * (/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH): a single pod, from outside the cluster, on any
 * cluster whose API server reaches its pods. Status 503 from the proxy means the pod's port
 * refused the connection.
 */
export async function podRequest(
  namespace: string,
  pod: string,
  port: number,
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ProxyResponse> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(
    `/api/v1/namespaces/${namespace}/pods/${pod}:${port}/proxy${path.startsWith('/') ? path : `/${path}`}`,
    cluster.server,
  );
  const options: RequestOptions = {
    method: init.method ?? 'GET',
    headers: {
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    timeout: init.timeoutMs ?? 15_000,
  };
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`pod proxy request to ${pod}:${port}${path} timed out`)));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** /metrics of one pod (admin port). */
export async function podMetrics(namespace: string, pod: string): Promise<string> {
  const res = await podRequest(namespace, pod, 9090, '/metrics');
  if (res.status !== 200) throw new Error(`metrics of ${pod}: ${res.status} ${res.body.slice(0, 200)}`);
  return res.body;
}

/** The value of one sample in Prometheus text (sum over the lines that match every label given). */
export function sample(metrics: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  let found = false;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
    found = true;
  }
  return found ? total : 0;
}

// ------------------------------------------------------------------- the suite's own pods

/** The restricted Pod Security Standard, which every test namespace enforces. */
export const RESTRICTED_POD = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
};
export const RESTRICTED_CONTAINER = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

/**
 * A one-replica Deployment of `container` (restricted security, its image already on the nodes)
 * labelled app.kubernetes.io/name=NAME, and, when the container has ports, a Service of the same
 * name; returns once the replica is ready.
 */
export async function deploySingle(
  namespace: string,
  name: string,
  container: V1Container,
  pod: Partial<V1PodSpec> = {},
): Promise<void> {
  const labels = { 'app.kubernetes.io/name': name };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            securityContext: RESTRICTED_POD,
            ...pod,
            containers: [{ imagePullPolicy: 'Never', securityContext: RESTRICTED_CONTAINER, ...container }],
          },
        },
      },
    },
  });
  if (container.ports?.length)
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name, labels },
        spec: {
          selector: labels,
          ports: container.ports.map((p) => ({ name: p.name, port: p.containerPort, targetPort: p.name })),
        },
      },
    });
  await waitFor(`${name} to be ready`, 120_000, async () => {
    const d = await apps.readNamespacedDeployment({ name, namespace });
    return d.status?.readyReplicas === 1 ? true : undefined;
  });
}

// ------------------------------------------------------------------------ in-cluster clients

let clients = 0;

/** Starts a client Pod (restricted security, the gateway image, node only) and returns its name. */
export async function startClient(namespace: string, spec: Record<string, unknown>): Promise<string> {
  const name = `client-${Date.now().toString(36)}-${(clients += 1)}`;
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { 'app.kubernetes.io/name': 'e2e-client' } },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 5,
        securityContext: RESTRICTED_POD,
        containers: [
          {
            name: 'client',
            image: CLIENT_IMAGE,
            imagePullPolicy: 'IfNotPresent',
            command: ['/nodejs/bin/node', '/e2e/client.mjs', JSON.stringify(spec)],
            securityContext: RESTRICTED_CONTAINER,
            resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
            volumeMounts: [{ name: 'client', mountPath: '/e2e', readOnly: true }],
          },
        ],
        volumes: [{ name: 'client', configMap: { name: 'e2e-client' } }],
      },
    },
  });
  return name;
}

export async function clientLog(namespace: string, name: string): Promise<string> {
  return core.readNamespacedPodLog({ namespace, name });
}

/** Waits until a client prints an event line ({"event": NAME}). */
export async function clientEvent(
  namespace: string,
  name: string,
  event: string,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(`client ${name} to report ${event}`, timeoutMs, async () =>
    (await clientLog(namespace, name).catch(() => '')).includes(`"event":"${event}"`) ? true : undefined,
  );
}

/** Asks a load client to stop starting requests; it finishes the ones in flight and reports. */
export function stopClient(namespace: string, name: string): void {
  kubectl(['exec', '-n', namespace, name, '--', '/nodejs/bin/node', '-e', "process.kill(1, 'SIGUSR2')"]);
}

/** Waits for a client Pod to finish and returns its result (the last JSON line). */
export async function clientResult<T = Record<string, unknown>>(
  namespace: string,
  name: string,
  timeoutMs = 180_000,
): Promise<T> {
  await waitFor(`client ${name} to finish`, timeoutMs, async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' ? true : undefined;
  });
  const lines = (await clientLog(namespace, name)).trim().split('\n');
  const result = JSON.parse(lines.at(-1) ?? '{}') as T & { fatal?: string };
  if (result.fatal) throw new Error(`client ${name}: ${result.fatal}`);
  await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
  return result;
}

export async function runClient<T = Record<string, unknown>>(
  namespace: string,
  spec: Record<string, unknown>,
  timeoutMs?: number,
): Promise<T> {
  return clientResult<T>(namespace, await startClient(namespace, spec), timeoutMs);
}

/** What a load or request batch reports (client.mjs). */
export interface LoadSummary {
  sent: number;
  completed: number;
  failed: number;
  cut: number;
  streams: number;
  plain: number;
  statuses: Record<string, number>;
  errors: unknown[];
  seconds: number;
}

export interface StreamResult {
  status: number;
  chunks: number;
  done: boolean;
  error: string | null;
  ms: number;
  headers: Record<string, string>;
}

export const chat = (model: string, stream: boolean, extra: Record<string, unknown> = {}) => ({
  model,
  stream,
  max_tokens: 1000,
  messages: [{ role: 'user', content: 'hello from the real-cluster suite' }],
  ...extra,
});
