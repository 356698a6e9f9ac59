/**
 * The CustomResourceDefinition of GatewayConfig (`gateway crd`, the chart's `crds/`), generated from
 * the configuration's zod schema like `gateway schema`, never written by hand. The API server needs a
 * structural OpenAPI v3 schema, so the generated JSON Schema is converted:
 *
 * - references are inlined; titles and defaults are left out (the gateway applies its defaults, the
 *   stored object stays as written); `const` becomes a one-value `enum`;
 * - `uniqueItems` becomes `x-kubernetes-list-type: set` (the API server refuses duplicates);
 * - map key rules (`propertyNames`) are left to the process: a CEL rule over every key of a map
 *   without bounds costs more than the API server allows;
 * - the cross-field rules the schema files attach (`kubernetesRules`) go into
 *   `x-kubernetes-validations` of their object, in place of editor-only alternatives (`anyOf`);
 * - a field that takes values of several types (a key: a string or a secret reference; `aimd`:
 *   `false` or an object) cannot be typed in a structural schema: it keeps any value
 *   (`x-kubernetes-preserve-unknown-fields`), and only the process checks it (`untypedFields`);
 * - a field that is never valid where it appears (`strict_mode` inside a target) is left out, so the
 *   API server refuses it as an unknown field.
 *
 * Unknown fields are refused by `kubectl apply` (strict field validation, its default), naming them.
 */
import { z } from 'zod';
import { GatewayConfigSchema, KUBERNETES_RULES_KEY, type KubernetesRule } from './schema/index.js';
import { ENVELOPE_API_VERSION, ENVELOPE_KIND } from './schema/root.js';

type Schema = { [key: string]: unknown };

export const CRD_GROUP = ENVELOPE_API_VERSION.slice(0, ENVELOPE_API_VERSION.indexOf('/'));
export const CRD_VERSION = ENVELOPE_API_VERSION.slice(ENVELOPE_API_VERSION.indexOf('/') + 1);
export const CRD_KIND = ENVELOPE_KIND;
export const CRD_PLURAL = 'gatewayconfigs';
export const CRD_NAME = `${CRD_PLURAL}.${CRD_GROUP}`;

/** Keywords copied as they are. */
const KEPT = new Set([
  'type',
  'description',
  'required',
  'enum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minimum',
  'maximum',
  'format',
  'nullable',
]);
/** Keywords that document or default, left out of the CRD. */
const DROPPED = new Set(['title', 'default', 'examples', '$schema', 'id', 'additionalProperties', '$defs']);

/** JavaScript regular expressions in RE2's syntax (the API server's): `\uXXXX` is `\x{XXXX}` there. */
export function re2(pattern: string): string {
  return pattern.replace(/\\u([0-9a-fA-F]{4})/g, '\\x{$1}');
}

const isScalarType = (type: unknown): boolean =>
  type === 'string' || type === 'integer' || type === 'number' || type === 'boolean';

/** True when an `anyOf`/`not` branch only constrains values (what a structural schema allows there). */
function valueOnly(branch: unknown): boolean {
  if (typeof branch !== 'object' || branch === null) return false;
  return Object.entries(branch).every(([key, value]) => {
    if (key === 'anyOf' || key === 'allOf' || key === 'oneOf')
      return Array.isArray(value) && value.every(valueOnly);
    if (key === 'not') return valueOnly(value);
    return ['required', 'minimum', 'maximum', 'enum', 'pattern', 'minLength', 'maxLength', 'title'].includes(
      key,
    );
  });
}

function stripTitles(branch: unknown): unknown {
  if (Array.isArray(branch)) return branch.map(stripTitles);
  if (typeof branch !== 'object' || branch === null) return branch;
  return Object.fromEntries(
    Object.entries(branch)
      .filter(([key]) => key !== 'title')
      .map(([key, value]) => [key, stripTitles(value)]),
  );
}

interface Conversion {
  readonly definitions: Record<string, Schema>;
  /** Paths (`spec.targets.*.keys[*]`) of fields whose values the API server cannot type. */
  readonly untyped: string[];
  readonly rules: { path: string; rule: KubernetesRule }[];
}

