/**
 * The Markdown field reference (docs/configuration.md), generated from the JSON Schema so it cannot
 * drift from the validator: every object, every field with its type, requiredness, default and
 * description, then the cross-field rules, what the Kubernetes API server checks of a GatewayConfig
 * object, the share-controller defaults and the parameter catalog.
 * The output is a pure function of the schema (no dates, stable order), so a staleness check can
 * diff it against the committed file.
 */
import {
  isEmptyCollection,
  UNSUPPORTED_PARAM_NAMES,
  UNSUPPORTED_PARAMS_CATALOG,
} from '../strict/unsupported-params-catalog.js';
import { specSchema } from './crd.js';
import { configFileJsonSchema, type JsonSchema } from './json-schema.js';
import {
  AIMD_DEFAULTS,
  CROSS_FIELD_RULES,
  EFFORTS,
  ENVELOPE_API_VERSION,
  ENVELOPE_KIND,
} from './schema/index.js';

const RESOURCE_TITLE = 'In a GatewayConfig object';
const API_SERVER_MARK = '*(also checked by the Kubernetes API server)*';

/** What the API server checks of a GatewayConfig object (resource mode), and what only the gateway can. */
function resourceSection(): string[] {
  const { untypedFields } = specSchema();
  return [
    `## ${RESOURCE_TITLE}`,
    '',
    `With \`--config-resource NAMESPACE/NAME\` the configuration is the \`spec\` of a ${ENVELOPE_KIND} object (\`apiVersion: ${ENVELOPE_API_VERSION}\`), and locations start with \`spec\`. The Kubernetes API server checks the object when it is applied, against the CustomResourceDefinition that \`gateway crd\` prints (the chart installs it): field types, ranges, patterns and enums, required fields, unknown fields (\`kubectl apply\` refuses them: its field validation is strict by default), and the cross-field rules marked ${API_SERVER_MARK} above. A refused object is never stored, and the gateway never sees it.`,
    '',
    "Only the gateway checks the rest. It refuses a generation that breaks one of these, keeps serving the last good configuration and says why in the object's status (condition `Accepted` `False`, naming the field and the rule):",
    '',
    '- the cross-field rules above without the mark;',
    '- checks of a value beyond its type, range, pattern or enum: a URL without a query string or fragment, a key file that exists and can be read, a variable that is set;',
    '- the keys of maps (aliases, header names, labels, account names): a rule over every key of a map costs more than the API server allows;',
    `- fields that take values of more than one type, which a CustomResourceDefinition cannot describe: the API server stores any value there, and its rules cannot look into them, so the rules that involve them (\`aimd\` and the latency budget it sets, keys and their owners) are the gateway's alone. They are ${untypedFields.map(code).join(', ')} (\`*\`: any key or item).`,
    '',
    "Unknown fields are refused only by clients that ask for strict field validation, as `kubectl apply` does by default; a client library sending the object with the API server's default (warn) has them dropped, with a warning in the response.",
    '',
  ];
}

/** Reading order of the sections; definitions not listed here follow in schema order. */
const SECTION_ORDER = [
  'GatewayConfig',
  'Target',
  'Provider',
  'Fallback',
  'AimdOverrides',
  'RateLimit',
  'ConcurrencyLimit',
  'Auth',
  'KeyDefinition',
  'SecretReference',
  'ReasoningTranslation',
  'ReasoningSurface',
  'ReasoningWrite',
  'GatewayConfigEnvelope',
  'EnvelopeMetadata',
];

/** Placeholders for map keys in locations (`$.targets.<alias>`). */
const MAP_KEY_NAMES: Record<string, string> = {
  targets: '<alias>',
  key_definitions: '<name>',
};

/** Enums longer than this are listed under the table instead of inside a cell. */
const MAX_INLINE_ENUM = 8;

const CATALOG_TITLE = 'Unsupported-parameter catalog';

