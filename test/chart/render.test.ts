/**
 * The chart rendered over its CI scenarios (charts/gateway/ci/*-values.yaml): lint, Kubernetes
 * schema validity, golden renders, and the properties the gateway depends on (restricted security,
 * a live-reloadable config mount, the shutdown budget, rollout safety, digest pinning, probes).
 * Each scenario is rendered once.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseModelToml } from '../../src/simulator/config/load.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { goldenFile } from './generate.ts';
import {
  CHART,
  ciCases,
  findObject,
  helmAsync,
  parseObjects,
  render,
  renderNotes,
  renderText,
  template,
  type K8sObject,
} from './helm.ts';
import { validateObject } from './k8s-validate.ts';

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  restartPolicy?: string;
  ports?: { name: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; subPath?: string; subPathExpr?: string }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number }; exec?: { command: string[] } } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
  terminationGracePeriodSeconds?: number;
  periodSeconds?: number;
  failureThreshold?: number;
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Record<string, unknown>[];
  securityContext?: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  topologySpreadConstraints?: Record<string, unknown>[];
}
interface DeploymentSpec {
  replicas?: number;
  strategy: { type: string; rollingUpdate?: { maxUnavailable: number | string; maxSurge: number | string } };
  template: {
    metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
    spec: PodSpec;
  };
}

const cases = ciCases();
/** Scenarios whose configuration is a file (every one but resource mode's). */
const fileCases = cases.filter((c) => c.name !== 'resource');
const rendered = new Map<string, { text: string; objects: K8sObject[] }>();

beforeAll(() => {
  for (const { name, file } of cases) {
    const text = renderText({ valuesFiles: [file] });
    rendered.set(name, { text, objects: parseObjects(text) });
  }
});

const objectsOf = (name: string): K8sObject[] => {
  const entry = rendered.get(name);
  if (!entry) throw new Error(`scenario ${name} was not rendered`);
  return entry.objects;
};
const deploymentOf = (objects: K8sObject[]): DeploymentSpec => {
  const deployment = findObject(objects, 'Deployment');
  if (!deployment) throw new Error('no Deployment rendered');
  return deployment.spec as DeploymentSpec;
};
const gatewayContainer = (spec: PodSpec): Container => {
  const container = spec.containers.find((c) => c.name === 'gateway');
  if (!container) throw new Error('no gateway container');
  return container;
};
const allContainers = (spec: PodSpec): Container[] => [...(spec.initContainers ?? []), ...spec.containers];
const podSpecs = (objects: K8sObject[]): { where: string; spec: PodSpec }[] => [
  ...objects
    .filter((o) => o.kind === 'Deployment')
    .map((o) => ({ where: `Deployment ${o.metadata.name}`, spec: (o.spec as DeploymentSpec).template.spec })),
  ...objects
    .filter((o) => o.kind === 'Pod')
    .map((o) => ({ where: `Pod ${o.metadata.name}`, spec: o.spec as PodSpec })),
];
const flag = (container: Container, name: string): string | undefined =>
  container.args?.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const configMapData = (objects: K8sObject[], name: string): Record<string, string> => {
  const cm = findObject(objects, 'ConfigMap', name);
  if (!cm) throw new Error(`no ConfigMap ${name}`);
  return cm.data as Record<string, string>;
};

describe('CI scenarios', () => {
  it('exist and cover the optional features', () => {
    expect(cases.map((c) => c.name)).toEqual(
      expect.arrayContaining(['autoscaling', 'customized', 'default', 'production', 'resource', 'simulator']),
    );
  });

  it.concurrent.for(cases)('$name: helm lint --strict passes', async ({ file }, { expect }) => {
    const result = await helmAsync(['lint', '--strict', CHART, '--values', file, '--kube-version', '1.34.0']);
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.status).toBe(0);
  });

  it.each(cases)(
    '$name: every object is valid against the Kubernetes schemas, unknown fields included',
    ({ name }) => {
      const problems = objectsOf(name).flatMap((o) =>
        validateObject(o).map((p) => `${o.kind}/${o.metadata.name}${p.path}: ${p.message}`),
      );
      expect(problems).toEqual([]);
    },
  );

  it.each(cases)('$name: matches its golden render (make chart-golden regenerates it)', ({ name }) => {
    const golden = readFileSync(goldenFile(name), 'utf8');
    expect(rendered.get(name)?.text, `${goldenFile(name)} is stale: run \`make chart-golden\``).toBe(golden);
  });

  it.each(cases)('$name: every object lands in one namespace and carries the standard labels', ({ name }) => {
    const objects = objectsOf(name);
    const namespaces = new Set(
      objects
        .filter((o) => o.kind !== 'ConfigMap' || !o.metadata.name.endsWith('-dashboards'))
        .map((o) => o.metadata.namespace),
    );
    expect(namespaces.size).toBe(1);
    for (const o of objects) {
      if (o.metadata.name.endsWith('-extra')) continue; // extraObjects are the user's
      // The helm test pod is named apart, so no selector of the release takes it for a gateway pod.
      const testPod = o.kind === 'Pod' && o.metadata.annotations?.['helm.sh/hook'] === 'test';
      expect(o.metadata.labels?.['app.kubernetes.io/name'], `${o.kind}/${o.metadata.name}`).toBe(
        testPod ? 'gateway-test' : 'gateway',
      );
      expect(o.metadata.labels?.['app.kubernetes.io/instance']).toBe('gateway');
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
  });
});

