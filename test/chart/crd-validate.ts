/**
 * Offline validation of custom resources against the openAPIV3Schema of their CRD: the Prometheus
 * Operator's ServiceMonitor, PodMonitor and PrometheusRule, as scripts/monitoring-crds.sh fetches
 * them (the operator version is pinned there).
 *
 * CRD schemas are structural: a small set of keywords, which this validator implements exactly,
 * and it throws on any keyword it does not know, so a newer CRD with new kinds of checks cannot
 * pass unexamined. Unknown fields are problems (as with `kubectl apply`'s strict field
 * validation), except under `x-kubernetes-preserve-unknown-fields` and in `metadata`, which the
 * API server validates as ObjectMeta (the caller checks it against the Kubernetes schema).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './helm.ts';

export const CRD_SCRIPT = join(ROOT, 'scripts/monitoring-crds.sh');
export const CRD_DIR = join(ROOT, '.tools/crds');

export interface CrdProblem {
  path: string;
  message: string;
}

export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema | boolean;
  items?: StructuralSchema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  nullable?: boolean;
  anyOf?: StructuralSchema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

const CHECKED = new Set([
  'type',
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
  'minimum',
  'maximum',
  'nullable',
  'anyOf',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
]);
/** Keywords that constrain nothing a rendered object can get wrong (documentation, defaults, merge strategy). */
const INERT = new Set([
  'description',
  'default',
  'example',
  'title',
  'x-kubernetes-map-type',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
]);
const INT32 = 2 ** 31;

const typeOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
};

function check(schema: StructuralSchema, value: unknown, path: string, out: CrdProblem[]): void {
  for (const key of Object.keys(schema)) {
    if (!CHECKED.has(key) && !INERT.has(key))
      throw new Error(`CRD schema keyword ${key} at ${path || '/'} is not supported by crd-validate.ts`);
  }
  const problem = (message: string): void => void out.push({ path, message });

  if (value === null) {
    if (!schema.nullable) problem('null is not allowed');
    return;
  }
  const actual = typeOf(value);
  if (schema['x-kubernetes-int-or-string']) {
    if (actual !== 'integer' && actual !== 'string')
      return problem(`must be an integer or a string, not ${actual}`);
  } else if (schema.anyOf) {
    const branches = schema.anyOf.map((branch) => {
      const found: CrdProblem[] = [];
      check(branch, value, path, found);
      return found;
    });
    if (!branches.some((found) => found.length === 0)) problem('matches none of anyOf');
  }
  if (schema.type !== undefined) {
    const ok = actual === schema.type || (schema.type === 'number' && actual === 'integer');
    if (!ok) return problem(`must be ${schema.type}, not ${actual}`);
  }
  if (schema.enum && !schema.enum.some((allowed) => allowed === value))
    problem(`must be one of ${JSON.stringify(schema.enum)}`);

  if (typeof value === 'string') {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
      problem(`does not match ${schema.pattern}`);
    if (schema.minLength !== undefined && value.length < schema.minLength)
      problem(`shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      problem(`longer than ${schema.maxLength}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) problem(`below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) problem(`above ${schema.maximum}`);
    if (schema.format === 'int32' && (value < -INT32 || value >= INT32)) problem('out of int32 range');
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      problem(`fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      problem(`more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((item, i) => check(schema.items!, item, `${path}/${i}`, out));
  }
  if (actual === 'object') {
    const object = value as Record<string, unknown>;
    for (const field of schema.required ?? [])
      if (!(field in object)) out.push({ path: `${path}/${field}`, message: 'required' });
    for (const [field, child] of Object.entries(object)) {
      const at = `${path}/${field}`;
      const known = schema.properties?.[field];
      if (known) check(known, child, at, out);
      else if (typeof schema.additionalProperties === 'object')
        check(schema.additionalProperties, child, at, out);
      else if (schema.additionalProperties === true || schema['x-kubernetes-preserve-unknown-fields'])
        continue;
      else out.push({ path: at, message: 'unknown field' });
    }
  }
}

/** Problems of `value` against one structural schema (exported for the validator's own tests). */
export function validateAgainst(schema: StructuralSchema, value: unknown): CrdProblem[] {
  const out: CrdProblem[] = [];
  check(schema, value, '', out);
  return out;
}

interface Crd {
  spec: {
    group: string;
    names: { kind: string };
    versions: { name: string; served: boolean; schema: { openAPIV3Schema: StructuralSchema } }[];
  };
}

let schemas: Map<string, StructuralSchema> | undefined;

/** `<group>/<version>/<Kind>` -> openAPIV3Schema, from the files scripts/monitoring-crds.sh writes. */
export function monitoringCrdSchemas(): Map<string, StructuralSchema> {
  if (schemas) return schemas;
  const result = spawnSync('bash', [CRD_SCRIPT, CRD_DIR], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(
      `scripts/monitoring-crds.sh failed (it needs go and, once, the Go module proxy):\n${result.stderr}`,
    );
  const files = result.stdout.split('\n').filter(Boolean);
  if (files.length !== 3)
    throw new Error(`scripts/monitoring-crds.sh printed ${files.length} files, expected 3`);
  const found = new Map<string, StructuralSchema>();
  for (const file of files) {
    const crd = parseYaml(readFileSync(file, 'utf8')) as Crd;
    for (const version of crd.spec.versions.filter((v) => v.served))
      found.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, version.schema.openAPIV3Schema);
  }
  schemas = found;
  return found;
}

/**
 * Problems of one custom resource against its CRD's schema, `metadata` left to the caller. An
 * apiVersion/kind with no CRD among the monitoring CRDs is a problem.
 */
export function validateCustomResource(object: { apiVersion?: unknown; kind?: unknown }): CrdProblem[] {
  const key = `${String(object.apiVersion)}/${String(object.kind)}`;
  const schema = monitoringCrdSchemas().get(key);
  if (!schema) return [{ path: '', message: `no CRD schema for ${key}` }];
  const { metadata: _metadata, ...rest } = object as Record<string, unknown>;
  const { metadata: _metadataSchema, ...properties } = schema.properties ?? {};
  const out: CrdProblem[] = [];
  check({ ...schema, properties }, rest, '', out);
  return out;
}
