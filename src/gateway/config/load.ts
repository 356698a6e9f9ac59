/**
 * Reading the configuration file: JSON or YAML, the bare config or its CRD-style envelope. Bad input
 * of any kind (unreadable file, invalid UTF-8, syntax error, schema violation) comes back as issues,
 * never as an exception, because a hot reload must be able to reject a file and keep serving.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, isAbsolute, resolve } from 'node:path';
import type * as Yaml from 'yaml';
import type { Document, LineCounter } from 'yaml';
import type { z } from 'zod';
import { fsReason } from '../../lib/fs-reason.js';
import { findDuplicateKeys } from './json-duplicates.js';
import { jsonErrorOffset } from './json-error.js';
import { collectIssues, configErrorMap, formatPath, type ConfigIssue, type PathSegment } from './issues.js';
import { GatewayConfigEnvelopeSchema, GatewayConfigSchema, type GatewayConfig } from './schema/index.js';

export type ConfigResult =
  { ok: true; config: GatewayConfig; hash: string } | { ok: false; issues: ConfigIssue[] };

type Format = 'json' | 'yaml';

/** Top-level keys that mark the envelope; the bare config has none of them. */
const ENVELOPE_KEYS = ['apiVersion', 'kind', 'spec'];

/** Aliases may repeat a node this often; beyond it a small file could expand into a huge value. */
const MAX_YAML_ALIAS_COUNT = 100;

export function sha256Hex(bytes: string | Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The YAML library, loaded on first use: a JSON file that validates never needs it, and it costs
 * about 13 MB of RSS in every gateway process that loads it (docs/performance.md).
 */
let yamlLibrary: typeof Yaml | undefined;
function yaml(): typeof Yaml {
  return (yamlLibrary ??= createRequire(import.meta.url)('yaml') as typeof Yaml);
}

function formatOf(source: string): Format | undefined {
  const ext = extname(source).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.yaml' || ext === '.yml') return 'yaml';
  return undefined;
}

interface YamlView {
  document: Document;
  lineCounter: LineCounter;
}

interface Parsed {
  value: unknown;
  /**
   * The YAML view of the text, used to find the line of a validation issue; undefined when there is
   * none. For JSON it is built only when asked, i.e. only when validation failed.
   */
  view(): YamlView | undefined;
}

type ParseOutcome = { ok: true; parsed: Parsed } | { ok: false; issues: ConfigIssue[] };

function position(lineCounter: LineCounter, offset: number): { line: number; column: number } {
  const { line, col } = lineCounter.linePos(offset);
  // LineCounter reports line 0 before the first newline was seen (single-line input).
  return { line: Math.max(line, 1), column: col };
}

function yamlDocument(text: string): YamlView {
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, strict: true });
  return { document, lineCounter };
}

/** The YAML library recurses in places; a pathological document must still become an issue. */
function failure(prefix: string, error: unknown): ParseOutcome {
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, issues: [{ path: '$', message: `${prefix}: ${message}` }] };
}

/** The position goes in `line` and `column` only: `formatIssue` states it, once. */
function syntaxIssue(format: Format, message: string, at: { line: number; column: number }): ConfigIssue {
  const label = format === 'json' ? 'JSON' : 'YAML';
  return { path: '$', message: `${label} syntax error: ${message}`, ...at };
}

function parseYaml(text: string): ParseOutcome {
  let parsed: YamlView;
  try {
    parsed = yamlDocument(text);
  } catch (error) {
    return failure('YAML error', error);
  }
  const { document, lineCounter } = parsed;
  if (document.errors.length > 0)
    return {
      ok: false,
      issues: document.errors.map((error) =>
        syntaxIssue(
          'yaml',
          error.code === 'MULTIPLE_DOCS' ? 'the file must hold a single YAML document' : error.message,
          position(lineCounter, error.pos[0]),
        ),
      ),
    };
  try {
    return {
      ok: true,
      parsed: { value: document.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }), view: () => parsed },
    };
  } catch (error) {
    // toJS throws on alias bombs and unresolvable aliases; the document itself parsed.
    return failure('YAML error', error);
  }
}

function offsetPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}

/** V8's JSON message without its position and source excerpt, which the issue states its own way. */
function jsonErrorMessage(raw: string): string {
  return raw
    .replace(/,\s*".*is not valid JSON$/s, '')
    .replace(/\s*(in JSON )?at position \d+( \(line \d+ column \d+\))?/, '')
    .trim();
}

function parseJson(text: string): ParseOutcome {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const raw = error instanceof Error ? error.message : String(error);
    const offset = jsonErrorOffset(text) ?? text.length;
    return { ok: false, issues: [syntaxIssue('json', jsonErrorMessage(raw), offsetPosition(text, offset))] };
  }
  // JSON.parse keeps the last of two equal keys without a word: refuse them instead.
  const duplicates = findDuplicateKeys(text);
  if (duplicates.length > 0)
    return {
      ok: false,
      issues: duplicates.map(({ key, offset, firstOffset }) => {
        const first = offsetPosition(text, firstOffset);
        return syntaxIssue(
          'json',
          `duplicate key ${JSON.stringify(key)} in one object (first at line ${first.line}, column ${first.column}); keys must be unique`,
          offsetPosition(text, offset),
        );
      }),
    };
  let view: YamlView | undefined | null = null;
  const lazyView = (): YamlView | undefined => {
    if (view === null) {
      try {
        const built = yamlDocument(text);
        view = built.document.errors.length === 0 ? built : undefined;
      } catch {
        view = undefined;
      }
    }
    return view;
  };
  return { ok: true, parsed: { value, view: lazyView } };
}

