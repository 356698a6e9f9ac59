/**
 * values.schema.json: generated and current, strict (unknown keys and bad values are refused by
 * helm itself, with the path in the message), and every value of values.yaml changes the render.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SCHEMA_FILE, expectedSchemaText } from './generate.ts';
import { CHART, leaves, template, templateAsync } from './helm.ts';

const withTarget = { config: { spec: { targets: { llama: { url: 'http://vllm:8000/v1' } } } } };

describe('values.schema.json', () => {
  it('is current (make chart-golden regenerates it from test/chart/values-schema.ts and `gateway schema`)', async () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'values.schema.json is stale: run `make chart-golden`').toBe(
      await expectedSchemaText(),
    );
  });

  it('embeds the gateway configuration schema for config.spec', () => {
    const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as {
      properties: { config: { properties: { spec: { $ref: string } } } };
      $defs: Record<string, { additionalProperties?: unknown; required?: string[] }>;
    };
    expect(schema.properties.config.properties.spec.$ref).toBe('#/$defs/ChartGatewayConfig');
    expect(schema.$defs.ChartGatewayConfig?.additionalProperties).toBe(false);
    expect(schema.$defs.ChartGatewayConfig?.required).toBeUndefined();
    expect(schema.$defs.Target?.additionalProperties).toBe(false);
  });

  it.concurrent.for<[string, Record<string, unknown>, string]>([
    ['an unknown top-level key', { replicaCount: 2 }, "additional properties 'replicaCount' not allowed"],
    [
      'a misspelled nested key',
      { image: { tga: 'x' } },
      "at '/image': additional properties 'tga' not allowed",
    ],
    ['a short digest', { image: { digest: 'sha256:abc' } }, "at '/image/digest'"],
    ['an upper-case digest', { image: { digest: `sha256:${'A'.repeat(64)}` } }, "at '/image/digest'"],
    ['a sha512 digest', { image: { digest: `sha512:${'a'.repeat(128)}` } }, "at '/image/digest'"],
    [
      'a digest with the repository',
      { image: { digest: `gateway@sha256:${'a'.repeat(64)}` } },
      "at '/image/digest'",
    ],
    ['an unknown pull policy', { image: { pullPolicy: 'Sometimes' } }, "at '/image/pullPolicy'"],
    ['a zero drain timeout', { gateway: { shutdownTimeoutSecs: 0 } }, "at '/gateway/shutdownTimeoutSecs'"],
    ['a negative shutdown delay', { gateway: { shutdownDelaySecs: -1 } }, "at '/gateway/shutdownDelaySecs'"],
    [
      'a fractional grace period',
      { terminationGracePeriodSeconds: 330.5 },
      "at '/terminationGracePeriodSeconds'",
    ],
    ['a port out of range', { gateway: { port: 70000 } }, "at '/gateway/port'"],
    [
      'a metric prefix with a dash',
      { gateway: { metricsPrefix: 'my-gateway' } },
      "at '/gateway/metricsPrefix'",
    ],
    ['replicas as a string', { replicas: 'two' }, "at '/replicas'"],
    ['a relative mount path', { config: { mountPath: 'etc/gateway' } }, "at '/config/mountPath'"],
    ['a config key with a slash', { config: { key: 'conf/config.yaml' } }, "at '/config/key'"],
    [
      'an unknown field in the gateway configuration',
      { config: { spec: { targets: { llama: { url: 'http://vllm:8000/v1', weigth: 2 } } } } },
      "at '/config/spec/targets/llama': additional properties 'weigth' not allowed",
    ],
    [
      'a wrong type in the gateway configuration',
      { config: { spec: { strict_mode: 'yes', targets: { llama: { url: 'http://vllm:8000/v1' } } } } },
      "at '/config/spec/strict_mode'",
    ],
    [
      'an alias with a space',
      { config: { spec: { targets: { 'my model': { url: 'http://vllm:8000/v1' } } } } },
      "'my model' does not match pattern",
    ],
    [
      'an unknown simulator fault mode',
      { simulator: { sidecar: { models: { m: { fault: { mode: 'explode' } } } } } },
      "at '/simulator/sidecar/models/m/fault/mode'",
    ],
    [
      'an unknown simulator model field',
      { simulator: { sidecar: { models: { m: { latency: { prefil_ms: 3 } } } } } },
      "additional properties 'prefil_ms' not allowed",
    ],
    [
      'a bad scrape interval',
      { metrics: { serviceMonitor: { interval: '30 seconds' } } },
      "at '/metrics/serviceMonitor/interval'",
    ],
    [
      'an error ratio above 1',
      { metrics: { prometheusRule: { errorRatioThreshold: 5 } } },
      "at '/metrics/prometheusRule/errorRatioThreshold'",
    ],
    [
      'an unknown eviction policy',
      { podDisruptionBudget: { unhealthyPodEvictionPolicy: 'Never' } },
      "at '/podDisruptionBudget/unhealthyPodEvictionPolicy'",
    ],
    ['a non-string annotation', { podAnnotations: { a: 1 } }, "at '/podAnnotations/a'"],
    [
      'a misspelled container security context field',
      { securityContext: { readOnlyRootFileSystem: true } },
      "at '/securityContext': additional properties 'readOnlyRootFileSystem' not allowed",
    ],
    [
      'a misspelled nested security context field',
      { securityContext: { capabilities: { dorp: ['ALL'] } } },
      "at '/securityContext/capabilities': additional properties 'dorp' not allowed",
    ],
    [
      'a user name where the pod security context wants a uid',
      { podSecurityContext: { runAsUser: 'nobody' } },
      "at '/podSecurityContext/runAsUser'",
    ],
    [
      'a memory limit in MB (not a Kubernetes quantity)',
      { resources: { limits: { memory: '512MB' } } },
      "at '/resources/limits/memory'",
    ],
    [
      'requests misspelled',
      { resources: { request: { cpu: '1' } } },
      "additional properties 'request' not allowed",
    ],
    [
      'a misspelled rolling update field',
      { strategy: { rollingUpdate: { maxSurg: 1 } } },
      "at '/strategy/rollingUpdate': additional properties 'maxSurg' not allowed",
    ],
    [
      'a misspelled affinity',
      { affinity: { nodeAfinity: {} } },
      "at '/affinity': additional properties 'nodeAfinity' not allowed",
    ],
    [
      'an unknown key in the simulator sidecar resources',
      { simulator: { sidecar: { resources: { limit: { memory: '1Gi' } } } } },
      "at '/simulator/sidecar/resources': additional properties 'limit' not allowed",
    ],
    [
      'a misspelled toleration field',
      { tolerations: [{ key: 'dedicated', opertor: 'Exists' }] },
      "at '/tolerations/0': additional properties 'opertor' not allowed",
    ],
    [
      'a spread constraint without topologyKey',
      { topologySpreadConstraints: [{ maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway' }] },
      "at '/topologySpreadConstraints/0': missing property 'topologyKey'",
    ],
    [
      'a misspelled network policy peer',
      { networkPolicy: { proxyFrom: [{ namespaceSelecter: {} }] } },
      "at '/networkPolicy/proxyFrom/0': additional properties 'namespaceSelecter' not allowed",
    ],
    [
      'no DNS peer at all (port 53 to anywhere)',
      { networkPolicy: { egress: { dns: { to: [] } } } },
      "at '/networkPolicy/egress/dns/to'",
    ],
    [
      'a misspelled autoscaling behavior',
      { autoscaling: { behavior: { scaleDown: { stabilisationWindowSeconds: 60 } } } },
      "additional properties 'stabilisationWindowSeconds' not allowed",
    ],
  ])('refuses %s', async ([, values, message], { expect }) => {
    const result = await templateAsync({ setJson: { ...withTarget, ...values } });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema");
    expect(result.stderr).toContain(message);
  });

  it('takes the Kubernetes objects from the Kubernetes OpenAPI spec, unknown keys refused', () => {
    const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as {
      properties: Record<
        string,
        { $ref?: string; items?: { $ref?: string }; properties?: Record<string, unknown> }
      >;
      $defs: Record<string, { additionalProperties?: unknown; properties?: Record<string, unknown> }>;
    };
    const refOf = (path: string): string | undefined => {
      let node: unknown = schema;
      for (const part of path.split('.'))
        node = (node as { properties: Record<string, unknown> }).properties[part];
      const value = node as { $ref?: string; items?: { $ref?: string } };
      return value.$ref ?? value.items?.$ref;
    };
    expect(
      Object.fromEntries(
        [
          'resources',
          'securityContext',
          'podSecurityContext',
          'strategy',
          'affinity',
          'simulator.sidecar.resources',
          'tolerations',
          'topologySpreadConstraints',
          'imagePullSecrets',
          'autoscaling.behavior',
          'networkPolicy.proxyFrom',
          'networkPolicy.adminNamespaceSelector',
          'networkPolicy.egress.to',
          'networkPolicy.egress.dns.to',
        ].map((path) => [path, refOf(path)]),
      ),
    ).toEqual({
      resources: '#/$defs/io.k8s.api.core.v1.ResourceRequirements',
      securityContext: '#/$defs/io.k8s.api.core.v1.SecurityContext',
      podSecurityContext: '#/$defs/io.k8s.api.core.v1.PodSecurityContext',
      strategy: '#/$defs/io.k8s.api.apps.v1.DeploymentStrategy',
      affinity: '#/$defs/io.k8s.api.core.v1.Affinity',
      'simulator.sidecar.resources': '#/$defs/io.k8s.api.core.v1.ResourceRequirements',
      tolerations: '#/$defs/io.k8s.api.core.v1.Toleration',
      topologySpreadConstraints: '#/$defs/io.k8s.api.core.v1.TopologySpreadConstraint',
      imagePullSecrets: '#/$defs/io.k8s.api.core.v1.LocalObjectReference',
      'autoscaling.behavior': '#/$defs/io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerBehavior',
      'networkPolicy.proxyFrom': '#/$defs/io.k8s.api.networking.v1.NetworkPolicyPeer',
      'networkPolicy.adminNamespaceSelector': '#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector',
      'networkPolicy.egress.to': '#/$defs/io.k8s.api.networking.v1.NetworkPolicyEgressRule',
      'networkPolicy.egress.dns.to': '#/$defs/io.k8s.api.networking.v1.NetworkPolicyPeer',
    });
    const securityContext = schema.$defs['io.k8s.api.core.v1.SecurityContext']!;
    expect(securityContext.additionalProperties).toBe(false);
    expect(Object.keys(securityContext.properties ?? {})).toEqual(
      expect.arrayContaining(['readOnlyRootFilesystem', 'runAsNonRoot', 'capabilities', 'seccompProfile']),
    );
    // Every referenced definition is present.
    for (const ref of JSON.stringify(schema).matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g))
      expect(schema.$defs, ref[1]).toHaveProperty([ref[1]!]);
  });

  it('accepts Kubernetes quantities as numbers or strings and int-or-string surges', () => {
    const result = template({
      setJson: {
        ...withTarget,
        resources: { requests: { cpu: 0.5, memory: '128Mi' }, limits: { cpu: 2, memory: '1.5Gi' } },
        strategy: { rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } },
      },
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('accepts every CI scenario and a digest in the right form', () => {
    const result = template({
      setJson: { ...withTarget, image: { digest: `sha256:${'0123456789abcdef'.repeat(4)}` } },
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});

/**
 * Checklist item "every value used" (cert-manager lints the same): every leaf of values.yaml is
 * referenced by a template, and every value a template references exists in values.yaml (a typo
 * such as `.Values.gatway.port` would otherwise render as empty). References are `.Values.a.b` and
 * variables bound to a values path (`$sim := .Values.simulator.sidecar`, then `$sim.port`); a
 * reference to an object counts for every leaf under it (`toYaml .Values.strategy`).
 */