describe('restricted pod security', () => {
  it.each(cases)('$name: every pod and container meets the restricted profile', ({ name }) => {
    const specs = podSpecs(objectsOf(name));
    expect(specs.length).toBeGreaterThan(0);
    for (const { where, spec } of specs) {
      expect(spec.securityContext?.runAsNonRoot, where).toBe(true);
      expect(spec.securityContext?.runAsUser, where).toBe(65532);
      expect(spec.securityContext?.runAsGroup, where).toBe(65532);
      expect(spec.securityContext?.seccompProfile, where).toEqual({ type: 'RuntimeDefault' });
      // Only resource mode's gateway calls the Kubernetes API, with the token.
      expect(spec.automountServiceAccountToken, where).toBe(
        name === 'resource' && where.startsWith('Deployment'),
      );
      expect(spec.enableServiceLinks, where).toBe(false);
      expect([spec.hostNetwork, spec.hostPID, spec.hostIPC].filter(Boolean), where).toEqual([]);
      expect(
        (spec.volumes ?? []).filter((v) => 'hostPath' in v),
        where,
      ).toEqual([]);
      for (const container of allContainers(spec)) {
        const at = `${where} container ${container.name}`;
        const sc = container.securityContext ?? {};
        expect(sc.allowPrivilegeEscalation, at).toBe(false);
        expect(sc.readOnlyRootFilesystem, at).toBe(true);
        expect(sc.runAsNonRoot, at).toBe(true);
        expect(sc.privileged ?? false, at).toBe(false);
        expect(sc.capabilities, at).toEqual({ drop: ['ALL'] });
      }
    }
  });

  it('the service account mounts no token', () => {
    const sa = findObject(objectsOf('default'), 'ServiceAccount');
    expect(sa?.automountServiceAccountToken).toBe(false);
  });
});

describe('configuration mount and live reload', () => {
  it.each(cases)('$name: no subPath anywhere (a subPath mount never updates)', ({ name }) => {
    for (const { where, spec } of podSpecs(objectsOf(name))) {
      for (const container of allContainers(spec)) {
        for (const mount of container.volumeMounts ?? []) {
          expect(mount.subPath, `${where} ${container.name} ${mount.mountPath}`).toBeUndefined();
          expect(mount.subPathExpr, `${where} ${container.name} ${mount.mountPath}`).toBeUndefined();
        }
      }
    }
  });

  it.each(fileCases)(
    '$name: the config volume is mounted as a directory and --targets points into it',
    ({ name }) => {
      const spec = deploymentOf(objectsOf(name)).template.spec;
      const gateway = gatewayContainer(spec);
      const mount = gateway.volumeMounts?.find((m) => m.name === 'config');
      expect(mount).toBeDefined();
      const volume = spec.volumes?.find((v) => v.name === 'config') as
        | {
            configMap?: { items: { key: string; path: string }[] };
            secret?: { items: { key: string; path: string }[] };
          }
        | undefined;
      const source = volume?.configMap ?? volume?.secret;
      expect(source?.items).toHaveLength(1);
      const file = source!.items[0]!.path;
      expect(flag(gateway, 'targets')).toBe(`${mount!.mountPath}/${file}`);
    },
  );

  it('production reads its configuration from the named Secret', () => {
    const spec = deploymentOf(objectsOf('production')).template.spec;
    expect(spec.volumes?.find((v) => v.name === 'config')).toMatchObject({
      secret: { secretName: 'gateway-config' },
    });
    expect(findObject(objectsOf('production'), 'ConfigMap', 'gateway')).toBeUndefined();
  });

  it('no checksum/config annotation unless config.rolloutOnChange', () => {
    for (const { name } of cases) {
      const annotations = deploymentOf(objectsOf(name)).template.metadata.annotations ?? {};
      if (name === 'customized') continue;
      expect(annotations['checksum/config'], name).toBeUndefined();
    }
    const customized = objectsOf('customized');
    const document = configMapData(customized, 'edge')['config.json']!;
    const annotations = deploymentOf(customized).template.metadata.annotations ?? {};
    // The annotation is the sha256 of the rendered document; the ConfigMap holds it plus a newline.
    expect(annotations['checksum/config']).toBe(
      createHash('sha256').update(document.trimEnd()).digest('hex'),
    );
  });

  it.each(fileCases)('$name: a chart-managed configuration is accepted by the gateway loader', ({ name }) => {
    const objects = objectsOf(name);
    const deployment = deploymentOf(objects);
    const volume = deployment.template.spec.volumes?.find((v) => v.name === 'config') as {
      configMap?: { name: string; items: { key: string }[] };
    };
    if (!volume.configMap || !findObject(objects, 'ConfigMap', volume.configMap.name)) return; // external source
    const key = volume.configMap.items[0]!.key;
    const text = configMapData(objects, volume.configMap.name)[key]!;
    const result = parseConfigText(text, key);
    expect(result.ok ? [] : result.issues).toEqual([]);
  });

  it('the envelope carries the release name and namespace', () => {
    const text = configMapData(objectsOf('default'), 'gateway')['config.yaml']!;
    expect(parseObjects(text)[0]).toMatchObject({
      apiVersion: 'llm-gateway.dev/v1alpha1',
      kind: 'GatewayConfig',
      metadata: { name: 'gateway', namespace: 'llm-gateway' },
      spec: { targets: { llama: { url: 'http://vllm.inference.svc.cluster.local:8000/v1' } } },
    });
  });
});

