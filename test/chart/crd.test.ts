/**
 * The GatewayConfig CustomResourceDefinition: the chart ships exactly what `gateway crd` prints (the
 * generator reads the configuration schema, so a schema change without `make chart-golden` fails
 * here), and what it prints is a structural schema the API server accepts. The API server itself
 * checks it, with valid and invalid objects, in e2e/k8s/config-resource.k8s.ts.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { re2, specSchema } from '../../src/gateway/config/crd.js';
import { CROSS_FIELD_RULES } from '../../src/gateway/config/schema/index.js';
import { CRD_FILE, expectedCrdText } from './generate.ts';
import { CHART } from './helm.ts';

type Schema = Record<string, unknown>;

/** What a structural schema node may hold (apiextensions.k8s.io/v1 JSONSchemaProps, as used here). */
const ALLOWED = new Set([
  'type',
  'description',
  'properties',
  'additionalProperties',
  'items',
  'required',
  'enum',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'anyOf',
  'not',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
]);

/** Every node of a structural schema has one type, or keeps any value; value checks only in anyOf/not. */
function structuralProblems(node: Schema, path: string, out: string[]): string[] {
  for (const key of Object.keys(node)) if (!ALLOWED.has(key)) out.push(`${path}: keyword ${key}`);
  const untyped = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (!untyped && typeof node.type !== 'string') out.push(`${path}: no single type`);
  if (
    untyped &&
    Object.keys(node).some((k) => !['description', 'x-kubernetes-preserve-unknown-fields'].includes(k))
  )
    out.push(`${path}: an untyped node constrains its value`);
  if (node.additionalProperties === false) out.push(`${path}: additionalProperties false`);
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Schema>))
    structuralProblems(child, `${path}.${name}`, out);
  if (typeof node.additionalProperties === 'object')
    structuralProblems(node.additionalProperties as Schema, `${path}.*`, out);
  if (node.items !== undefined) structuralProblems(node.items as Schema, `${path}[*]`, out);
  for (const branch of [...((node.anyOf ?? []) as Schema[]), ...(node.not ? [node.not as Schema] : [])])
    for (const key of Object.keys(branch))
      if (['type', 'properties', 'items', 'additionalProperties', 'description'].includes(key))
        out.push(`${path}: ${key} inside anyOf/not`);
  return out;
}

describe('GatewayConfig CustomResourceDefinition', () => {
  it('the chart ships what `gateway crd` prints (make chart-golden regenerates it)', () => {
    expect(readdirSync(join(CHART, 'crds'))).toEqual(['gatewayconfigs.llm-gateway.dev.yaml']);
    expect(readFileSync(CRD_FILE, 'utf8'), `${CRD_FILE} is stale: run \`make chart-golden\``).toBe(
      expectedCrdText(),
    );
  });

  it('names the resource, its short name, status subresource and printer columns', () => {
    const crd = parseYaml(expectedCrdText()) as {
      metadata: { name: string };
      spec: {
        scope: string;
        names: { kind: string; plural: string; shortNames: string[] };
        versions: {
          name: string;
          subresources: unknown;
          additionalPrinterColumns: { name: string; jsonPath: string }[];
        }[];
      };
    };
    expect(crd.metadata.name).toBe('gatewayconfigs.llm-gateway.dev');
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({
      kind: 'GatewayConfig',
      plural: 'gatewayconfigs',
      shortNames: ['gwc'],
    });
    const [version] = crd.spec.versions;
    expect(version).toMatchObject({ name: 'v1alpha1', subresources: { status: {} } });
    expect(version!.additionalPrinterColumns.map((c) => c.name)).toEqual([
      'Accepted',
      'Serving',
      'Generation',
      'Age',
    ]);
  });

  it('its spec schema is structural, and keeps any value only where a field takes several types', () => {
    const { schema, untypedFields } = specSchema();
    expect(structuralProblems(schema as Schema, 'spec', [])).toEqual([]);
    expect(untypedFields).toEqual(
      expect.arrayContaining([
        'spec.auth.global_keys[*]',
        'spec.targets.*.keys[*]',
        'spec.targets.*.fallback.aimd',
      ]),
    );
    // Strict mode inside a target is left out, so the API server refuses it as an unknown field.
    const target = ((schema as Schema).properties as Record<string, Schema>).targets!
      .additionalProperties as Schema;
    expect(Object.keys(target.properties as Schema)).not.toContain('strict_mode');
    expect(Object.keys(target.properties as Schema)).toContain('url');
  });

  it('carries a CEL rule for every cross-field rule marked as checked by the API server', () => {
    const { rules } = specSchema();
    const messages = rules.map(({ rule }) => rule.message ?? '');
    expect(rules.length).toBeGreaterThanOrEqual(6);
    for (const { rule } of rules) expect(rule.message ?? rule.messageExpression, rule.rule).toBeTruthy();
    // Each rule of the kind `max_attempts`, pool-only fields, url or providers has its CEL statement.
    expect(messages.some((m) => m.includes('`max_attempts` is at most the number of `providers`'))).toBe(
      true,
    );
    expect(messages.some((m) => m.includes('only applies to a pool'))).toBe(true);
    expect(messages.some((m) => m.includes('either `url` (single provider) or `providers` (pool)'))).toBe(
      true,
    );
    expect(messages.some((m) => m.includes('`base_ejection_ms`'))).toBe(true);
    // A rule on a shared definition lands at every place it is used: each budget here.
    const at = (...path: string[]): Schema =>
      path.reduce(
        (node, key) =>
          (key === '*'
            ? node.additionalProperties
            : (node.properties as Record<string, Schema>)[key]) as Schema,
        specSchema().schema as Schema,
      );
    for (const budget of [
      at('targets', '*', 'budget'),
      at('auth', 'key_definitions', '*', 'budget'),
      at('auth', 'accounts', '*', 'budget'),
    ])
      expect(budget['x-kubernetes-validations']).toEqual([
        expect.objectContaining({
          rule: "!has(self.time_zone) || self.window in ['hour', 'day', 'week', 'month']",
          fieldPath: '.time_zone',
        }),
      ]);
    expect(CROSS_FIELD_RULES.filter((r) => r.apiServer).length).toBeGreaterThan(0);
  });

  it('writes patterns in RE2 syntax, as the API server compiles them', () => {
    expect(re2('^[^\\s\\u0000-\\u001f\\u007f]+$')).toBe('^[^\\s\\x{0000}-\\x{001f}\\x{007f}]+$');
    expect(re2('^[a-z]+$')).toBe('^[a-z]+$');
  });
});
