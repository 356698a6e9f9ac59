/**
 * The `target_path` of a reasoning write (spec 2.6): a JSON Pointer of one or more non-empty
 * segments, validated by the config schema. Writes are applied copy-on-write: the request body a
 * pool shares between attempts is never mutated, and only the objects on the written path are
 * copied, so each attempt pays for the path it touches and not for the whole body.
 */

export type JsonObject = Record<string, unknown>;

/** Segments that would reach an object prototype through plain assignment. */
const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * `/chat_template_kwargs/enable_thinking` -> `['chat_template_kwargs', 'enable_thinking']`, with the
 * RFC 6901 escapes decoded (`~1` before `~0`, so `~01` stays `~1`). The schema already refuses
 * malformed paths and prototype segments; this repeats the check because a write that reached
 * `__proto__` would corrupt the body object rather than fail, and config objects can be built by
 * code as well as by the loader.
 */
export function parseTargetPath(path: string): readonly string[] {
  if (!path.startsWith('/') || path.length < 2) {
    throw new Error(`reasoning target_path \`${path}\` is not a JSON Pointer of the form \`/name\``);
  }
  const segments = path
    .slice(1)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  for (const segment of segments) {
    if (segment.length === 0 || FORBIDDEN_SEGMENTS.has(segment)) {
      throw new Error(`reasoning target_path \`${path}\` has an empty or forbidden segment`);
    }
  }
  return segments;
}

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A body being rewritten for one attempt: the root is copied on the first change, and every object
 * on a written path is copied once, so several writes under the same parent share one copy.
 */
export class CopyOnWriteBody {
  private root: JsonObject;
  private readonly owned = new Set<JsonObject>();

  constructor(source: JsonObject) {
    this.root = source;
  }

  /** The rewritten body, or the source object itself when nothing was changed. */
  get value(): JsonObject {
    return this.root;
  }

  /**
   * Sets `value` at `segments`. A missing intermediate is created as an object; an intermediate
   * that is not an object (a string, an array, null) is replaced by one, as the schema documents
   * ("an existing value is replaced").
   */
  set(segments: readonly string[], value: unknown): void {
    let cursor = this.ownRoot();
    const last = segments.length - 1;
    for (let i = 0; i < last; i += 1) {
      const key = segments[i]!;
      const existing = cursor[key];
      const next = isPlainObject(existing) ? this.own(existing) : this.adopt({});
      cursor[key] = next;
      cursor = next;
    }
    cursor[segments[last]!] = value;
  }

  /**
   * Removes the value at `segments` when present. A parent object left empty by the removal is
   * removed too (an empty `reasoning: {}` would still tell some upstreams to reason).
   */
  remove(segments: readonly string[]): void {
    if (!this.has(segments)) return;
    const parents: JsonObject[] = [this.ownRoot()];
    for (let i = 0; i < segments.length - 1; i += 1) {
      const parent = parents[i]!;
      const child = this.own(parent[segments[i]!] as JsonObject);
      parent[segments[i]!] = child;
      parents.push(child);
    }
    for (let i = segments.length - 1; i >= 0; i -= 1) {
      const parent = parents[i]!;
      delete parent[segments[i]!];
      if (i === 0 || Object.keys(parent).length > 0) break;
    }
  }

  private has(segments: readonly string[]): boolean {
    let cursor: unknown = this.root;
    for (const key of segments) {
      if (!isPlainObject(cursor) || !Object.hasOwn(cursor, key)) return false;
      cursor = cursor[key];
    }
    return true;
  }

  private ownRoot(): JsonObject {
    this.root = this.own(this.root);
    return this.root;
  }

  private own(object: JsonObject): JsonObject {
    return this.owned.has(object) ? object : this.adopt({ ...object });
  }

  private adopt(object: JsonObject): JsonObject {
    this.owned.add(object);
    return object;
  }
}