describe('configuration from the Kubernetes API (config.source resource)', () => {
  const resource = (): K8sObject[] => objectsOf('resource');
  const RESOURCE_VALUES = ['charts/gateway/ci/resource-values.yaml'];

  it('renders the GatewayConfig object from config.spec, keys moved into the Secret, and no ConfigMap', () => {
    const object = findObject(resource(), 'GatewayConfig', 'gateway');
    expect(object).toMatchObject({
      apiVersion: 'llm-gateway.dev/v1alpha1',
      metadata: { namespace: 'llm-gateway' },
    });
    const spec = object!.spec as { auth: { key_definitions: Record<string, { key: unknown }> } };
    expect(spec.auth.key_definitions['team-a']!.key).toMatchObject({
      from_file: expect.stringMatching(/^\/etc\/gateway-keys\//),
    });
    expect(JSON.stringify(object)).not.toContain('sk-team-a-example-key');
    expect(resource().filter((o) => o.kind === 'ConfigMap')).toEqual([]);
  });

  it('passes --config-resource with the pod name, mounts the token and no configuration volume', () => {
    const spec = deploymentOf(resource()).template.spec;
    const gateway = gatewayContainer(spec);
    expect(flag(gateway, 'config-resource')).toBe('llm-gateway/gateway');
    expect(flag(gateway, 'targets')).toBeUndefined();
    expect(spec.automountServiceAccountToken).toBe(true);
    expect(spec.volumes?.some((v) => v.name === 'config')).toBe(false);
    expect((gateway as { env?: unknown[] }).env).toContainEqual({
      name: 'GATEWAY_POD_NAME',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    });
  });

  it('grants exactly get, list and watch on the object, patch on its status, and the status Lease', () => {
    const role = findObject(resource(), 'Role', 'gateway');
    expect(role?.rules).toEqual([
      {
        apiGroups: ['llm-gateway.dev'],
        resources: ['gatewayconfigs'],
        resourceNames: ['gateway'],
        verbs: ['get', 'list', 'watch'],
      },
      {
        apiGroups: ['llm-gateway.dev'],
        resources: ['gatewayconfigs/status'],
        resourceNames: ['gateway'],
        verbs: ['patch'],
      },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['gatewayconfig-gateway-status'],
        verbs: ['get', 'update'],
      },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
    expect(findObject(resource(), 'RoleBinding', 'gateway')).toMatchObject({
      roleRef: { kind: 'Role', name: 'gateway' },
      subjects: [{ kind: 'ServiceAccount', name: 'gateway', namespace: 'llm-gateway' }],
    });
    for (const { name } of fileCases) expect(findObject(objectsOf(name), 'Role'), name).toBeUndefined();
  });

  it('a change of config.spec changes the object, never the pod template', () => {
    const changed = render({
      valuesFiles: RESOURCE_VALUES,
      setJson: { config: { spec: { targets: { other: { url: 'http://other.example:8000/v1' } } } } },
    });
    expect(findObject(changed, 'GatewayConfig')?.spec).not.toEqual(
      findObject(resource(), 'GatewayConfig')?.spec,
    );
    expect(deploymentOf(changed).template).toEqual(deploymentOf(resource()).template);
  });

  it('a config.spec without literal keys keeps the key Secret mounted: adding the first key or removing the last never rolls the pods', () => {
    const spec = (chat: Record<string, unknown>) => ({
      config: { source: 'resource', spec: { targets: { chat: { url: 'http://vllm:8000/v1', ...chat } } } },
    });
    const keyless = render({ setJson: spec({}) });
    const keyed = render({ setJson: spec({ gateway_key: 'sk-provider-example' }) });
    expect(JSON.stringify(findObject(keyed, 'GatewayConfig')?.spec)).toContain('from_file');
    expect(findObject(keyed, 'Secret', 'gateway-keys')).toMatchObject({ data: expect.any(Object) });
    const empty = findObject(keyless, 'Secret', 'gateway-keys') as { data?: unknown } | undefined;
    expect(empty).toBeDefined();
    expect(empty?.data).toBeUndefined();
    expect(deploymentOf(keyless).template).toEqual(deploymentOf(keyed).template);
  });

  it('refuses config.rolloutOnChange and an external ConfigMap in resource mode', () => {
    const rollout = template({
      valuesFiles: RESOURCE_VALUES,
      setJson: { config: { rolloutOnChange: true } },
    });
    expect(rollout.status).not.toBe(0);
    expect(rollout.stderr).toContain('config.rolloutOnChange does not apply to config.source resource');
    const external = template({
      valuesFiles: RESOURCE_VALUES,
      setJson: { config: { existingConfigMap: 'mine' } },
    });
    expect(external.status).not.toBe(0);
    expect(external.stderr).toContain('only apply to config.source file');
  });

  it('its NOTES say how to read the status', () => {
    const notes = renderNotes(RESOURCE_VALUES);
    expect(notes).toContain('kubectl -n llm-gateway get gatewayconfig gateway');
    expect(notes).not.toContain('ConfigMap gateway');
  });
});

describe('endpoint discovery (`service:` provider entries)', () => {
  const pools = {
    llama: {
      strategy: 'least_request',
      providers: [
        { name: 'near', service: { name: 'vllm', port: 8000, path: '/v1' } },
        { name: 'far', service: { name: 'vllm', namespace: 'models', port: 8000 } },
      ],
    },
  };

  it('grants list and watch on endpointslices in each Service namespace, and mounts the token', () => {
    const objects = render({ setJson: { config: { spec: { targets: pools } } } });
    const roles = objects.filter((o) => o.kind === 'Role');
    expect(roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual([
      'llm-gateway/gateway-endpointslices',
      'models/gateway-endpointslices',
    ]);
    for (const role of roles)
      expect(role.rules).toEqual([
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ]);
    const bindings = objects.filter((o) => o.kind === 'RoleBinding');
    expect(bindings).toHaveLength(2);
    for (const binding of bindings)
      expect(binding).toMatchObject({
        roleRef: { kind: 'Role', name: 'gateway-endpointslices' },
        subjects: [{ kind: 'ServiceAccount', name: 'gateway', namespace: 'llm-gateway' }],
      });
    expect(deploymentOf(objects).template.spec.automountServiceAccountToken).toBe(true);
    for (const object of objects) expect(validateObject(object), object.kind).toEqual([]);
  });

  it('grants nothing without a `service:` entry, and endpointDiscovery.namespaces for a configuration it cannot see', () => {
    for (const { name } of fileCases)
      expect(
        objectsOf(name).filter((o) => o.kind === 'Role' && o.metadata.name.endsWith('-endpointslices')),
        name,
      ).toEqual([]);
    const external = render({
      setJson: { config: { existingConfigMap: 'mine' }, endpointDiscovery: { namespaces: ['models'] } },
    });
    expect(findObject(external, 'Role', 'gateway-endpointslices')?.metadata.namespace).toBe('models');
    expect(deploymentOf(external).template.spec.automountServiceAccountToken).toBe(true);
  });
});

describe('shutdown budget', () => {
  it('defaults: 0 preStop + 5 delay + 300 drain + 5 admin close + 20 margin = 330 s', () => {
    const spec = deploymentOf(objectsOf('default')).template.spec;
    expect(spec.terminationGracePeriodSeconds).toBe(330);
    const gateway = gatewayContainer(spec);
    expect(flag(gateway, 'shutdown-delay-secs')).toBe('5');
    expect(flag(gateway, 'shutdown-timeout-secs')).toBe('300');
    expect(gateway.lifecycle).toBeUndefined();
  });

  it('production: 5 preStop + 10 delay + 600 drain + 5 + 20 = 640 s, with a native preStop sleep', () => {
    const spec = deploymentOf(objectsOf('production')).template.spec;
    expect(spec.terminationGracePeriodSeconds).toBe(640);
    const gateway = gatewayContainer(spec);
    expect(gateway.lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(flag(gateway, 'shutdown-timeout-secs')).toBe('600');
  });

  it.each(['1.30.0', '1.34.0'])(
    'Kubernetes %s: the preStop pause is the native sleep action',
    (kubeVersion) => {
      const objects = render({
        valuesFiles: [cases.find((c) => c.name === 'production')!.file],
        kubeVersion,
      });
      expect(gatewayContainer(deploymentOf(objects).template.spec).lifecycle).toEqual({
        preStop: { sleep: { seconds: 5 } },
      });
    },
  );

  it('Kubernetes 1.29 (sleep behind a feature gate): the pause runs the image node instead, valid and lint-clean', async () => {
    const file = cases.find((c) => c.name === 'production')!.file;
    const objects = render({ valuesFiles: [file], kubeVersion: '1.29.0' });
    const spec = deploymentOf(objects).template.spec;
    expect(gatewayContainer(spec).lifecycle).toEqual({
      preStop: { exec: { command: ['/nodejs/bin/node', '-e', 'setTimeout(() => {}, 5000)'] } },
    });
    expect(spec.terminationGracePeriodSeconds).toBe(640); // the pause counts the same
    for (const o of objects) expect(validateObject(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    const lint = await helmAsync(['lint', '--strict', CHART, '--values', file, '--kube-version', '1.29.0']);
    expect(lint.stderr + lint.stdout).toContain('0 chart(s) failed');
  });

  it('the 1.29 preStop command waits its seconds and exits 0 (run with this node)', () => {
    const objects = render({
      valuesFiles: [cases.find((c) => c.name === 'default')!.file],
      setJson: { preStopSleepSeconds: 1 },
      kubeVersion: '1.29.0',
    });
    const [node, ...args] = gatewayContainer(deploymentOf(objects).template.spec).lifecycle!.preStop!.exec!
      .command;
    expect(node).toBe('/nodejs/bin/node');
    const started = Date.now();
    const run = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 10_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('an explicit value at or above the budget is kept', () => {
    expect(deploymentOf(objectsOf('customized')).template.spec.terminationGracePeriodSeconds).toBe(400);
    const objects = render({
      valuesFiles: [cases.find((c) => c.name === 'default')!.file],
      setJson: { terminationGracePeriodSeconds: 330 },
    });
    expect(deploymentOf(objects).template.spec.terminationGracePeriodSeconds).toBe(330);
  });

  it('an explicit value below the budget fails rendering and explains the sum', () => {
    const result = template({
      valuesFiles: [cases.find((c) => c.name === 'default')!.file],
      setJson: { terminationGracePeriodSeconds: 329 },
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      "terminationGracePeriodSeconds=329 is below the gateway's shutdown budget of 330 s",
    );
  });

  it('the budget follows a longer drain timeout', () => {
    const objects = render({
      valuesFiles: [cases.find((c) => c.name === 'default')!.file],
      setJson: { gateway: { shutdownTimeoutSecs: 1200 } },
    });
    expect(deploymentOf(objects).template.spec.terminationGracePeriodSeconds).toBe(1230);
  });
});

describe('probes', () => {
  it.each(cases)(
    '$name: startup and liveness on /healthz, readiness on /readyz, all on the admin port',
    ({ name }) => {
      const gateway = gatewayContainer(deploymentOf(objectsOf(name)).template.spec);
      const admin = gateway.ports?.find((p) => p.name === 'admin');
      expect(admin).toBeDefined();
      expect(flag(gateway, 'metrics-port')).toBe(String(admin!.containerPort));
      expect(flag(gateway, 'port')).toBe(
        String(gateway.ports?.find((p) => p.name === 'http')?.containerPort),
      );
      expect(gateway.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'admin' });
      expect(gateway.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'admin' });
      expect(gateway.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'admin' });
      // A wedged pod is killed after 15 s, not after the whole drain budget.
      expect(gateway.livenessProbe?.terminationGracePeriodSeconds).toBe(15);
      expect(gateway.readinessProbe?.periodSeconds).toBe(5);
    },
  );
});

describe('rollout safety and scaling', () => {
  it.each(cases)('$name: rolling update never removes a serving pod first', ({ name }) => {
    expect(deploymentOf(objectsOf(name)).strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 0, maxSurge: 1 },
    });
  });

  it('Recreate renders once rollingUpdate is removed', () => {
    const objects = render({
      valuesFiles: [cases.find((c) => c.name === 'default')!.file],
      setJson: { strategy: { type: 'Recreate', rollingUpdate: null } },
    });
    expect(deploymentOf(objects).strategy).toEqual({ type: 'Recreate' });
  });

  it('a PodDisruptionBudget exists exactly when more than one replica does', () => {
    const pdbOf = (name: string) => findObject(objectsOf(name), 'PodDisruptionBudget');
    expect(pdbOf('default')).toBeUndefined(); // replicas 1
    expect(pdbOf('simulator')?.spec).toMatchObject({
      maxUnavailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
    expect(pdbOf('production')).toBeDefined(); // replicas 3
    expect(pdbOf('autoscaling')).toBeDefined(); // minReplicas 2
    expect(pdbOf('customized')).toBeUndefined(); // replicas 4, podDisruptionBudget.enabled false
    const single = render({
      valuesFiles: [cases.find((c) => c.name === 'autoscaling')!.file],
      setJson: { autoscaling: { minReplicas: 1 } },
    });
    expect(findObject(single, 'PodDisruptionBudget')).toBeUndefined();
  });

  it('the PDB selects the gateway pods', () => {
    const objects = objectsOf('production');
    const pdb = findObject(objects, 'PodDisruptionBudget')!;
    const labels = deploymentOf(objects).template.metadata.labels;
    const selector = (pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    for (const [k, v] of Object.entries(selector)) expect(labels[k]).toBe(v);
  });

  it('an HPA replaces spec.replicas', () => {
    const objects = objectsOf('autoscaling');
    expect(deploymentOf(objects).replicas).toBeUndefined();
    const hpa = findObject(objects, 'HorizontalPodAutoscaler');
    expect(hpa?.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'gateway' },
      minReplicas: 2,
      maxReplicas: 6,
      behavior: { scaleDown: { stabilizationWindowSeconds: 900 } },
    });
    for (const name of ['default', 'production', 'simulator', 'customized']) {
      expect(findObject(objectsOf(name), 'HorizontalPodAutoscaler'), name).toBeUndefined();
      expect(deploymentOf(objectsOf(name)).replicas, name).toBeGreaterThan(0);
    }
  });

  it('the default spread constraint is soft, per node, per rollout revision, on the pod labels', () => {
    const spec = deploymentOf(objectsOf('default')).template;
    expect(spec.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        matchLabelKeys: ['pod-template-hash'],
        labelSelector: {
          matchLabels: { 'app.kubernetes.io/name': 'gateway', 'app.kubernetes.io/instance': 'gateway' },
        },
      },
    ]);
  });
});

describe('image references', () => {
  const images = (objects: K8sObject[]): string[] =>
    podSpecs(objects).flatMap(({ spec }) =>
      allContainers(spec)
        .filter((c) => c.name === 'gateway' || c.name === 'simulator' || c.name === 'check')
        .map((c) => c.image),
    );

  const digest = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';
  const appVersion = /^appVersion: '?([^'\n]+)'?$/m.exec(readFileSync(`${CHART}/Chart.yaml`, 'utf8'))?.[1];

  it('a digest renders repository@sha256:... in every container', () => {
    expect(new Set(images(objectsOf('production')))).toEqual(
      new Set([`registry.example.com/platform/gateway@${digest}`]),
    );
    const simulator = render({
      valuesFiles: [cases.find((c) => c.name === 'simulator')!.file],
      setJson: { image: { digest } },
    });
    const refs = images(simulator);
    expect(refs.length).toBeGreaterThanOrEqual(3); // gateway, simulator sidecar, helm test pod
    expect(new Set(refs)).toEqual(new Set([`ghcr.io/llm-gateway/gateway@${digest}`]));
  });

  it('a tag together with a digest fails rendering and says how to deploy by tag', () => {
    const both = template({
      valuesFiles: [cases.find((c) => c.name === 'simulator')!.file],
      setJson: { image: { tag: '9.9.9', digest } },
    });
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain(
      `image.tag "9.9.9" is set together with image.digest ${digest}: the digest pins the image`,
    );
    expect(both.stderr).toContain("clear the digest as well (image.digest: ''");
    const byTag = render({
      valuesFiles: [cases.find((c) => c.name === 'simulator')!.file],
      setJson: { image: { tag: '9.9.9', digest: '' } },
    });
    expect(new Set(images(byTag))).toEqual(new Set(['ghcr.io/llm-gateway/gateway:9.9.9']));
  });

  it.each(cases)(
    '$name: app.kubernetes.io/version names what runs (appVersion for a digest, else the tag)',
    ({ name }) => {
      const objects = objectsOf(name);
      const image = images(objects)[0]!;
      const expected = image.includes('@sha256:') ? appVersion : image.slice(image.lastIndexOf(':') + 1);
      for (const o of objects) {
        if (o.metadata.name.endsWith('-extra')) continue; // extraObjects are the user's
        expect(o.metadata.labels?.['app.kubernetes.io/version'], `${o.kind}/${o.metadata.name}`).toBe(
          expected,
        );
      }
      const template = deploymentOf(objects).template.metadata.labels;
      expect(template['app.kubernetes.io/version']).toBe(expected);
    },
  );

  it('the version label of a digest is the appVersion, not a tag', () => {
    const deployment = findObject(objectsOf('production'), 'Deployment')!;
    expect(deployment.metadata.labels?.['app.kubernetes.io/version']).toBe(appVersion);
    expect(
      findObject(objectsOf('customized'), 'Deployment')!.metadata.labels?.['app.kubernetes.io/version'],
    ).toBe('0.1.0-rc.1');
  });

  it('without a digest the tag defaults to the chart appVersion', () => {
    expect(new Set(images(objectsOf('default')))).toEqual(
      new Set([`ghcr.io/llm-gateway/gateway:${appVersion}`]),
    );
    expect(new Set(images(objectsOf('customized')))).toEqual(
      new Set(['ghcr.io/llm-gateway/gateway:0.1.0-rc.1']),
    );
  });
});

describe('simulator sidecar', () => {
  it('runs as a native sidecar from the same image, on loopback, probed from inside', () => {
    const spec = deploymentOf(objectsOf('simulator')).template.spec;
    const sim = spec.initContainers?.find((c) => c.name === 'simulator');
    expect(sim).toBeDefined();
    expect(sim!.restartPolicy).toBe('Always');
    expect(sim!.image).toBe(gatewayContainer(spec).image);
    expect(sim!.command).toEqual(['/nodejs/bin/node', '/app/bin/sim.js', 'serve']);
    expect(sim!.args).toEqual(
      expect.arrayContaining([
        '--host=127.0.0.1',
        '--port=8000',
        '--models=/etc/sim/models',
        '--enable-directives',
        '--max-waiting=64',
        '--reasoning-field=reasoning',
      ]),
    );
    expect(sim!.startupProbe?.exec?.command.slice(0, 2)).toEqual(['/nodejs/bin/node', '-e']);
    expect(sim!.startupProbe?.exec?.command[2]).toContain('http://127.0.0.1:8000/health');
    expect(sim!.volumeMounts).toEqual([{ name: 'sim-models', mountPath: '/etc/sim/models', readOnly: true }]);
    expect(findObject(objectsOf('default'), 'ConfigMap', 'gateway-sim-models')).toBeUndefined();
    expect(deploymentOf(objectsOf('default')).template.spec.initContainers).toBeUndefined();
  });

  it('its model files load with the simulator loader', () => {
    const data = configMapData(objectsOf('simulator'), 'gateway-sim-models');
    expect(Object.keys(data).sort()).toEqual(['fast.toml', 'faulty.toml', 'slow.toml']);
    const fast = parseModelToml(data['fast.toml']!, 'fast.toml');
    expect(fast).toMatchObject({ ok: true });
    const faulty = parseModelToml(data['faulty.toml']!, 'faulty.toml');
    expect(JSON.stringify(faulty)).toContain('cut_mid_frame');
    for (const [file, text] of Object.entries(data)) {
      const result = parseModelToml(text, file);
      expect(result.ok ? [] : result, file).toEqual([]);
    }
  });

  it('each simulator model is wired into the configuration as an alias on loopback', () => {
    const text = configMapData(objectsOf('simulator'), 'gateway')['config.yaml']!;
    const targets = (
      parseObjects(text)[0] as unknown as { spec: { targets: Record<string, { url?: string }> } }
    ).spec.targets;
    expect(Object.keys(targets).sort()).toEqual(['chat', 'fast', 'faulty', 'slow']);
    for (const alias of ['fast', 'faulty', 'slow'])
      expect(targets[alias]).toEqual({ url: 'http://127.0.0.1:8000/v1' });
  });

  it('the built-in model is wired as "sim" when no models are given', () => {
    const objects = render({ setJson: { simulator: { sidecar: { enabled: true } } } });
    const text = configMapData(objects, 'gateway')['config.yaml']!;
    expect(parseObjects(text)[0]).toMatchObject({
      spec: { targets: { sim: { url: 'http://127.0.0.1:8000/v1' } } },
    });
    const sim = deploymentOf(objects).template.spec.initContainers!.find((c) => c.name === 'simulator')!;
    expect(sim.args?.some((a) => a.startsWith('--models'))).toBe(false);
    expect(sim.volumeMounts).toBeUndefined();
  });
});

describe('network policy', () => {
  it('admits clients on the proxy port and only the monitoring namespace on the admin port', () => {
    const policy = findObject(objectsOf('production'), 'NetworkPolicy');
    const testPod = {
      podSelector: {
        matchLabels: { 'app.kubernetes.io/instance': 'gateway', 'app.kubernetes.io/component': 'test' },
      },
    };
    expect(policy?.spec).toMatchObject({
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          ports: [{ port: 'http', protocol: 'TCP' }],
          from: [{ namespaceSelector: { matchLabels: { 'gateway-client': 'true' } } }, testPod],
        },
        {
          ports: [{ port: 'admin', protocol: 'TCP' }],
          from: [
            { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
            testPod,
          ],
        },
      ],
    });
    const egress = (policy!.spec as { egress: { ports?: { port: number }[] }[] }).egress;
    expect(egress).toHaveLength(2);
    expect(findObject(objectsOf('default'), 'NetworkPolicy')).toBeUndefined();
  });

  it('allows DNS to the cluster DNS pods only, not port 53 anywhere', () => {
    const policy = findObject(objectsOf('production'), 'NetworkPolicy')!;
    const egress = (policy.spec as { egress: Record<string, unknown>[] }).egress;
    expect(egress[0]).toEqual({
      to: [
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
          podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        },
      ],
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
    });
    // Every rule names its peers: none opens a port to every destination.
    for (const rule of egress) expect(rule.to, JSON.stringify(rule)).toBeDefined();
  });

  it('takes the DNS peers from networkPolicy.egress.dns.to for clusters whose DNS differs', () => {
    const nodeLocal = [{ ipBlock: { cidr: '169.254.20.10/32' } }];
    const objects = render({
      valuesFiles: [cases.find((c) => c.name === 'production')!.file],
      setJson: { networkPolicy: { egress: { dns: { to: nodeLocal } } } },
    });
    const egress = (findObject(objects, 'NetworkPolicy')!.spec as { egress: { to: unknown[] }[] }).egress;
    expect(egress[0]!.to).toEqual(nodeLocal);
  });

  it('refuses restricted egress with no rule for the upstreams', () => {
    const result = template({
      valuesFiles: [cases.find((c) => c.name === 'production')!.file],
      setJson: { networkPolicy: { egress: { to: [] } } },
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'networkPolicy.egress.enabled with an empty networkPolicy.egress.to would allow DNS only',
    );
    expect(result.stderr).toContain('Add one egress rule per destination to networkPolicy.egress.to');
  });

  it('lets the helm test pod through, and only when there is one', () => {
    const objects = objectsOf('production');
    const policy = findObject(objects, 'NetworkPolicy')!;
    const pod = findObject(objects, 'Pod')!;
    const peers = (
      policy.spec as { ingress: { from: { podSelector?: { matchLabels: Record<string, string> } }[] }[] }
    ).ingress
      .flatMap((rule) => rule.from)
      .filter((peer) => peer.podSelector);
    expect(peers).toHaveLength(2);
    for (const peer of peers) {
      for (const [k, v] of Object.entries(peer.podSelector!.matchLabels))
        expect(pod.metadata.labels?.[k]).toBe(v);
    }
    const withoutTests = render({
      valuesFiles: [cases.find((c) => c.name === 'production')!.file],
      setJson: { tests: { enabled: false } },
    });
    const strict = findObject(withoutTests, 'NetworkPolicy')!;
    const strictPeers = (strict.spec as { ingress: { from: Record<string, unknown>[] }[] }).ingress.flatMap(
      (r) => r.from,
    );
    expect(strictPeers.filter((peer) => 'podSelector' in peer)).toEqual([]);
  });
});

