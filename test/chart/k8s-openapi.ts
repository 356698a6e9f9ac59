/**
 * Kubernetes object schemas for values.schema.json, converted from the Kubernetes OpenAPI spec
 * (api/openapi-spec/swagger.json of the Go module k8s.io/kubernetes, fetched with `go mod download`
 * into the Go module cache; no network once it is there).
 *
 * The conversion turns each OpenAPI v2 definition into JSON Schema 2020-12 for helm's validator:
 * objects with properties refuse unknown keys (`kubeconform -strict`'s rule, so a misspelled
 * `readOnlyRootFileSystem` fails `helm install`), int-or-string fields take an integer or a string,
 * quantities a number or a quantity string, and Kubernetes' vendor extensions and formats are
 * dropped. Definitions keep their OpenAPI names under $defs.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The Kubernetes release whose schemas values.schema.json carries. */
export const KUBERNETES_OPENAPI_MODULE = 'k8s.io/kubernetes@v1.34.4';

type Schema = Record<string, unknown>;

/** The serialization grammar of resource.Quantity, as its OpenAPI description gives it. */
const QUANTITY_PATTERN =
  '^[+-]?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

const SPECIAL: Record<string, Schema> = {
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': {
    description: 'An integer or a string (for example a port number or name, or a percentage).',
    anyOf: [{ type: 'integer' }, { type: 'string' }],
  },
  'io.k8s.apimachinery.pkg.api.resource.Quantity': {
    description: 'A resource quantity: a number, or a string such as 100m, 512Mi or 1.5Gi.',
    anyOf: [{ type: 'number' }, { type: 'string', pattern: QUANTITY_PATTERN }],
  },
};

const DROPPED = new Set([
  'format',
  'x-kubernetes-unions',
  'x-kubernetes-map-type',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-patch-strategy',
  'x-kubernetes-patch-merge-key',
]);
const KEPT = new Set([
  'type',
  'description',
  'properties',
  'additionalProperties',
  'items',
  'required',
  'enum',
  '$ref',
]);

let definitions: Record<string, Schema> | undefined;

/** The `definitions` of the pinned release's swagger.json. */
export function kubernetesDefinitions(): Record<string, Schema> {
  if (definitions) return definitions;
  const download = spawnSync('go', ['mod', 'download', '-json', KUBERNETES_OPENAPI_MODULE], {
    cwd: tmpdir(),
    encoding: 'utf8',
  });
  if (download.error || download.status !== 0) {
    throw new Error(
      `go mod download ${KUBERNETES_OPENAPI_MODULE} failed (the values schema takes the Kubernetes OpenAPI spec from it; needs go, and the Go module proxy once):\n${download.error?.message ?? download.stdout + download.stderr}`,
    );
  }
  const { Dir: dir } = JSON.parse(download.stdout) as { Dir: string };
  const swagger = JSON.parse(readFileSync(join(dir, 'api/openapi-spec/swagger.json'), 'utf8')) as {
    definitions: Record<string, Schema>;
  };
  definitions = swagger.definitions;
  return definitions;
}

const refName = (ref: string): string => {
  const prefix = '#/definitions/';
  if (!ref.startsWith(prefix)) throw new Error(`unexpected OpenAPI reference ${ref}`);
  return ref.slice(prefix.length);
};

function convert(node: Schema, at: string, refer: (name: string) => void): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED.has(key)) continue;
    if (!KEPT.has(key)) throw new Error(`OpenAPI keyword ${key} at ${at} has no conversion`);
    if (key === '$ref') {
      const name = refName(value as string);
      refer(name);
      out.$ref = `#/$defs/${name}`;
    } else if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([field, child]) => [
          field,
          convert(child, `${at}.${field}`, refer),
        ]),
      );
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      out[key] = convert(value as Schema, `${at}[]`, refer);
    } else out[key] = value;
  }
  if (node.format === 'int-or-string')
    return { ...SPECIAL['io.k8s.apimachinery.pkg.util.intstr.IntOrString'] };
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/**
 * JSON Schemas for the named definitions and every definition they reference, keyed by the
 * OpenAPI name (to be placed under $defs and referenced as `#/$defs/<name>`).
 */
export function kubernetesSchemas(roots: Iterable<string>): Record<string, Schema> {
  const source = kubernetesDefinitions();
  const out: Record<string, Schema> = {};
  const pending = [...roots];
  const refer = (name: string): void => {
    if (!(name in out) && !pending.includes(name)) pending.push(name);
  };
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name in out) continue;
    const special = SPECIAL[name];
    if (special) {
      out[name] = special;
      continue;
    }
    const definition = source[name];
    if (!definition) throw new Error(`${KUBERNETES_OPENAPI_MODULE} has no definition ${name}`);
    out[name] = convert(definition, name, refer);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}