type Node = JsonSchema;

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function slug(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const code = (value: unknown): string => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

function joinOr(parts: readonly string[]): string {
  if (parts.length <= 1) return parts[0] ?? '';
  return `${parts.slice(0, -1).join(', ')} or ${parts.at(-1)}`;
}

class Renderer {
  private readonly defs: Record<string, Node>;
  /** Notes collected while rendering one table (long enums), printed under it. */
  private notes: string[] = [];

  constructor(root: Node) {
    this.defs = (isNode(root.$defs) ? root.$defs : {}) as Record<string, Node>;
  }

  private defName(ref: unknown): string | undefined {
    return typeof ref === 'string' && ref.startsWith('#/$defs/') ? ref.slice('#/$defs/'.length) : undefined;
  }

  titleOf(name: string): string {
    const title = this.defs[name]?.title;
    return typeof title === 'string' ? title : name;
  }

  private link(name: string): string {
    return `[${this.titleOf(name)}](#${slug(this.titleOf(name))})`;
  }

  private bounds(node: Node): string[] {
    const out: string[] = [];
    if (typeof node.minimum === 'number') out.push(`>= ${node.minimum}`);
    if (typeof node.exclusiveMinimum === 'number') out.push(`> ${node.exclusiveMinimum}`);
    if (typeof node.maximum === 'number') out.push(`<= ${node.maximum}`);
    if (typeof node.exclusiveMaximum === 'number') out.push(`< ${node.exclusiveMaximum}`);
    return out;
  }

  private enumText(values: readonly unknown[], field: string): string {
    if (values.length <= MAX_INLINE_ENUM) return `one of ${values.map(code).join(', ')}`;
    this.notes.push(`Allowed values of \`${field}\`: ${values.map(code).join(', ')}.`);
    return `one of ${values.length} names (listed below)`;
  }

  type(node: Node, field: string): string {
    const name = this.defName(node.$ref);
    if (name !== undefined) return this.link(name);
    if (isNode(node.not) && Object.keys(node.not).length === 0) return 'not allowed';
    if ('const' in node) return code(node.const);
    if (Array.isArray(node.enum)) return this.enumText(node.enum, field);
    const branches = Array.isArray(node.anyOf)
      ? node.anyOf
      : Array.isArray(node.oneOf)
        ? node.oneOf
        : undefined;
    if (branches !== undefined && node.type === undefined)
      return joinOr(branches.filter(isNode).map((branch) => this.type(branch, field)));
    if (Array.isArray(node.type)) return joinOr(node.type.map(String));
    switch (node.type) {
      case 'array': {
        const items = isNode(node.items) ? this.type(node.items, field) : 'anything';
        const qualifiers = [
          typeof node.minItems === 'number' && node.minItems > 0 ? `at least ${node.minItems}` : '',
          node.uniqueItems === true ? 'unique' : '',
        ].filter(Boolean);
        return `array of ${items}${qualifiers.length ? `, ${qualifiers.join(', ')}` : ''}`;
      }
      case 'object': {
        if (!isNode(node.additionalProperties) || Object.keys(node.additionalProperties).length === 0)
          return 'object';
        const keys =
          isNode(node.propertyNames) && Array.isArray(node.propertyNames.enum)
            ? this.enumText(node.propertyNames.enum, `${field}` + ' keys')
            : 'string';
        return `map of ${keys} → ${this.type(node.additionalProperties, field)}`;
      }
      case 'integer':
      case 'number': {
        const ranges = Array.isArray(node.anyOf)
          ? node.anyOf.filter(isNode).map((r) => `${String(r.minimum)}-${String(r.maximum)}`)
          : [];
        if (ranges.length > 0) return `${node.type} in ${joinOr(ranges)}`;
        const bounds = this.bounds(node);
        return bounds.length ? `${node.type} (${bounds.join(', ')})` : String(node.type);
      }
      case 'string': {
        if (node.format === 'uri') return 'string (URL)';
        return typeof node.minLength === 'number' && node.minLength > 0 ? 'non-empty string' : 'string';
      }
      default:
        return typeof node.type === 'string' ? node.type : 'any';
    }
  }

  /** Where a definition appears in a bare configuration (`$.targets.<alias>.providers[]`). */
  locations(): Map<string, string[]> {
    const found = new Map<string, string[]>();
    const visit = (node: Node, path: string, depth: number): void => {
      if (depth > 40) return;
      const name = this.defName(node.$ref);
      if (name !== undefined) {
        const list = found.get(name) ?? [];
        if (!list.includes(path)) list.push(path);
        found.set(name, list);
        const def = this.defs[name];
        if (def !== undefined) visit(def, path, depth + 1);
        return;
      }
      for (const key of ['anyOf', 'oneOf'] as const)
        if (Array.isArray(node[key]))
          for (const branch of node[key].filter(isNode)) visit(branch, path, depth + 1);
      if (isNode(node.properties))
        for (const [field, child] of Object.entries(node.properties))
          if (isNode(child)) visit(child, `${path}.${field}`, depth + 1);
      if (isNode(node.items)) visit(node.items, `${path}[]`, depth + 1);
      if (isNode(node.additionalProperties)) {
        const key = MAP_KEY_NAMES[path.slice(path.lastIndexOf('.') + 1)] ?? '<key>';
        visit(node.additionalProperties, `${path}.${key}`, depth + 1);
      }
    };
    // Paths are given for the bare configuration (inside an envelope they start with `$.spec`); the
    // envelope's own definitions get their envelope paths.
    visit({ $ref: '#/$defs/GatewayConfig' }, '$', 0);
    const bare = new Set(found.keys());
    visit({ $ref: '#/$defs/GatewayConfigEnvelope' }, '$', 0);
    for (const [name, paths] of found)
      if (bare.has(name))
        found.set(
          name,
          paths.filter((p) => !p.startsWith('$.spec')),
        );
    return found;
  }

  /** "Forms" of an object given as titled `anyOf` branches with `required` / `not` (the target). */
  private forms(def: Node): string[] {
    if (!Array.isArray(def.anyOf) || def.type !== 'object') return [];
    const lines: string[] = ['Forms (exactly one applies):', ''];
    for (const branch of def.anyOf.filter(isNode)) {
      const required = Array.isArray(branch.required) ? branch.required.map(code).join(', ') : '';
      const excluded =
        isNode(branch.not) && Array.isArray(branch.not.anyOf)
          ? branch.not.anyOf
              .filter(isNode)
              .flatMap((n) => (Array.isArray(n.required) ? n.required.map(code) : []))
          : [];
      lines.push(
        `- **${String(branch.title)}**: has ${required}${excluded.length ? `; must not have ${joinOr(excluded)}` : ''}.`,
      );
    }
    lines.push('');
    return lines;
  }

  section(name: string, locations: readonly string[]): string[] {
    const def = this.defs[name]!;
    this.notes = [];
    const lines = [`## ${this.titleOf(name)}`, ''];
    if (typeof def.description === 'string') lines.push(def.description, '');
    if (locations.length > 0) lines.push(`Location: ${locations.map((l) => `\`${l}\``).join(', ')}`, '');
    lines.push(...this.forms(def));
    const properties = isNode(def.properties) ? def.properties : {};
    const required = new Set(Array.isArray(def.required) ? def.required : []);
    lines.push('| Field | Type | Required | Default | Description |', '|---|---|---|---|---|');
    for (const [field, child] of Object.entries(properties)) {
      if (!isNode(child)) continue;
      const description = typeof child.description === 'string' ? child.description : '';
      const defaultValue = 'default' in child ? code(child.default) : '';
      lines.push(
        `| \`${field}\` | ${cell(this.type(child, field))} | ${required.has(field) ? 'yes' : 'no'} | ${cell(defaultValue)} | ${cell(description)} |`,
      );
    }
    lines.push('');
    lines.push(
      def.additionalProperties === false
        ? 'Unknown fields are errors.'
        : 'Other fields are accepted and ignored.',
      '',
    );
    if (this.notes.length > 0) lines.push(...this.notes, '');
    return lines;
  }
}

