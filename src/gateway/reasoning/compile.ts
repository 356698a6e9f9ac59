import {
  EFFORTS,
  REASONING_SURFACES,
  type Effort,
  type ReasoningSurface,
  type ReasoningSurfaceName,
  type ReasoningTranslation,
} from '../config/schema/index.js';
import { parseTargetPath } from './pointer.js';

/**
 * A provider's `reasoning_translation` compiled once per configuration load into what the request
 * path looks up: effort -> the writes to apply, the refused efforts, and the token budget an effort
 * emits. Immutable; shared by every request that runs on the same runtime table.
 */

export type WriteValue = string | number | boolean;

export interface CompiledWrite {
  /** The configured `target_path`, kept for messages and tests. */
  readonly path: string;
  /** Decoded JSON Pointer segments. */
  readonly segments: readonly string[];
  readonly value: WriteValue;
}

export interface CompiledSurface {
  /** Mapped efforts -> their writes, in configuration order. */
  readonly writes: ReadonlyMap<Effort, readonly CompiledWrite[]>;
  readonly unsupported: ReadonlySet<Effort>;
  /**
   * Mapped efforts whose writes emit a number -> the largest such number. Spec 2.6 rule 5: a
   * numeric write value is a token budget, and the request's output limit must be above it.
   */
  readonly budgets: ReadonlyMap<Effort, number>;
}

/** Per surface; a surface that is not configured is absent and forwards the effort unchanged. */
export type CompiledReasoning = Readonly<Partial<Record<ReasoningSurfaceName, CompiledSurface>>>;

export function compileReasoningTranslation(
  translation: ReasoningTranslation | undefined,
): CompiledReasoning | undefined {
  if (translation === undefined) return undefined;
  const compiled: Partial<Record<ReasoningSurfaceName, CompiledSurface>> = {};
  for (const name of REASONING_SURFACES) {
    const surface = translation[name];
    if (surface !== undefined) compiled[name] = compileSurface(surface);
  }
  return Object.freeze(compiled);
}

export function compileSurface(surface: ReasoningSurface): CompiledSurface {
  const writes = new Map<Effort, CompiledWrite[]>();
  const budgets = new Map<Effort, number>();
  for (const write of surface.writes) {
    const segments = parseTargetPath(write.target_path);
    // Iterate the seven efforts rather than the record's keys: the order is then fixed and a key
    // outside the effort set (impossible after validation) cannot leak in.
    for (const effort of EFFORTS) {
      const value = write.values[effort];
      if (value === undefined) continue;
      let list = writes.get(effort);
      if (list === undefined) writes.set(effort, (list = []));
      list.push(Object.freeze({ path: write.target_path, segments, value }));
      if (typeof value === 'number') budgets.set(effort, Math.max(value, budgets.get(effort) ?? -Infinity));
    }
  }
  for (const list of writes.values()) Object.freeze(list);
  return Object.freeze({ writes, unsupported: new Set(surface.unsupported_efforts), budgets });
}
