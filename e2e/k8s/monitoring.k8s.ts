/**
 * Monitoring on a real cluster: the Prometheus Operator's CRDs installed, the chart's
 * ServiceMonitor and PrometheusRule accepted by the API server, and a Prometheus (an image
 * assembled from the host's prometheus) that scrapes exactly what the ServiceMonitor selects — its
 * scrape job is generated from the ServiceMonitor object the cluster holds, the way the operator
 * generates it — and evaluates the PrometheusRule's groups. A gateway series is queried back.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import {
  CRDS_DIR,
  KEEP,
  PROMETHEUS_IMAGE,
  ROOT,
  apps,
  baseValues,
  chat,
  core,
  createNamespace,
  custom,
  deleteNamespace,
  figure,
  helm,
  kubectl,
  podRequest,
  runClient,
  valuesFile,
  waitFor,
} from './cluster.ts';

const NS = 'gateway-e2e-monitoring';
const RELEASE = 'mon';
const FULLNAME = `${RELEASE}-gateway`;
const MONITORING = { group: 'monitoring.coreos.com', version: 'v1' };

interface ServiceMonitor {
  metadata: { name: string; namespace: string };
  spec: {
    namespaceSelector?: { matchNames?: string[]; any?: boolean };
    selector: { matchLabels?: Record<string, string> };
    endpoints: { port?: string; path?: string; interval?: string; scrapeTimeout?: string; scheme?: string }[];
  };
}

const labelName = (name: string): string => name.replace(/[^a-zA-Z0-9_]/g, '_');
const escapeRegex = (value: string): string => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The scrape jobs the Prometheus Operator generates for a ServiceMonitor: endpoint-slice discovery
 * in the selected namespaces, kept when the Service carries every selector label and the endpoint
 * port has the endpoint's name.
 */
export function scrapeJobs(monitor: ServiceMonitor): Record<string, unknown>[] {
  const namespaces = monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace];
  return monitor.spec.endpoints.map((endpoint, index) => ({
    job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
    honor_labels: false,
    kubernetes_sd_configs: [{ role: 'endpointslice', namespaces: { names: namespaces } }],
    scheme: endpoint.scheme ?? 'http',
    metrics_path: endpoint.path ?? '/metrics',
    ...(endpoint.interval ? { scrape_interval: endpoint.interval } : {}),
    ...(endpoint.scrapeTimeout ? { scrape_timeout: endpoint.scrapeTimeout } : {}),
    relabel_configs: [
      ...Object.entries(monitor.spec.selector.matchLabels ?? {}).map(([key, value]) => ({
        action: 'keep',
        source_labels: [
          `__meta_kubernetes_service_label_${labelName(key)}`,
          `__meta_kubernetes_service_labelpresent_${labelName(key)}`,
        ],
        regex: `(${escapeRegex(value)});true`,
      })),
      { action: 'keep', source_labels: ['__meta_kubernetes_endpointslice_port_name'], regex: endpoint.port },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
    ],
  }));
}

async function deployPrometheus(config: string, rules: string): Promise<void> {
  const labels = { 'app.kubernetes.io/name': 'prometheus' };
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'prometheus' } } });
  kubectl(
    ['apply', '--namespace', NS, '-f', '-'],
    toYaml({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'prometheus' },
          rules: [
            {
              apiGroups: [''],
              resources: ['services', 'endpoints', 'pods'],
              verbs: ['get', 'list', 'watch'],
            },
            {
              apiGroups: ['discovery.k8s.io'],
              resources: ['endpointslices'],
              verbs: ['get', 'list', 'watch'],
            },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'prometheus' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'prometheus' },
          subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: NS }],
        },
      ],
    }),
  );
  await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'prometheus' }, data: { 'prometheus.yml': config, 'rules.yml': rules } },
  });
  await apps.createNamespacedDeployment({
    namespace: NS,
    body: {
      metadata: { name: 'prometheus', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'prometheus',
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 65532,
              runAsGroup: 65532,
              fsGroup: 65532,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'prometheus',
                image: PROMETHEUS_IMAGE,
                imagePullPolicy: 'Never',
                args: [
                  '--config.file=/etc/prometheus/prometheus.yml',
                  '--storage.tsdb.path=/data',
                  '--web.listen-address=:9090',
                ],
                ports: [{ name: 'web', containerPort: 9090 }],
                readinessProbe: { httpGet: { path: '/-/ready', port: 'web' }, periodSeconds: 2 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                },
                resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
                volumeMounts: [
                  { name: 'config', mountPath: '/etc/prometheus', readOnly: true },
                  { name: 'data', mountPath: '/data' },
                ],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: 'prometheus' } },
              { name: 'data', emptyDir: {} },
            ],
          },
        },
      },
    },
  });
  await waitFor('prometheus to be ready', 120_000, async () => {
    const d = await apps.readNamespacedDeployment({ name: 'prometheus', namespace: NS });
    return d.status?.readyReplicas === 1 ? true : undefined;
  });
}