function catalogSection(): string[] {
  const lines = [
    `## ${CATALOG_TITLE}`,
    '',
    'Chat-completions parameters that strict mode counts (metric `gateway_unsupported_params_total`) and, when listed in `reject_unsupported_params`, rejects with 400 `unsupported_parameter`. A parameter counts only when present with a value other than the ones below; `null` always counts as absent.',
    '',
    '| Parameter | Counts as absent when |',
    '|---|---|',
  ];
  for (const name of UNSUPPORTED_PARAM_NAMES) {
    const rule = UNSUPPORTED_PARAMS_CATALOG[name];
    const absent =
      typeof rule === 'function'
        ? rule === isEmptyCollection
          ? 'null, or an empty array or object'
          : 'null, or as decided by the check'
        : ['null', ...(rule as readonly unknown[]).map(code)].join(', ');
    lines.push(`| \`${name}\` | ${cell(absent)} |`);
  }
  lines.push('');
  return lines;
}

function aimdSection(): string[] {
  const lines = [
    '## AIMD defaults',
    '',
    'Share-controller parameters used where a pool does not override them (`fallback.aimd`).',
    '',
    '| Parameter | Default |',
    '|---|---|',
  ];
  for (const [field, value] of Object.entries(AIMD_DEFAULTS)) lines.push(`| \`${field}\` | ${code(value)} |`);
  lines.push('');
  return lines;
}