function resolveReference(node: Schema, conversion: Conversion): Schema {
  const resolved = node;
  const ref = resolved.$ref;
  if (typeof ref !== 'string') return resolved;
  const name = ref.slice(ref.lastIndexOf('/') + 1);
  const target = conversion.definitions[name];
  if (target === undefined) throw new Error(`crd: unknown reference ${ref}`);
  const { $ref, ...rest } = resolved;
  void $ref;
  // The field's own description wins over the definition's.
  return { ...target, ...rest };
}

/** A union of differently typed branches cannot be a structural schema. */
function isTypeUnion(node: Schema): boolean {
  if (Array.isArray(node.type)) return true;
  const branches = (node.anyOf ?? node.oneOf) as unknown[] | undefined;
  return Array.isArray(branches) && node.type === undefined && !branches.every(valueOnly);
}

function convert(input: Schema, path: string, conversion: Conversion): Schema | undefined {
  const node = resolveReference(input, conversion);
  if (isTypeUnion(node)) {
    if (!conversion.untyped.includes(path)) conversion.untyped.push(path);
    return {
      ...(node.description === undefined ? {} : { description: node.description }),
      'x-kubernetes-preserve-unknown-fields': true,
    };
  }
  // `not: {}` with no type: the field is never valid here.
  if (node.type === undefined && node.not !== undefined && Object.keys(node.not as object).length === 0)
    return undefined;

  const out: Schema = {};
  const rules: KubernetesRule[] = [...((node[KUBERNETES_RULES_KEY] as KubernetesRule[] | undefined) ?? [])];
  for (const [key, value] of Object.entries(node)) {
    if (KEPT.has(key)) out[key] = value;
    else if (key === 'const') out.enum = [value];
    else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') {
      // JSON Schema 2020-12's bound is a number; OpenAPI 3.0's a flag on minimum/maximum.
      out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
      out[key] = true;
    } else if (key === 'pattern') out.pattern = re2(value as string);
    else if (key === 'uniqueItems') {
      if (value === true) out['x-kubernetes-list-type'] = 'set';
    } else if (key === 'propertyNames') {
      // Checking every key of a map in CEL costs the map's size times the key's length on every
      // apply, beyond the API server's budget for maps without bounds: the process checks keys.
      continue;
    } else if (key === 'properties') {
      const properties: Record<string, Schema> = {};
      for (const [name, property] of Object.entries(value as Record<string, Schema>)) {
        const converted = convert(property, `${path}.${name}`, conversion);
        if (converted !== undefined) properties[name] = converted;
      }
      out.properties = properties;
    } else if (key === 'items') out.items = convert(value as Schema, `${path}[*]`, conversion);
    else if (key === 'anyOf' || key === 'not') {
      // Editor-facing alternatives give way to the CEL rules that say the same with messages.
      if (node[KUBERNETES_RULES_KEY] === undefined) out[key] = stripTitles(value);
    } else if (key === KUBERNETES_RULES_KEY || DROPPED.has(key) || key === '$ref' || key === 'allOf')
      continue;
    else throw new Error(`crd: ${path}: no structural equivalent for the keyword ${key}`);
  }
  const additional = node.additionalProperties;
  if (typeof additional === 'object' && additional !== null)
    out.additionalProperties = convert(additional as Schema, `${path}.*`, conversion) ?? {};
  if (out['x-kubernetes-list-type'] === 'set' && !isScalarType((out.items as Schema | undefined)?.type))
    throw new Error(`crd: ${path}: unique items of a non-scalar type`);
  if (rules.length > 0) {
    out[KUBERNETES_RULES_KEY] = rules;
    for (const rule of rules)
      if (!conversion.rules.some((seen) => seen.rule === rule)) conversion.rules.push({ path, rule });
  }
  return out;
}

