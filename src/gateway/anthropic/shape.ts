/**
 * Reading an untyped JSON request: checks that refuse with the JSON path of the offending field,
 * and the record of the fields a translation drops.
 *
 * Paths are written as a client would look them up: `messages[2].content[0].signature`. Inside
 * the translation a refusal is thrown as `Refusal` and turned into the `{ok: false}` result at the
 * entry point, so each reader states its rule once instead of threading results through.
 */

export type JsonRecord = Record<string, unknown>;

export class Refusal extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'Refusal';
    this.field = field;
  }
}

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function child(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

export function item(path: string, index: number): string {
  return `${path}[${index}]`;
}

export function expectRecord(value: unknown, path: string): JsonRecord {
  if (!isRecord(value)) throw new Refusal(path, `${path} must be an object`);
  return value;
}

export function expectArray(value: unknown, path: string): readonly unknown[] {
  if (!Array.isArray(value)) throw new Refusal(path, `${path} must be an array`);
  return value;
}

export function expectString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new Refusal(path, `${path} must be a string`);
  return value;
}

export function expectNonEmptyString(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new Refusal(path, `${path} must be a non-empty string`);
  }
  return value;
}

export function expectBoolean(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw new Refusal(path, `${path} must be a boolean`);
  return value;
}

export function expectFiniteNumber(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new Refusal(path, `${path} must be a number`);
  }
  return value;
}

export function expectInteger(value: unknown, path: string, minimum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    throw new Refusal(path, `${path} must be an integer of at least ${minimum}`);
  }
  return value;
}

/** A field that may be absent: JSON null counts as absent, as the Messages API treats it. */
export function optional(record: JsonRecord, key: string): unknown {
  const value = record[key];
  return value === null ? undefined : value;
}

/**
 * The fields a translation leaves out, each named once, in the order first met. A field that is
 * left out wherever it occurs is named by its key (`cache_control`); any other by its path with
 * the array indexes left out (`messages[].content[].citations`), so the list stays short.
 */
export class DroppedFields {
  readonly #names = new Set<string>();

  add(name: string): void {
    this.#names.add(name);
  }

  list(): string[] {
    return [...this.#names];
  }

  /**
   * Names every field of `record` outside `known` that carries a value, under `pattern` (the
   * record's index-free path). `cache_control` is named by its key wherever it occurs.
   */
  addUnknown(record: JsonRecord, known: ReadonlySet<string>, pattern: string): void {
    for (const key in record) {
      if (known.has(key) || record[key] === undefined || record[key] === null) continue;
      this.#names.add(key === CACHE_CONTROL ? CACHE_CONTROL : child(pattern, key));
    }
  }
}

const CACHE_CONTROL = 'cache_control';
