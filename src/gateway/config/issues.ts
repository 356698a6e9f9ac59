/**
 * Turns zod issues into configuration issues a person can act on: one issue per problem, a JSON path
 * (`$.targets["my-model"].providers[1].url`), a message in the configuration's own words, and a
 * "did you mean" for typos. Two parts:
 *
 * - `configErrorMap` writes the message of every issue whose schema did not set its own. It is
 *   passed to `safeParse`, where schema-level messages (the cross-field rules) still win.
 * - `collectIssues` flattens the result: an unknown-keys issue becomes one issue per key, a union
 *   failure is collapsed to the branch the input was evidently written for.
 */
import { z } from 'zod';
import { closestMatch } from './suggest.js';

export interface ConfigIssue {
  /** JSON path of the offending value (or of the unknown key), `$` for the whole document. */
  path: string;
  message: string;
  /** 1-based position in the source text, when it could be located. */
  line?: number;
  column?: number;
  /** The file itself could not be read: nothing is known about its content. */
  unreadable?: true;
}

export type PathSegment = string | number;

/** An issue before its path is rendered; the loader uses the segments to find the source position. */
export interface PathIssue {
  segments: PathSegment[];
  message: string;
}

/** While flattening: which issues come from refinements, and where unknown keys were found. */
interface FlatIssue extends PathIssue {
  fromRefinement: boolean;
  unknownKeyIn?: PathSegment[];
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '$';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && IDENTIFIER.test(segment)) out += `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return value.length > 40 ? 'a string' : `the string ${JSON.stringify(value)}`;
    case 'number':
      return Number.isInteger(value) ? `the integer ${value}` : `the number ${value}`;
    case 'boolean':
      return String(value);
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean (true or false)',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  null: 'null',
};

const expectedPhrase = (expected: string): string => EXPECTED[expected] ?? expected;

const literal = (value: unknown): string =>
  `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

function oneOf(phrases: readonly string[]): string {
  const unique = [...new Set(phrases)];
  if (unique.length <= 1) return unique[0] ?? 'a valid value';
  return `${unique.slice(0, -1).join(', ')} or ${unique.at(-1)}`;
}

/** What one union branch wanted, judged by the issue it raised at its own root. */
function branchExpectation(issues: readonly z.core.$ZodIssue[]): string | undefined {
  const root = issues.find((issue) => issue.path.length === 0);
  if (root === undefined) return undefined;
  if (root.code === 'invalid_type') return expectedPhrase(root.expected);
  if (root.code === 'invalid_value') return oneOf(root.values.map(literal));
  return undefined;
}

/** Longer value lists are left to the reference; a message should stay one readable line. */
const MAX_LISTED_VALUES = 8;

const SAFE_INTEGER_NOTE = 'must be an integer between -9007199254740991 and 9007199254740991';

function bound(
  kind: 'least' | 'most',
  issue: { origin: string; inclusive?: boolean; minimum?: number | bigint; maximum?: number | bigint },
): string {
  const limit = Number(kind === 'least' ? issue.minimum : issue.maximum);
  switch (issue.origin) {
    case 'array':
    case 'set':
      if (kind === 'least' && limit === 1) return 'must not be empty';
      return `must have at ${kind} ${limit} item${limit === 1 ? '' : 's'}`;
    case 'string':
      if (kind === 'least' && limit === 1) return 'must not be empty';
      return `must be at ${kind} ${limit} character${limit === 1 ? '' : 's'} long`;
    default: {
      if (Math.abs(limit) === Number.MAX_SAFE_INTEGER) return SAFE_INTEGER_NOTE;
      const op = kind === 'least' ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
      return `must be ${op} ${limit}`;
    }
  }
}

