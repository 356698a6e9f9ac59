/**
 * manifests/: the plain YAML rendered from the chart (current, valid) and the example
 * GatewayConfig that the kustomization turns into the ConfigMap the rendered Deployment mounts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { manifestFile, manifestText } from './generate.ts';
import { MANIFEST_RENDERED_DIR, ROOT, manifestCases, parseObjects, type K8sObject } from './helm.ts';
import { validateObject } from './k8s-validate.ts';

const MANIFESTS = join(ROOT, 'manifests');
const cases = manifestCases();

describe('manifests/rendered', () => {
  it('holds exactly one file per manifests/values file', () => {
    expect(readdirSync(MANIFEST_RENDERED_DIR).sort()).toEqual(cases.map((c) => `${c.name}.yaml`).sort());
    expect(cases.map((c) => c.name).sort()).toEqual(['gateway', 'gateway-simulator', 'monitoring']);
  });

  it.each(cases)(
    'the rendered $name manifest is current (make chart-golden regenerates it)',
    ({ name, file }) => {
      expect(
        readFileSync(manifestFile(name), 'utf8'),
        `${manifestFile(name)} is stale: run \`make chart-golden\``,
      ).toBe(manifestText(name, file));
    },
  );

  it.each(cases)(
    '$name.yaml: every object is valid, in namespace llm-gateway, with no helm hook',
    ({ name }) => {
      const objects = parseObjects(readFileSync(manifestFile(name), 'utf8'));
      expect(objects.length).toBeGreaterThan(0);
      for (const o of objects) {
        expect(validateObject(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
        expect(o.metadata.namespace).toBe('llm-gateway');
        expect(o.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
      }
    },
  );

  it('monitoring.yaml holds only the monitoring objects', () => {
    const kinds = parseObjects(readFileSync(manifestFile('monitoring'), 'utf8')).map((o) => o.kind);
    expect(kinds.sort()).toEqual(['ConfigMap', 'PrometheusRule', 'ServiceMonitor']);
  });
});

describe('the example GatewayConfig and the kustomization', () => {
  const example = readFileSync(join(MANIFESTS, 'gateway-config.example.yaml'), 'utf8');

  it('the example is a valid GatewayConfig envelope', () => {
    const result = parseConfigText(example, 'gateway-config.example.yaml');
    expect(result.ok ? [] : result.issues).toEqual([]);
    expect(parseYaml(example)).toMatchObject({
      apiVersion: 'llm-gateway.dev/v1alpha1',
      kind: 'GatewayConfig',
    });
  });

  it('generates the ConfigMap that rendered/gateway.yaml mounts, under a fixed name', () => {
    const kustomization = parseYaml(readFileSync(join(MANIFESTS, 'kustomization.yaml'), 'utf8')) as {
      resources: string[];
      configMapGenerator: { name: string; files: string[] }[];
      generatorOptions: { disableNameSuffixHash: boolean };
    };
    for (const resource of kustomization.resources)
      expect(existsSync(join(MANIFESTS, resource)), resource).toBe(true);
    expect(kustomization.generatorOptions.disableNameSuffixHash).toBe(true);
    const generated = kustomization.configMapGenerator[0]!;
    const deployment = parseObjects(readFileSync(manifestFile('gateway'), 'utf8')).find(
      (o) => o.kind === 'Deployment',
    )!;
    const volumes = (
      deployment.spec as {
        template: {
          spec: { volumes: { name: string; configMap?: { name: string; items: { key: string }[] } }[] };
        };
      }
    ).template.spec.volumes;
    const config = volumes.find((v) => v.name === 'config')!.configMap!;
    expect(generated.name).toBe(config.name);
    expect(generated.files).toEqual([`${config.items[0]!.key}=gateway-config.example.yaml`]);
  });

  it('kubectl kustomize builds it into valid objects', (ctx) => {
    const kubectl = spawnSync('kubectl', ['kustomize', MANIFESTS], { encoding: 'utf8' });
    if (kubectl.error)
      return ctx.skip('kubectl is not installed: the kustomize build is checked where it is');
    expect(kubectl.status, kubectl.stderr).toBe(0);
    const objects: K8sObject[] = parseObjects(kubectl.stdout);
    expect(objects.map((o) => o.kind).sort()).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'Namespace',
        'PodDisruptionBudget',
        'Service',
        'Service',
        'ServiceAccount',
      ].sort(),
    );
    const cm = objects.find((o) => o.kind === 'ConfigMap')!;
    expect(cm.metadata.name).toBe('gateway-config');
    expect((cm.data as Record<string, string>)['config.yaml']).toBe(example);
    for (const o of objects.filter((x) => x.kind !== 'Namespace'))
      expect(validateObject(o), o.kind).toEqual([]);
  });
});
