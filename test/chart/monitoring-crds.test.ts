/**
 * The Prometheus Operator CRDs: scripts/monitoring-crds.sh (its interface, idempotence and offline
 * reuse) and the validation of the chart's ServiceMonitor, PodMonitor and PrometheusRule against
 * the CRDs' openAPIV3Schema, with the rejections that prove the check is real.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CRD_SCRIPT,
  monitoringCrdSchemas,
  validateAgainst,
  validateCustomResource,
  type StructuralSchema,
} from './crd-validate.ts';
import { ciCases, findObject, render, type K8sObject } from './helm.ts';
import { validateObject } from './k8s-validate.ts';

const scratch = mkdtempSync(join(tmpdir(), 'gateway-crds-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync('bash', [CRD_SCRIPT, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

const pinned = /^PROMETHEUS_OPERATOR_VERSION=(v[0-9.]+)$/m.exec(readFileSync(CRD_SCRIPT, 'utf8'))?.[1];

describe('scripts/monitoring-crds.sh <outdir>', () => {
  const names = ['servicemonitors', 'podmonitors', 'prometheusrules'];
  const expected = names.map((n) => join(scratch, 'out', `monitoring.coreos.com_${n}.yaml`));

  it('pins the operator version in one line', () => {
    expect(pinned).toMatch(/^v\d+\.\d+\.\d+$/);
  });

  it('writes the three CRDs at the pinned version and prints their paths', () => {
    const first = run([join(scratch, 'out')]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout.split('\n').filter(Boolean)).toEqual(expected);
    for (const [i, file] of expected.entries()) {
      const text = readFileSync(file, 'utf8');
      expect(text).toContain(`operator.prometheus.io/version: ${pinned!.slice(1)}`);
      expect(text).toContain(`name: ${names[i]}.monitoring.coreos.com`);
      expect(text).toContain('kind: CustomResourceDefinition');
    }
  });

  it('is idempotent and needs no network once the files are there', () => {
    const before = expected.map((f) => readFileSync(f, 'utf8'));
    const again = run([join(scratch, 'out')], { GOPROXY: 'off', PATH: '/usr/bin:/bin' });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.split('\n').filter(Boolean)).toEqual(expected);
    expect(expected.map((f) => readFileSync(f, 'utf8'))).toEqual(before);
  });

  it('refuses to run without exactly one directory', () => {
    const none = run([]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('usage:');
  });

  it('gives every served version of the three kinds a schema', () => {
    expect([...monitoringCrdSchemas().keys()].sort()).toEqual([
      'monitoring.coreos.com/v1/PodMonitor',
      'monitoring.coreos.com/v1/PrometheusRule',
      'monitoring.coreos.com/v1/ServiceMonitor',
    ]);
  });
});

describe('monitoring objects against the CRD schemas', () => {
  const production = ciCases().find((c) => c.name === 'production')!.file;
  const customized = ciCases().find((c) => c.name === 'customized')!.file;
  const objects = render({ valuesFiles: [production] });
  const monitor = findObject(objects, 'ServiceMonitor')!;
  const rule = findObject(objects, 'PrometheusRule')!;
  const podMonitor = findObject(render({ valuesFiles: [customized] }), 'PodMonitor')!;
  /** A copy of `object` with the value at `path` replaced, or removed when `value` is undefined. */
  const edit = (object: K8sObject, path: (string | number)[], value: unknown): K8sObject => {
    const copy = structuredClone(object);
    let node = copy as unknown as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
    const last = path[path.length - 1]!;
    if (value === undefined) delete node[last];
    else node[last] = value;
    return copy;
  };
  const messages = (object: K8sObject): string[] =>
    validateObject(object).map((p) => `${p.path}: ${p.message}`);

  it('the chart renders valid ServiceMonitor, PodMonitor and PrometheusRule objects', () => {
    for (const object of [monitor, rule, podMonitor]) expect(messages(object), object.kind).toEqual([]);
  });

  it.each<[string, () => K8sObject, string]>([
    [
      'a misspelled endpoint field',
      () => edit(monitor, ['spec', 'endpoints', 0, 'intervall'], '30s'),
      '/spec/endpoints/0/intervall: unknown field',
    ],
    [
      'a scrape interval that is not a duration',
      () => edit(monitor, ['spec', 'endpoints', 0, 'interval'], '30 seconds'),
      '/spec/endpoints/0/interval: does not match',
    ],
    [
      'a rule without expr',
      () => edit(rule, ['spec', 'groups', 0, 'rules', 0, 'expr'], undefined),
      '/spec/groups/0/rules/0/expr: required',
    ],
    [
      'an unknown PodMonitor scheme',
      () => edit(podMonitor, ['spec', 'podMetricsEndpoints', 0, 'scheme'], 'gopher'),
      '/spec/podMetricsEndpoints/0/scheme: must be one of',
    ],
    [
      'a label that is not a string',
      () => edit(monitor, ['metadata', 'labels', 'release'], 1),
      '/metadata/labels/release',
    ],
  ])('rejects %s', (_label, object, message) => {
    expect(messages(object()).join('\n')).toContain(message);
  });

  it('catches a typo in relabelings passed through the values', () => {
    const typo = render({
      valuesFiles: [production],
      setJson: {
        metrics: {
          serviceMonitor: {
            relabelings: [{ sourceLabel: ['__meta_kubernetes_pod_node_name'], targetLabel: 'node' }],
          },
        },
      },
    });
    expect(messages(findObject(typo, 'ServiceMonitor')!).join('\n')).toContain(
      '/spec/endpoints/0/relabelings/0/sourceLabel: unknown field',
    );
  });

  it('names an object no CRD describes', () => {
    expect(validateCustomResource({ apiVersion: 'monitoring.coreos.com/v1', kind: 'Probe' })).toEqual([
      { path: '', message: 'no CRD schema for monitoring.coreos.com/v1/Probe' },
    ]);
  });

  it('refuses a schema keyword it does not implement instead of skipping it', () => {
    const schema = { type: 'string', 'x-kubernetes-validations': [{ rule: 'self != ""' }] };
    expect(() => validateAgainst(schema as StructuralSchema, '')).toThrow(
      'CRD schema keyword x-kubernetes-validations at / is not supported',
    );
    expect(validateAgainst({ 'x-kubernetes-int-or-string': true }, 8080)).toEqual([]);
    expect(validateAgainst({ 'x-kubernetes-int-or-string': true }, true)).toHaveLength(1);
  });
});