/** JSON Schema of the bare configuration, references still in place. */
function openApiSchema(): { root: Schema; definitions: Record<string, Schema> } {
  const generated = z.toJSONSchema(GatewayConfigSchema, {
    target: 'draft-2020-12',
    io: 'input',
    override: ({ jsonSchema }) => {
      // z.int() states the safe-integer range on every integer: noise, and beyond int64 for nothing.
      const node = jsonSchema as Schema;
      if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
      if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
    },
  }) as Schema;
  const definitions = (generated.$defs ?? {}) as Record<string, Schema>;
  return { root: generated, definitions };
}

export interface GeneratedSpecSchema {
  readonly schema: Schema;
  /** Fields whose values the API server keeps without checking them (several types allowed). */
  readonly untypedFields: readonly string[];
  /** The CEL rules, by the path of the object they are on. */
  readonly rules: readonly { path: string; rule: KubernetesRule }[];
}

let generatedSpec: GeneratedSpecSchema | undefined;

/** The structural schema of `spec`, and the fields it cannot check. */
export function specSchema(): GeneratedSpecSchema {
  if (generatedSpec === undefined) {
    const { root, definitions } = openApiSchema();
    const conversion: Conversion = { definitions, untyped: [], rules: [] };
    const schema = convert(root, 'spec', conversion)!;
    generatedSpec = { schema, untypedFields: conversion.untyped, rules: conversion.rules };
  }
  return generatedSpec;
}

const CONDITION_SCHEMA: Schema = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: { type: 'string', maxLength: 316, description: 'Accepted or Ready.' },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    reason: { type: 'string', maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' },
    message: { type: 'string', maxLength: 32768 },
  },
};

/** What the replicas write (kube/status.ts); not part of the configuration. */
const STATUS_SCHEMA: Schema = {
  type: 'object',
  description: 'Written by the gateway replicas that serve this object.',
  properties: {
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      description: 'The generation the conditions describe.',
    },
    serving: {
      type: 'string',
      description: 'Replicas serving the current generation, of the replicas running (n/m).',
    },
    conditions: {
      type: 'array',
      description:
        'Accepted: whether the current generation is valid (False names the field and the rule). Ready: whether every replica serves it.',
      items: CONDITION_SCHEMA,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
    replicas: {
      type: 'array',
      description: 'One entry per replica, written by that replica and renewed while it runs.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['pod'],
      items: {
        type: 'object',
        required: ['pod', 'heartbeatTime'],
        properties: {
          pod: { type: 'string', description: "The replica's pod." },
          observedGeneration: {
            type: 'integer',
            format: 'int64',
            description: 'The latest generation it checked.',
          },
          accepted: { type: 'boolean', description: 'Whether it accepted observedGeneration.' },
          message: { type: 'string', description: 'Why it refused observedGeneration.' },
          servedGeneration: { type: 'integer', format: 'int64', description: 'The generation it serves.' },
          heartbeatTime: { type: 'string', format: 'date-time', description: 'Renewed while it runs.' },
        },
      },
    },
  },
};

/** The CustomResourceDefinition, as an object. */
export function gatewayConfigCrd(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME },
    spec: {
      group: CRD_GROUP,
      names: {
        kind: ENVELOPE_KIND,
        listKind: `${ENVELOPE_KIND}List`,
        plural: CRD_PLURAL,
        singular: ENVELOPE_KIND.toLowerCase(),
        shortNames: ['gwc'],
        categories: ['llm-gateway'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: CRD_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Accepted',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Accepted")].status',
              description: 'Whether the current generation is valid.',
            },
            {
              name: 'Serving',
              type: 'string',
              jsonPath: '.status.serving',
              description: 'Replicas serving the current generation, of the replicas running.',
            },
            { name: 'Generation', type: 'integer', jsonPath: '.metadata.generation' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description:
                'The configuration of llm-gateway replicas started with --config-resource NAMESPACE/NAME: `spec` is the configuration (docs/configuration.md), `status` what the replicas made of it.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: specSchema().schema,
                status: STATUS_SCHEMA,
              },
            },
          },
        },
      ],
    },
  };
}
