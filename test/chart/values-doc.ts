/**
 * The values table of charts/gateway/README.md, generated from the chart's values.yaml (defaults
 * and `# --` comments) and values.schema.json (types, and descriptions where values.yaml has none):
 *
 *   node test/chart/values-doc.ts           prints the table
 *   node test/chart/values-doc.ts --write   rewrites the table between the README's markers
 *
 * A key gets a row when values.yaml documents it with a `# --` comment (helm-docs' convention: the
 * description runs from that line to the end of the comment block) or when it holds no further
 * keys; an undocumented map is described through its keys instead. values-doc.test.ts fails when
 * the README's table differs from what this prints.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, parseDocument, type Pair, type YAMLMap } from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = join(ROOT, 'charts/gateway');
export const README_FILE = join(CHART_DIR, 'README.md');
export const BEGIN_MARKER = '<!-- values-table:begin -->';
export const END_MARKER = '<!-- values-table:end -->';

interface Schema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  $ref?: string;
  description?: string;
}

export interface ValueRow {
  key: string;
  type: string;
  default: unknown;
  description: string;
}

/** The `# --` description in a comment block (yaml's `commentBefore`, `#` already removed). */
function describedBy(comment: string | null | undefined): string | undefined {
  if (!comment) return undefined;
  const lines = comment.split('\n').map((line) => line.replace(/^ /, ''));
  let start = -1;
  lines.forEach((line, i) => {
    if (/^-- /.test(line)) start = i;
  });
  if (start < 0) return undefined;
  return lines
    .slice(start)
    .map((line, i) => (i === 0 ? line.slice(3) : line).trim())
    .join(' ')
    .trim();
}

function resolveRef(root: Schema & { $defs?: Record<string, Schema> }, schema: Schema | undefined): Schema {
  if (!schema?.$ref) return schema ?? {};
  const name = schema.$ref.replace(/^#\/\$defs\//, '');
  return { ...(root.$defs?.[name] ?? {}), ...schema, $ref: schema.$ref };
}

function refName(ref: string): string {
  return ref
    .replace(/^#\/\$defs\//, '')
    .split('.')
    .at(-1)!;
}

function typeOf(root: Schema, schema: Schema | undefined, value: unknown): string {
  if (schema?.$ref) return refName(schema.$ref);
  if (schema?.enum) return schema.enum.map((v) => JSON.stringify(v)).join(', ');
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  if (alternatives) return [...new Set(alternatives.map((s) => typeOf(root, s, undefined)))].join(' or ');
  if (schema?.type) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    return types
      .map((t) => (t === 'array' && schema.items ? `${typeOf(root, schema.items, undefined)}[]` : t))
      .join(' or ');
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return value === undefined
    ? ''
    : typeof value === 'number' && Number.isInteger(value)
      ? 'integer'
      : typeof value;
}

/** The first sentence of a (Kubernetes) schema description. */
function firstSentence(text: string): string {
  const match = /^(.+?\.)(\s|$)/s.exec(text);
  return (match ? match[1]! : text).replace(/\s+/g, ' ').trim();
}

export function valueRows(
  valuesText = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'),
  schemaText = readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8'),
): ValueRow[] {
  const root = JSON.parse(schemaText) as Schema & { $defs?: Record<string, Schema> };
  const doc = parseDocument(valuesText);
  const rows: ValueRow[] = [];

  const walk = (map: YAMLMap, path: string[], schema: Schema | undefined): void => {
    map.items.forEach((item, index) => {
      const pair = item as Pair;
      const name = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const keyPath = [...path, name];
      // The comment above the first key of a nested map is kept on the map itself.
      const comment = pair.key && isScalar(pair.key) ? pair.key.commentBefore : undefined;
      const description = describedBy(comment) ?? (index === 0 ? describedBy(map.commentBefore) : undefined);
      const own = resolveRef(root, schema?.properties?.[name]);
      const value = pair.value;
      const js = value === null || value === undefined ? null : (value as { toJSON(): unknown }).toJSON();
      // A Kubernetes object (a $ref into the Kubernetes schemas) is one row, whatever it holds.
      const nested = isMap(value) && value.items.length > 0 && !schema?.properties?.[name]?.$ref;
      if (nested && description === undefined) {
        walk(value, keyPath, own);
        return;
      }
      const fromSchema = own.description ?? (own.$ref ? undefined : own.items?.description);
      rows.push({
        key: keyPath.join('.'),
        type: typeOf(root, schema?.properties?.[name], js),
        default: js,
        description: description ?? (fromSchema ? firstSentence(fromSchema) : ''),
      });
    });
  };
  if (isMap(doc.contents)) walk(doc.contents, [], root);
  return rows;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
/** Prose cells: `<name>` would be read as an HTML tag. */
const prose = (text: string): string => cell(text).replace(/</g, '&lt;').replace(/>/g, '&gt;');

function code(value: unknown): string {
  const text = JSON.stringify(value);
  // A code span holding backticks needs a longer fence.
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/** The Markdown between the README's markers (markers excluded). */
export function valuesTable(rows = valueRows()): string {
  return [
    '',
    '<!-- Generated from values.yaml and values.schema.json by `node test/chart/values-doc.ts --write`; edit those, not this table. -->',
    '',
    '| Key | Type | Default | Description |',
    '|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| \`${row.key}\` | ${prose(row.type)} | ${cell(code(row.default))} | ${prose(row.description)} |`,
    ),
    '',
  ].join('\n');
}

/** The README with the table between its markers replaced by `table`. */
export function withTable(readme: string, table = valuesTable()): string {
  const begin = readme.indexOf(BEGIN_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (begin < 0 || end < begin) {
    throw new Error(`${README_FILE} needs the markers ${BEGIN_MARKER} and ${END_MARKER}, in that order`);
  }
  return readme.slice(0, begin + BEGIN_MARKER.length) + table + readme.slice(end);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--write')) {
    writeFileSync(README_FILE, withTable(readFileSync(README_FILE, 'utf8')));
    console.log(`values-doc: wrote the values table of ${README_FILE}`);
  } else {
    process.stdout.write(valuesTable());
  }
}