describe('monitoring objects', () => {
  it('the ServiceMonitor selects the admin Service by its labels and scrapes its named port', () => {
    const objects = objectsOf('production');
    const monitor = findObject(objects, 'ServiceMonitor')!;
    const spec = monitor.spec as {
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string }[];
    };
    const services = objects
      .filter((o) => o.kind === 'Service')
      .filter((s) =>
        Object.entries(spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
      );
    expect(services.map((s) => s.metadata.name)).toEqual(['gateway-admin']);
    const ports = (services[0]!.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
    expect(ports).toContain(spec.endpoints[0]!.port);
    expect(monitor.metadata.labels?.release).toBe('kube-prometheus-stack');
  });

  it('the PodMonitor scrapes the container port named admin', () => {
    const objects = objectsOf('customized');
    const monitor = findObject(objects, 'PodMonitor')!;
    expect((monitor.spec as { podMetricsEndpoints: { port: string }[] }).podMetricsEndpoints[0]!.port).toBe(
      'admin',
    );
    expect(findObject(objects, 'ServiceMonitor')).toBeUndefined();
    expect(objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name)).toEqual(['edge']);
  });

  it('fails with a clear message when the monitoring CRDs are not served, unless skipCrdCheck', () => {
    const file = cases.find((c) => c.name === 'production')!.file;
    const missing = template({ valuesFiles: [file], apiVersions: [] });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('does not serve monitoring.coreos.com/v1 ServiceMonitor');
    expect(missing.stderr).toContain('--api-versions monitoring.coreos.com/v1/ServiceMonitor');
    const skipped = render({
      valuesFiles: [file],
      apiVersions: [],
      setJson: { metrics: { skipCrdCheck: true } },
    });
    expect(findObject(skipped, 'ServiceMonitor')).toBeDefined();
    expect(findObject(skipped, 'PrometheusRule')).toBeDefined();
  });

  it('the dashboard ConfigMap carries the Grafana sidecar label and valid JSON', () => {
    const cm = findObject(objectsOf('production'), 'ConfigMap', 'gateway-dashboards')!;
    expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'LLM' });
    const dashboard = JSON.parse((cm.data as Record<string, string>)['gateway.json']!) as {
      uid: string;
      panels: unknown[];
    };
    expect(dashboard.uid).toBe('llm-gateway-overview');
    const custom = findObject(objectsOf('customized'), 'ConfigMap', 'edge-dashboards')!;
    expect(custom.metadata.namespace).toBe('grafana');
    expect(custom.metadata.labels?.grafana_dashboard_edge).toBe('yes');
  });
});