/** Messages for issues whose schema did not set one; see the module comment. */
export const configErrorMap: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (typeof issue.input === 'number' && !Number.isFinite(issue.input))
        return `must be a finite number, got ${String(issue.input)}`;
      if (issue.expected === 'int' && typeof issue.input === 'number')
        return `must be an integer, got ${describeValue(issue.input)}`;
      return `must be ${expectedPhrase(issue.expected)}, got ${describeValue(issue.input)}`;
    case 'too_small':
      return `${bound('least', issue)}, got ${describeValue(issue.input)}`;
    case 'too_big':
      return `${bound('most', issue)}, got ${describeValue(issue.input)}`;
    case 'invalid_value': {
      const expected =
        issue.values.length === 1
          ? `must be ${literal(issue.values[0])}`
          : issue.values.length <= MAX_LISTED_VALUES
            ? `must be one of ${issue.values.map(literal).join(', ')}`
            : `must be one of the ${issue.values.length} allowed values`;
      const suggestion =
        typeof issue.input === 'string'
          ? closestMatch(
              issue.input,
              issue.values.filter((v): v is string => typeof v === 'string'),
            )
          : undefined;
      return suggestion !== undefined
        ? `${expected}; did you mean \`${suggestion}\`?`
        : `${expected}, got ${describeValue(issue.input)}`;
    }
    case 'invalid_format':
      if (issue.format === 'regex' && issue.pattern !== undefined)
        return `must match the pattern ${issue.pattern}`;
      return `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `\`${k}\``).join(', ')}`;
    case 'invalid_union': {
      const wanted = issue.errors.map(branchExpectation);
      if (wanted.some((w) => w === undefined)) return 'matches none of the allowed forms';
      return `must be ${oneOf(wanted as string[])}, got ${describeValue(issue.input)}`;
    }
    case 'invalid_key':
      return 'invalid key';
    case 'invalid_element':
      return 'invalid element';
    default:
      return undefined;
  }
};

// ---------------------------------------------------------------------------------------------
// Walking the schema (for the known keys of the object an unknown key was found in)
// ---------------------------------------------------------------------------------------------

/** The schemas a value at this position may be checked against, wrappers removed. */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType[] {
  const def = schema._zod.def;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
    case 'catch':
      return unwrap((def as unknown as { innerType: z.core.$ZodType }).innerType);
    case 'pipe':
      return unwrap((def as z.core.$ZodPipeDef).in);
    case 'lazy':
      return unwrap((def as z.core.$ZodLazyDef).getter());
    case 'union':
      return (def as z.core.$ZodUnionDef).options.flatMap((option) => unwrap(option));
    default:
      return [schema];
  }
}

/** Every schema that may sit at `path` below `root` (several when the path runs through a union). */
export function schemasAt(root: z.core.$ZodType, path: readonly PathSegment[]): z.core.$ZodType[] {
  let current = unwrap(root);
  for (const segment of path) {
    const next: z.core.$ZodType[] = [];
    for (const schema of current) {
      const def = schema._zod.def;
      if (def.type === 'object') {
        const child = (def as z.core.$ZodObjectDef).shape[String(segment)];
        if (child !== undefined) next.push(...unwrap(child));
      } else if (def.type === 'record') {
        next.push(...unwrap((def as z.core.$ZodRecordDef).valueType));
      } else if (def.type === 'array' && typeof segment === 'number') {
        next.push(...unwrap((def as z.core.$ZodArrayDef).element));
      }
    }
    current = next;
  }
  return current;
}

interface KnownKeys {
  keys: string[];
  /** True for a record with a fixed key set (enum keys), where "key" reads better than "field". */
  isMap: boolean;
}

function knownKeysOf(schema: z.core.$ZodType): KnownKeys | undefined {
  const def = schema._zod.def;
  if (def.type === 'object') return { keys: Object.keys((def as z.core.$ZodObjectDef).shape), isMap: false };
  if (def.type === 'record') {
    const keyDef = (def as z.core.$ZodRecordDef).keyType._zod.def;
    if (keyDef.type === 'enum')
      return { keys: Object.values((keyDef as z.core.$ZodEnumDef).entries).map(String), isMap: true };
  }
  return undefined;
}

/** Fields holding nested objects, for "it belongs inside `x`" hints. */
function nestedObjectFields(schema: z.core.$ZodType): [string, string[]][] {
  const def = schema._zod.def;
  if (def.type !== 'object') return [];
  const out: [string, string[]][] = [];
  for (const [field, child] of Object.entries((def as z.core.$ZodObjectDef).shape)) {
    for (const inner of unwrap(child)) {
      const known = knownKeysOf(inner);
      if (known !== undefined && !known.isMap) out.push([field, known.keys]);
    }
  }
  return out;
}

function unknownKeyMessage(root: z.core.$ZodType, objectPath: PathSegment[], key: string): string {
  const candidates = schemasAt(root, objectPath)
    .map(knownKeysOf)
    .filter((k): k is KnownKeys => k !== undefined);
  const known = [...new Set(candidates.flatMap((c) => c.keys))];
  const isMap = candidates.length > 0 && candidates.every((c) => c.isMap);
  const head = isMap
    ? `unknown key \`${key}\` (must be one of ${known.join(', ')})`
    : `unknown field \`${key}\``;

  const suggestion = closestMatch(key, known);
  if (suggestion !== undefined) return `${head}; did you mean \`${suggestion}\`?`;
  if (isMap) return head;

  // A field of a nested object written one level too high (`max_concurrent_requests` on a target).
  for (const schema of schemasAt(root, objectPath))
    for (const [field, keys] of nestedObjectFields(schema))
      if (keys.includes(key))
        return `${head}; did you mean \`${field}.${key}\`? (it belongs inside \`${field}\`)`;

  // A field of an enclosing object written one level too deep (`strategy` on a provider entry).
  for (let depth = objectPath.length - 1; depth >= 0; depth--) {
    const ancestorPath = objectPath.slice(0, depth);
    const ancestorKeys = schemasAt(root, ancestorPath).flatMap((s) => knownKeysOf(s)?.keys ?? []);
    if (ancestorKeys.includes(key))
      return `${head} here: \`${key}\` is a field of ${formatPath(ancestorPath)}`;
  }
  return known.length > 0 && known.length <= 8 ? `${head} (known fields: ${known.join(', ')})` : head;
}