async function prometheusPod(): Promise<string> {
  const pods = await core.listNamespacedPod({
    namespace: NS,
    labelSelector: 'app.kubernetes.io/name=prometheus',
  });
  const name = pods.items.find((p) => p.status?.phase === 'Running')?.metadata?.name;
  if (!name) throw new Error('no running prometheus pod');
  return name;
}

async function prometheusApi<T>(path: string): Promise<T> {
  const res = await podRequest(NS, await prometheusPod(), 9090, path);
  if (res.status !== 200) throw new Error(`prometheus ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  return (JSON.parse(res.body) as { data: T }).data;
}

const crdFiles = (): string[] =>
  readdirSync(CRDS_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(CRDS_DIR, f));
const crdNames = (): string[] =>
  crdFiles().map((f) => (parseYaml(readFileSync(f, 'utf8')) as { metadata: { name: string } }).metadata.name);

beforeAll(async () => {
  await createNamespace(NS);
  kubectl(['apply', '--server-side', ...crdFiles().flatMap((f) => ['-f', f])]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crdNames().map((n) => `crd/${n}`)]);
}, 300_000);

afterAll(async () => {
  if (KEEP) return;
  await deleteNamespace(NS);
  kubectl(['delete', '--ignore-not-found', '--wait=false', ...crdNames().map((n) => `crd/${n}`)]);
});

describe('monitoring objects on a real API server', () => {
  it('installs the ServiceMonitor and PrometheusRule; Prometheus scrapes what the ServiceMonitor selects and loads the rules', async () => {
    const values = baseValues();
    values.metrics = {
      serviceMonitor: { enabled: true, interval: '5s', scrapeTimeout: '4s' },
      prometheusRule: { enabled: true },
    };
    helm([
      'install',
      RELEASE,
      join(ROOT, 'charts/gateway'),
      '--namespace',
      NS,
      '--values',
      valuesFile('monitoring', values),
      '--wait',
      '--timeout',
      '5m',
    ]);
    // The API server accepted both objects (the CRDs' schemas validate them on create).
    const monitor = (await custom.getNamespacedCustomObject({
      ...MONITORING,
      namespace: NS,
      plural: 'servicemonitors',
      name: FULLNAME,
    })) as ServiceMonitor;
    const rule = (await custom.getNamespacedCustomObject({
      ...MONITORING,
      namespace: NS,
      plural: 'prometheusrules',
      name: FULLNAME,
    })) as { spec: { groups: { name: string; rules: unknown[] }[] } };
    expect(monitor.spec.endpoints[0]?.port).toBe('admin');
    expect(rule.spec.groups.length).toBeGreaterThan(0);

    const config = toYaml({
      global: { scrape_interval: '5s', evaluation_interval: '5s' },
      rule_files: ['/etc/prometheus/rules.yml'],
      scrape_configs: scrapeJobs(monitor),
    });
    await deployPrometheus(config, toYaml({ groups: rule.spec.groups }));
    const started = Date.now();

    const traffic = await runClient<{ completed: number }>(NS, {
      mode: 'requests',
      url: `http://${FULLNAME}.${NS}.svc:80/v1/chat/completions`,
      bodies: [chat('fast', false), chat('fast', true)],
      count: 20,
      concurrency: 2,
    });
    expect(traffic.completed).toBe(20);

    interface Target {
      health: string;
      labels: Record<string, string>;
      scrapePool: string;
    }
    const targets = await waitFor('both pods scraped', 120_000, async () => {
      const data = await prometheusApi<{ activeTargets: Target[] }>('/api/v1/targets?state=active');
      const up = data.activeTargets.filter((t) => t.health === 'up');
      return up.length === 2 && data.activeTargets.length === 2 ? data.activeTargets : undefined;
    });
    // Exactly the admin endpoints of the release's pods: not the proxy port, not other Services.
    for (const target of targets) {
      expect(target.labels.service).toBe(`${FULLNAME}-admin`);
      expect(target.labels.pod).toMatch(new RegExp(`^${FULLNAME}-`));
      expect(target.labels.instance).toMatch(/:9090$/);
    }
    const series = await waitFor('a gateway series queried back', 120_000, async () => {
      const data = await prometheusApi<{
        result: { metric: Record<string, string>; value: [number, string] }[];
      }>(`/api/v1/query?query=${encodeURIComponent('sum(gateway_requests_total{model="fast"})')}`);
      const value = Number(data.result[0]?.value[1] ?? 0);
      return value >= 20 ? value : undefined;
    });
    const rules = await waitFor('the rule groups evaluated', 120_000, async () => {
      const data = await prometheusApi<{ groups: { name: string; rules: { health: string }[] }[] }>(
        '/api/v1/rules',
      );
      const loaded = data.groups.flatMap((g) => g.rules);
      return loaded.length > 0 && loaded.every((r) => r.health === 'ok') ? loaded.length : undefined;
    });
    figure('monitoring', {
      targets_up: targets.length,
      gateway_requests_total_fast: series,
      rules_ok: rules,
      first_answer_after_s: Math.round((Date.now() - started) / 100) / 10,
    });
    helm(['uninstall', RELEASE, '--namespace', NS, '--wait']);
  }, 600_000);
});
