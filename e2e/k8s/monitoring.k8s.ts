/**
 * Monitoring on a real cluster: the Prometheus Operator's CRDs installed, the chart's
 * ServiceMonitor and PrometheusRule accepted by the API server, and a Prometheus (an image
 * assembled from the host's prometheus) that scrapes exactly what the ServiceMonitor selects and
 * evaluates the PrometheusRule's groups; a gateway series is queried back. Debian's Prometheus is
 * built without Kubernetes service discovery, so the ServiceMonitor's selection (its namespaces,
 * the Service labels, the endpoint port by name, ready endpoints) is resolved here through the API
 * server into the scrape targets, as the operator's generated discovery would select them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import {
  CRDS_DIR,
  KEEP,
  PROMETHEUS_IMAGE,
  RESTRICTED_POD,
  ROOT,
  baseValues,
  chat,
  core,
  createNamespace,
  custom,
  deleteNamespace,
  deploySingle,
  discovery,
  figure,
  phase,
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
    selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    endpoints: {
      port?: string;
      path?: string;
      interval?: string;
      scrapeTimeout?: string;
      scheme?: string;
      relabelings?: unknown[];
    }[];
  };
}

interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

/**
 * The targets a ServiceMonitor's endpoint selects: in each selected namespace, the ready addresses
 * of the endpoint slices of every Service carrying all the selector's labels, on the port with the
 * endpoint's name.
 */
async function selectedTargets(monitor: ServiceMonitor, endpointIndex: number): Promise<TargetGroup[]> {
  const endpoint = monitor.spec.endpoints[endpointIndex]!;
  // What this resolution does not implement must not be silently ignored.
  const unsupported = [
    monitor.spec.selector.matchExpressions?.length ? 'selector.matchExpressions' : '',
    monitor.spec.namespaceSelector?.any ? 'namespaceSelector.any' : '',
    endpoint.relabelings?.length ? 'endpoints[].relabelings' : '',
  ].filter(Boolean);
  if (unsupported.length)
    throw new Error(`the ServiceMonitor uses ${unsupported.join(', ')}: resolve them here too`);
  const namespaces = monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace];
  const labelSelector = Object.entries(monitor.spec.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const groups: TargetGroup[] = [];
  for (const namespace of namespaces) {
    for (const service of (await core.listNamespacedService({ namespace, labelSelector })).items) {
      const name = service.metadata!.name!;
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: `kubernetes.io/service-name=${name}`,
      });
      for (const slice of slices.items) {
        const port = slice.ports?.find((p) => p.name === endpoint.port);
        if (!port) continue;
        for (const e of slice.endpoints.filter((x) => x.conditions?.ready === true))
          groups.push({
            targets: e.addresses.map((address) => `${address}:${port.port}`),
            labels: { namespace, service: name, pod: e.targetRef?.name ?? '' },
          });
      }
    }
  }
  return groups;
}

/** The scrape job of a ServiceMonitor endpoint, its targets in a file the job reads. */
function scrapeJob(
  monitor: ServiceMonitor,
  endpointIndex: number,
  targetsFile: string,
): Record<string, unknown> {
  const endpoint = monitor.spec.endpoints[endpointIndex]!;
  return {
    job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${endpointIndex}`,
    scheme: endpoint.scheme ?? 'http',
    metrics_path: endpoint.path ?? '/metrics',
    ...(endpoint.interval ? { scrape_interval: endpoint.interval } : {}),
    ...(endpoint.scrapeTimeout ? { scrape_timeout: endpoint.scrapeTimeout } : {}),
    file_sd_configs: [{ files: [targetsFile] }],
  };
}

async function deployPrometheus(files: Record<string, string>): Promise<void> {
  await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'prometheus' }, data: files },
  });
  await deploySingle(
    NS,
    'prometheus',
    {
      name: 'prometheus',
      image: PROMETHEUS_IMAGE,
      args: [
        '--config.file=/etc/prometheus/prometheus.yml',
        '--storage.tsdb.path=/data',
        '--web.listen-address=:9090',
      ],
      ports: [{ name: 'web', containerPort: 9090 }],
      readinessProbe: { httpGet: { path: '/-/ready', port: 'web' }, periodSeconds: 2 },
      resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
      volumeMounts: [
        { name: 'config', mountPath: '/etc/prometheus', readOnly: true },
        { name: 'data', mountPath: '/data' },
      ],
    },
    {
      securityContext: { ...RESTRICTED_POD, fsGroup: 65532 },
      volumes: [
        { name: 'config', configMap: { name: 'prometheus' } },
        { name: 'data', emptyDir: {} },
      ],
    },
  );
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

/** CRDs this run installed (and removes again): a cluster that already has them keeps its own. */
let installedCrds: string[] = [];

beforeAll(async () => {
  await createNamespace(NS);
  const present = new Set(
    kubectl(['get', 'crd', '-o', 'name'])
      .split('\n')
      .map((line) => line.replace('customresourcedefinition.apiextensions.k8s.io/', '').trim()),
  );
  const files = crdFiles().filter((f, i) => !present.has(crdNames()[i]!));
  installedCrds = crdNames().filter((n) => !present.has(n));
  if (files.length > 0) kubectl(['apply', '--server-side', ...files.flatMap((f) => ['-f', f])]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crdNames().map((n) => `crd/${n}`)]);
  phase(
    `monitoring CRDs: ${installedCrds.length ? `installed ${installedCrds.join(', ')}` : 'already present'}`,
  );
}, 300_000);

beforeEach((ctx) => phase(`test: ${ctx.task.name}`));

afterAll(async () => {
  if (KEEP) return;
  await deleteNamespace(NS);
  if (installedCrds.length > 0)
    kubectl(['delete', '--ignore-not-found', '--wait=false', ...installedCrds.map((n) => `crd/${n}`)]);
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

    // `helm --wait` returns once the pods are ready; the EndpointSlice controller marks their
    // endpoints ready a moment later.
    let targets = await selectedTargets(monitor, 0);
    for (let waited = 0; targets.length < 2 && waited < 30_000; waited += 500) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      targets = await selectedTargets(monitor, 0);
    }
    expect(targets.map((t) => t.labels.service)).toEqual([`${FULLNAME}-admin`, `${FULLNAME}-admin`]);
    const config = toYaml({
      global: { scrape_interval: '5s', evaluation_interval: '5s' },
      rule_files: ['/etc/prometheus/rules.yml'],
      scrape_configs: [scrapeJob(monitor, 0, '/etc/prometheus/targets.json')],
    });
    await deployPrometheus({
      'prometheus.yml': config,
      'rules.yml': toYaml({ groups: rule.spec.groups }),
      'targets.json': JSON.stringify(targets),
    });
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
    const scraped = await waitFor('both pods scraped', 120_000, async () => {
      const data = await prometheusApi<{ activeTargets: Target[] }>('/api/v1/targets?state=active');
      const up = data.activeTargets.filter((t) => t.health === 'up');
      return up.length === 2 && data.activeTargets.length === 2 ? data.activeTargets : undefined;
    });
    // Exactly the admin endpoints of the release's pods: not the proxy port, not other Services.
    for (const target of scraped) {
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
      targets_up: scraped.length,
      gateway_requests_total_fast: series,
      rules_ok: rules,
      first_answer_after_s: Math.round((Date.now() - started) / 100) / 10,
    });
    helm(['uninstall', RELEASE, '--namespace', NS, '--wait']);
  }, 600_000);
});