const EXAMPLE = `targets:
  sim:
    url: http://127.0.0.1:8000/v1
  llama:
    keys: [team-a]
    strategy: priority
    providers:
      - url: http://10.0.0.5:8000/v1
        name: primary
      - url: https://api.example.com/v1
        gateway_key: { from_file: /etc/gateway-keys/example-api }
    fallback:
      on_status: [429, 5]
      first_token_timeout_ms: 5000
auth:
  key_definitions:
    team-a:
      key: tok-team-a
      labels: { account: team-a }`;

/** The complete reference, ending with one newline. */
export function renderConfigReference(): string {
  const renderer = new Renderer(configFileJsonSchema());
  const locations = renderer.locations();
  const defs = Object.keys((configFileJsonSchema().$defs ?? {}) as Record<string, unknown>);
  const order = [
    ...SECTION_ORDER.filter((name) => defs.includes(name)),
    ...defs.filter((n) => !SECTION_ORDER.includes(n)),
  ];

  const lines: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated from src/gateway/config/schema/ by `gateway schema --markdown` (`make docs`). Do not edit by hand. -->',
    '',
    'The gateway reads one configuration file, given with `--targets <file>` (`-f <file>`), and reloads it when it changes (unless `--watch false`). An invalid file is refused as a whole: at startup the gateway exits, on reload it keeps serving the last good configuration.',
    '',
    '- **Syntax**: JSON or YAML, chosen by the extension (`.json`; `.yaml` or `.yml`); any other name is read as JSON, then as YAML. A YAML file holds one document. Duplicate keys are errors.',
    `- **Shape**: the bare configuration ([${renderer.titleOf('GatewayConfig')}](#${slug(renderer.titleOf('GatewayConfig'))})), or the same wrapped in an envelope with \`apiVersion: ${ENVELOPE_API_VERSION}\`, \`kind: ${ENVELOPE_KIND}\`, \`metadata\` and \`spec\` ([${renderer.titleOf('GatewayConfigEnvelope')}](#${slug(renderer.titleOf('GatewayConfigEnvelope'))})). A file with a top-level \`apiVersion\`, \`kind\` or \`spec\` is read as an envelope. Locations below are given for the bare configuration; inside an envelope they start with \`$.spec\`.`,
    '- **Strictness**: unknown fields are errors everywhere except in envelope `metadata`, so a misspelled field never silently disables a setting.',
    '- **Checking**: `gateway validate <file>` prints every problem as `<JSON path>: <message>` (for example `$.targets["my-model"].providers[1].url: must be an absolute http:// or https:// URL`), with a suggestion for misspelled fields, and exits 1; a valid file prints a summary and exits 0. `gateway schema` prints the JSON Schema (draft 2020-12) of the file for editors.',
    `- **Efforts**: reasoning efforts are ${EFFORTS.map(code).join(', ')}.`,
    '',
    '## Example',
    '',
    '```yaml',
    EXAMPLE,
    '```',
    '',
    '## Contents',
    '',
    ...order.map((name) => `- [${renderer.titleOf(name)}](#${slug(renderer.titleOf(name))})`),
    '- [Cross-field rules](#cross-field-rules)',
    `- [${RESOURCE_TITLE}](#${slug(RESOURCE_TITLE)})`,
    '- [AIMD defaults](#aimd-defaults)',
    `- [${CATALOG_TITLE}](#${slug(CATALOG_TITLE)})`,
    '',
  ];
  for (const name of order) lines.push(...renderer.section(name, locations.get(name) ?? []));
  lines.push(
    '## Cross-field rules',
    '',
    'Checked by the loader and `gateway validate` in addition to the field types above (the JSON Schema cannot express them).',
    '',
    ...CROSS_FIELD_RULES.map(
      (rule, index) => `${index + 1}. ${rule.text}${rule.apiServer ? ` ${API_SERVER_MARK}` : ''}`,
    ),
    '',
  );
  lines.push(...resourceSection(), ...aimdSection(), ...catalogSection());
  return `${lines.join('\n').trimEnd()}\n`;
}