describe('rules that span several values', () => {
  const defaults = () => cases.find((c) => c.name === 'default')!.file;
  it.each([
    ['no alias at all (chart defaults)', {}, 'config.spec.targets is empty'],
    [
      'ServiceMonitor and PodMonitor together',
      { metrics: { skipCrdCheck: true, serviceMonitor: { enabled: true }, podMonitor: { enabled: true } } },
      'mutually exclusive',
    ],
    [
      'rolloutOnChange with an external ConfigMap',
      { config: { existingConfigMap: 'mine', rolloutOnChange: true } },
      'config.rolloutOnChange needs the chart-managed ConfigMap',
    ],
    [
      'an existing ConfigMap and Secret together',
      { config: { existingConfigMap: 'a', existingSecret: 'b' } },
      'mutually exclusive',
    ],
    [
      'a simulator model named like a configured alias',
      { simulator: { sidecar: { enabled: true, models: { llama: {} } } } },
      'alias "llama" is already defined',
    ],
    ['the proxy and admin ports equal', { gateway: { adminPort: 3000 } }, 'must differ'],
    [
      'a ServiceMonitor without the admin Service',
      {
        adminService: { enabled: false },
        metrics: { skipCrdCheck: true, serviceMonitor: { enabled: true } },
      },
      'needs adminService.enabled',
    ],
    [
      'Recreate with the default rollingUpdate still merged in',
      { strategy: { type: 'Recreate' } },
      'strategy.type Recreate does not take strategy.rollingUpdate',
    ],
    [
      'an unknown strategy type',
      { strategy: { type: 'BlueGreen' } },
      'strategy.type "BlueGreen" is not a Deployment strategy',
    ],
    [
      'autoscaling bounds reversed',
      { autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } },
      'must not exceed',
    ],
  ])('%s fails rendering', (_label, values, message) => {
    const result = template({
      valuesFiles: Object.keys(values).length === 0 ? [] : [defaults()],
      setJson: values,
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(message);
  });
});

describe('helm test hook', () => {
  it('checks readiness and a model list, plus a completion when the simulator is wired', () => {
    const pod = findObject(objectsOf('simulator'), 'Pod')!;
    expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const script = ((pod.spec as PodSpec).containers[0]!.args ?? []).join('\n');
    expect(script).toContain('http://gateway-admin.llm-gateway.svc:9090/readyz');
    expect(script).toContain('http://gateway.llm-gateway.svc:80/v1/models');
    expect(script).toContain('const alias = "fast"');
    expect(findObject(objectsOf('customized'), 'Pod')).toBeUndefined(); // tests.enabled false
    const defaultScript = (
      (findObject(objectsOf('default'), 'Pod')!.spec as PodSpec).containers[0]!.args ?? []
    ).join('\n');
    expect(defaultScript).not.toContain('chat/completions');
  });

  it('keeps its pod for `helm test --logs` unless tests.keepPod is false', () => {
    const annotations = (keepPod?: boolean) => {
      const defaultsFile = cases.find((c) => c.name === 'default')!.file;
      const result = template({
        valuesFiles: [defaultsFile],
        setJson: keepPod === undefined ? {} : { tests: { keepPod } },
      });
      expect(result.status, result.stderr).toBe(0);
      return findObject(parseObjects(result.stdout), 'Pod')!.metadata.annotations ?? {};
    };
    // A kept pod is no gateway pod to any selector of the release.
    const objects = objectsOf('production');
    const testLabels = findObject(objects, 'Pod')!.metadata.labels ?? {};
    const selectors = objects.flatMap((o) => {
      const spec = o.spec as { selector?: { matchLabels?: Record<string, string> } | Record<string, string> };
      const selector = spec?.selector;
      if (!selector || o.kind === 'ServiceMonitor') return [];
      const labels = (selector as { matchLabels?: Record<string, string> }).matchLabels ?? selector;
      return [{ kind: o.kind, labels: labels as Record<string, string> }];
    });
    expect(selectors.map((s) => s.kind).sort()).toEqual(
      expect.arrayContaining(['Deployment', 'PodDisruptionBudget', 'Service']),
    );
    for (const { kind, labels } of selectors)
      expect(
        Object.entries(labels).every(([k, v]) => testLabels[k] === v),
        `${kind} selects the test pod`,
      ).toBe(false);
    // Kept by default: only the next `helm test` deletes it, and only a failure prints its log.
    expect(annotations()).toMatchObject({
      'helm.sh/hook-delete-policy': 'before-hook-creation',
      'helm.sh/hook-output-log-policy': 'hook-failed',
    });
    expect(annotations(false)).toMatchObject({
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded,hook-failed',
      'helm.sh/hook-output-log-policy': 'hook-succeeded,hook-failed',
    });
  });

  it('its script is valid JavaScript', () => {
    for (const name of ['default', 'simulator']) {
      const script = ((findObject(objectsOf(name), 'Pod')!.spec as PodSpec).containers[0]!.args ?? [])[0]!;
      expect(() => new Function(script), name).not.toThrow();
    }
  });
});

describe('NOTES.txt', () => {
  it('prints the endpoint, the reload delay and the shutdown arithmetic', () => {
    const notes = renderNotes([cases.find((c) => c.name === 'default')!.file]);
    expect(notes).toContain('http://gateway.llm-gateway.svc:80/v1');
    expect(notes).toContain('within\n  about 90 seconds with the default one-minute period');
    expect(notes).toContain('terminationGracePeriodSeconds 330 >= preStop 0');
    expect(notes).toContain('= 330 s.');
    expect(notes).not.toContain('simulator sidecar');
  });

  it('tells how to reach the simulator and that it is a test setup', () => {
    const notes = renderNotes([cases.find((c) => c.name === 'simulator')!.file]);
    expect(notes).toContain('"model": "fast"');
    expect(notes).toContain('The simulator sidecar answers the aliases fast, faulty, slow');
    expect(notes).toContain('disable simulator.sidecar for production');
  });
});
