/**
 * The cluster side of the kind e2e: the Kubernetes API through @kubernetes/client-node, helm with
 * the run's kubeconfig, and in-cluster client Pods (client.mjs) whose JSON result is read from
 * their log.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const NAMESPACE = 'gateway-e2e';
export const RELEASE = 'gw';
export const IMAGE = process.env.E2E_KIND_IMAGE ?? 'llm-gateway:e2e';
export const SERVICE_URL = `http://${RELEASE}-gateway.${NAMESPACE}.svc:80`;
export const ADMIN_SERVICE_URL = `http://${RELEASE}-gateway-admin.${NAMESPACE}.svc:9090`;
const SELECTOR = `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/name=gateway`;

const kubeconfig = process.env.KUBECONFIG;
if (!kubeconfig) throw new Error('KUBECONFIG is not set: run the kind e2e through e2e/kind/run.sh');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
export const core = kc.makeApiClient(CoreV1Api);
export const apps = kc.makeApiClient(AppsV1Api);

export function helm(args: string[]): string {
  const result = spawnSync(join(ROOT, '.tools/bin/helm'), args, {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  if (result.status !== 0)
    throw new Error(`helm ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
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
    await sleep(1000);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** The namespace, labelled to enforce the restricted Pod Security Standard on every pod in it. */
export async function createNamespace(): Promise<void> {
  await core.createNamespace({
    body: {
      metadata: {
        name: NAMESPACE,
        labels: { 'pod-security.kubernetes.io/enforce': 'restricted' },
      },
    },
  });
  await core.createNamespacedConfigMap({
    namespace: NAMESPACE,
    body: {
      metadata: { name: 'e2e-client' },
      data: { 'client.mjs': readFileSync(join(ROOT, 'e2e/kind/client.mjs'), 'utf8') },
    },
  });
}

export async function deleteNamespace(): Promise<void> {
  await core.deleteNamespace({ name: NAMESPACE }).catch(() => undefined);
}

export async function gatewayPods(): Promise<V1Pod[]> {
  const list = await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: SELECTOR });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

export const podKey = (pod: V1Pod): string =>
  `${pod.metadata?.name}/${pod.metadata?.uid}/${(pod.status?.containerStatuses ?? []).map((c) => c.restartCount).join(',')}`;

let clients = 0;

/** Starts a client Pod (restricted security, the gateway image) and returns its name. */
export async function startClient(spec: Record<string, unknown>): Promise<string> {
  const name = `client-${Date.now().toString(36)}-${(clients += 1)}`;
  await core.createNamespacedPod({
    namespace: NAMESPACE,
    body: {
      metadata: { name, labels: { 'app.kubernetes.io/name': 'e2e-client' } },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 65532,
          runAsGroup: 65532,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        containers: [
          {
            name: 'client',
            image: IMAGE,
            imagePullPolicy: 'Never',
            command: ['/nodejs/bin/node', '/e2e/client.mjs', JSON.stringify(spec)],
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
              capabilities: { drop: ['ALL'] },
            },
            volumeMounts: [{ name: 'client', mountPath: '/e2e', readOnly: true }],
          },
        ],
        volumes: [{ name: 'client', configMap: { name: 'e2e-client' } }],
      },
    },
  });
  return name;
}

export async function clientLog(name: string): Promise<string> {
  return core.readNamespacedPodLog({ name, namespace: NAMESPACE });
}

/** Waits for a client Pod to finish and returns its result (the last JSON line). */
export async function clientResult<T = Record<string, unknown>>(
  name: string,
  timeoutMs = 180_000,
): Promise<T> {
  await waitFor(`client ${name} to finish`, timeoutMs, async () => {
    const pod = await core.readNamespacedPod({ name, namespace: NAMESPACE });
    return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' ? true : undefined;
  });
  const lines = (await clientLog(name)).trim().split('\n');
  const result = JSON.parse(lines.at(-1) ?? '{}') as T & { fatal?: string };
  if (result.fatal) throw new Error(`client ${name}: ${result.fatal}`);
  await core
    .deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 })
    .catch(() => undefined);
  return result;
}

export async function runClient<T = Record<string, unknown>>(
  spec: Record<string, unknown>,
  timeoutMs?: number,
): Promise<T> {
  return clientResult<T>(await startClient(spec), timeoutMs);
}

/** GET through a client Pod. */
export async function get(url: string): Promise<{ status: number; body: string; error: string | null }> {
  return runClient({ mode: 'get', url });
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
  return found ? total : Number.NaN;
}

export async function podMetrics(pod: V1Pod): Promise<string> {
  const result = await get(`http://${pod.status?.podIP}:9090/metrics`);
  if (result.status !== 200)
    throw new Error(`metrics of ${pod.metadata?.name}: ${result.status} ${result.error}`);
  return result.body;
}

export async function setGatewayConfig(text: string): Promise<void> {
  const name = `${RELEASE}-gateway`;
  const current = await core.readNamespacedConfigMap({ name, namespace: NAMESPACE });
  current.data = { ...current.data, 'config.yaml': text };
  await core.replaceNamespacedConfigMap({ name, namespace: NAMESPACE, body: current });
}

export async function readGatewayConfig(): Promise<string> {
  const cm = await core.readNamespacedConfigMap({ name: `${RELEASE}-gateway`, namespace: NAMESPACE });
  return cm.data?.['config.yaml'] ?? '';
}

/** `kubectl rollout restart`: a new pod-template annotation. */
export async function rolloutRestart(): Promise<void> {
  await apps.patchNamespacedDeployment(
    {
      name: `${RELEASE}-gateway`,
      namespace: NAMESPACE,
      body: {
        spec: {
          template: {
            metadata: { annotations: { 'e2e.llm-gateway.dev/restartedAt': new Date().toISOString() } },
          },
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

export async function rolloutComplete(): Promise<boolean | undefined> {
  const d = await apps.readNamespacedDeployment({ name: `${RELEASE}-gateway`, namespace: NAMESPACE });
  const want = d.spec?.replicas ?? 0;
  const s = d.status;
  const done =
    (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) &&
    s?.updatedReplicas === want &&
    s?.availableReplicas === want &&
    (s?.replicas ?? 0) === want;
  return done ? true : undefined;
}