// ---------------------------------------------------------------------------------------------
// Flattening
// ---------------------------------------------------------------------------------------------

/** Codes that say the input is not even the kind of value a union branch accepts. */
const ROOT_MISMATCH = new Set([
  'invalid_type',
  'invalid_value',
  'invalid_union',
  'too_small',
  'too_big',
  'invalid_format',
]);

const isRootMismatch = (issues: readonly z.core.$ZodIssue[]): boolean =>
  issues.some((issue) => issue.path.length === 0 && ROOT_MISMATCH.has(issue.code));

const segmentsOf = (path: readonly PropertyKey[]): PathSegment[] =>
  path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));

function flatten(
  issues: readonly z.core.$ZodIssue[],
  prefix: PathSegment[],
  root: z.core.$ZodType,
  out: FlatIssue[],
): void {
  for (const issue of issues) {
    const path = [...prefix, ...segmentsOf(issue.path)];
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys)
          out.push({
            segments: [...path, key],
            message: unknownKeyMessage(root, path, key),
            fromRefinement: false,
            unknownKeyIn: path,
          });
        break;
      case 'invalid_union': {
        // Branches that accept the input's kind (an object for an object branch) are candidates; the
        // one with the fewest problems is the branch the author meant. When no branch accepts the
        // kind, one issue says which kinds are allowed.
        const candidates = issue.errors.filter((branch) => !isRootMismatch(branch));
        if (candidates.length === 0) {
          out.push({ segments: path, message: issue.message, fromRefinement: false });
          break;
        }
        const chosen = candidates.reduce((best, branch) => (branch.length < best.length ? branch : best));
        flatten(chosen, path, root, out);
        break;
      }
      case 'invalid_key': {
        const reasons = [...new Set(issue.issues.map((inner) => inner.message))].join('; ');
        out.push({ segments: path, message: `invalid key: ${reasons}`, fromRefinement: false });
        break;
      }
      default:
        out.push({ segments: path, message: issue.message, fromRefinement: issue.code === 'custom' });
    }
  }
}

const isPrefix = (prefix: readonly PathSegment[], path: readonly PathSegment[]): boolean =>
  prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);

/**
 * One `PathIssue` per problem, in the order zod found them, duplicates removed. `root` is the schema
 * the input was parsed with (needed to know which keys the object with an unknown key accepts).
 *
 * zod runs the cross-field checks of an object even when it has unknown keys (with those keys
 * dropped), so a misspelled `strategy` would also produce a rule violation about the strategy it
 * could not see. Cross-field issues inside an object with an unknown key are therefore held back
 * until the key is fixed: the typo is the one problem to report.
 */
export function collectIssues(issues: readonly z.core.$ZodIssue[], root: z.core.$ZodType): PathIssue[] {
  const flat: FlatIssue[] = [];
  flatten(issues, [], root, flat);
  const unknownKeyObjects = flat.flatMap((issue) => (issue.unknownKeyIn ? [issue.unknownKeyIn] : []));
  const seen = new Set<string>();
  const out: PathIssue[] = [];
  for (const issue of flat) {
    if (issue.fromRefinement && unknownKeyObjects.some((objectPath) => isPrefix(objectPath, issue.segments)))
      continue;
    const id = `${formatPath(issue.segments)}\u0000${issue.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ segments: issue.segments, message: issue.message });
  }
  return out;
}

/** `<path>: <message>`, with the source position when known: the form the validate command prints. */
/** `path: message (line L, column C)`; an issue of the whole document (`$`) is its message alone. */
export function formatIssue(issue: ConfigIssue): string {
  const at = issue.line !== undefined ? ` (line ${issue.line}, column ${issue.column ?? 1})` : '';
  const path = issue.path === '$' ? '' : `${issue.path}: `;
  return `${path}${issue.message}${at}`;
}