function parseText(text: string, format: Format | undefined): ParseOutcome {
  if (format === 'json') return parseJson(text);
  if (format === 'yaml') return parseYaml(text);
  // Unknown extension: JSON first (stricter), then YAML. When both fail, the error of the format the
  // text looks like is the useful one.
  const json = parseJson(text);
  if (json.ok) return json;
  const yaml = parseYaml(text);
  if (yaml.ok) return yaml;
  return /^\s*[{[]/.test(text) ? json : yaml;
}

/** Source position of the node at `segments` (the key for a map entry), or of its deepest ancestor. */
function locate(
  parsed: Parsed,
  segments: readonly PathSegment[],
): { line: number; column: number } | undefined {
  const view = parsed.view();
  if (view === undefined) return undefined;
  const { isMap, isScalar, isSeq } = yaml();
  let node: unknown = view.document.contents;
  let offset: number | undefined = (node as { range?: [number, number, number] } | null)?.range?.[0];
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (pair === undefined) break;
      offset = (pair.key as { range?: [number, number, number] }).range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item: unknown = node.items[segment];
      if (item === undefined) break;
      offset = (item as { range?: [number, number, number] }).range?.[0] ?? offset;
      node = item;
    } else break;
  }
  return offset === undefined ? undefined : position(view.lineCounter, offset);
}

function isEnvelope(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    ENVELOPE_KEYS.some((key) => Object.hasOwn(value, key))
  );
}

function validate(parsed: Parsed, hash: string, bareOnly = false): ConfigResult {
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got =
      value === null ? 'an empty document' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return {
      ok: false,
      issues: [
        {
          path: '$',
          message: `the configuration must be an object (the bare config or its envelope), got ${got}`,
        },
      ],
    };
  }
  const envelope = !bareOnly && isEnvelope(value);
  const schema: z.ZodType = envelope ? GatewayConfigEnvelopeSchema : GatewayConfigSchema;
  const result = schema.safeParse(value, { error: configErrorMap });
  if (result.success) {
    const config = envelope
      ? (result.data as z.output<typeof GatewayConfigEnvelopeSchema>).spec
      : (result.data as GatewayConfig);
    return { ok: true, config, hash };
  }
  const issues = collectIssues(result.error.issues, schema).map((issue) => ({
    path: formatPath(issue.segments),
    message: issue.message,
    ...locate(parsed, issue.segments),
  }));
  return { ok: false, issues: issues.sort(byPosition) };
}

/**
 * Problems in the order the file reads (the schema's own order is its fields' order, which a file
 * need not follow); problems without a position (the whole document) keep their order, last.
 */
function byPosition(a: ConfigIssue, b: ConfigIssue): number {
  const lineA = a.line ?? Infinity;
  const lineB = b.line ?? Infinity;
  if (lineA !== lineB) return lineA < lineB ? -1 : 1;
  return (a.column ?? 0) - (b.column ?? 0);
}

function parseDecoded(text: string, source: string, hash: string): ConfigResult {
  // A UTF-8 byte order mark is not part of either syntax; the hash still covers the raw bytes.
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const outcome = parseText(body, formatOf(source));
  return outcome.ok ? validate(outcome.parsed, hash) : outcome;
}

/**
 * Parses and validates configuration text. `source` is the file name: its extension picks the
 * syntax (`.json`, `.yaml`/`.yml`; anything else tries JSON, then YAML). The hash is the sha256 of
 * the text's UTF-8 bytes, equal to the hash of the file it was read from.
 */
export function parseConfigText(text: string, source: string): ConfigResult {
  return parseDecoded(text, source, sha256Hex(Buffer.from(text, 'utf8')));
}

/**
 * Validates a configuration that arrives already parsed: the `spec` of a GatewayConfig object read
 * through the Kubernetes API. It is always the bare configuration; `hash` identifies the content
 * (`config_info`). Issues carry paths and no source position.
 */
export function parseConfigValue(value: unknown, hash: string): ConfigResult {
  return validate({ value, view: () => undefined }, hash, true);
}

/** Reads, parses and validates a configuration file. I/O and encoding errors are issues at `$`. */
export async function loadConfigFile(path: string): Promise<ConfigResult> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    // The caller names the file; a relative name is resolved here, since the working directory is
    // often not the one the person had in mind.
    const resolved = isAbsolute(path) ? '' : ` (${resolve(path)})`;
    const message = `cannot read the file${resolved}: ${fsReason(error)}`;
    return { ok: false, issues: [{ path: '$', message, unreadable: true }] };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { ok: false, issues: [{ path: '$', message: 'the file is not valid UTF-8' }] };
  }
  return parseDecoded(text, path, sha256Hex(bytes));
}