describe('values.yaml and the templates agree', () => {
  const defaults = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const templateFiles = readdirSync(join(CHART, 'templates'), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ya?ml|tpl|txt)$/.test(f))
    .map((f) => readFileSync(join(CHART, 'templates', f), 'utf8'));

  const references = new Set<string>();
  for (const text of templateFiles) {
    const aliases = new Map<string, string>();
    for (const m of text.matchAll(/\$(\w+)\s*:?=\s*\$?\.Values((?:\.\w+)+)/g))
      aliases.set(m[1]!, m[2]!.slice(1));
    const withoutBindings = text.replace(/\$(\w+)\s*:?=\s*\$?\.Values((?:\.\w+)+)/g, '');
    for (const m of withoutBindings.matchAll(/\.Values((?:\.\w+)+)/g)) references.add(m[1]!.slice(1));
    for (const m of withoutBindings.matchAll(/\$(\w+)((?:\.\w+)*)/g)) {
      const base = aliases.get(m[1]!);
      if (base !== undefined) references.add(`${base}${m[2] ?? ''}`);
    }
  }
  const leafPaths = leaves(defaults).map(([path]) => path);
  /** Maps whose keys are the user's (alias names, model names): a reference to the map covers them. */
  const freeMaps = ['config.spec', 'simulator.sidecar.models'];

  it('finds references at all', () => {
    expect(references.size).toBeGreaterThan(60);
    expect(references).toContain('simulator.sidecar.port'); // through $sim
    expect(references).toContain('gateway.shutdownTimeoutSecs');
  });

  it('every leaf of values.yaml is referenced by a template', () => {
    const unused = leafPaths.filter(
      (leaf) => ![...references].some((ref) => leaf === ref || leaf.startsWith(`${ref}.`)),
    );
    expect(unused).toEqual([]);
  });

  it('every value a template references exists in values.yaml', () => {
    const exists = (path: string): boolean => {
      if (freeMaps.some((m) => path.startsWith(`${m}.`))) return true;
      let node: unknown = defaults;
      for (const part of path.split('.')) {
        if (node === null || typeof node !== 'object' || !(part in node)) return false;
        node = (node as Record<string, unknown>)[part];
      }
      return true;
    };
    expect([...references].filter((ref) => !exists(ref)).sort()).toEqual([]);
  });
});
