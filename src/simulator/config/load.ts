import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { fsReason } from '../../lib/fs-reason.js';
import type { PrefixCacheConfig } from '../engine/prefix-cache.js';
import type { FaultSpec } from '../faults/modes.js';
import { modelFileSchema, type LatencyConfig } from './schema.js';

/** A validated model, ready to build an engine from. */
export interface ModelConfig {
  name: string;
  outputTokens: number;
  latency: LatencyConfig;
  maxNumSeqs: number;
  maxWaiting: number;
  prefixCache: PrefixCacheConfig;
  fault: FaultSpec | undefined;
  /** The file it came from, or `built-in`. */
  source: string;
}

export type LoadResult = { ok: true; models: ModelConfig[] } | { ok: false; message: string };

export const BUILTIN_MODEL_NAME = 'sim';

/** The model served when no file is given: a small GPU-served model's order of magnitude. */
export function builtinModel(): ModelConfig {
  return toModel(modelFileSchema.parse({ name: BUILTIN_MODEL_NAME }), 'built-in');
}

/**
 * Loads `--model` files and every `*.toml` in `--models` (sorted by name, so the order is stable).
 * With neither, the built-in model. Names must be unique across files.
 */
export function loadModels(files: string[], dir: string | undefined): LoadResult {
  const paths = files.map((file) => resolve(file));
  if (dir !== undefined) {
    let entries: string[];
    try {
      entries = readdirSync(dir).filter((entry) => entry.endsWith('.toml'));
    } catch (err) {
      return { ok: false, message: `${dir}: cannot read the models directory: ${fsReason(err)}` };
    }
    if (entries.length === 0) return { ok: false, message: `${dir}: no .toml model files in the directory` };
    paths.push(...entries.sort().map((entry) => resolve(join(dir, entry))));
  }
  if (paths.length === 0) return { ok: true, models: [builtinModel()] };

  const models: ModelConfig[] = [];
  const seen = new Map<string, string>();
  for (const path of paths) {
    const loaded = loadModelFile(path);
    if (!loaded.ok) return loaded;
    const previous = seen.get(loaded.model.name);
    if (previous !== undefined) {
      return {
        ok: false,
        message: `${path}: model name "${loaded.model.name}" is already defined by ${previous}`,
      };
    }
    seen.set(loaded.model.name, path);
    models.push(loaded.model);
  }
  return { ok: true, models };
}

export function loadModelFile(
  path: string,
): { ok: true; model: ModelConfig } | { ok: false; message: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { ok: false, message: `${path}: cannot read the model file: ${fsReason(err)}` };
  }
  return parseModelToml(text, path);
}

export function parseModelToml(
  text: string,
  path: string,
): { ok: true; model: ModelConfig } | { ok: false; message: string } {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    return { ok: false, message: `${path}: ${tomlErrorText(err)}` };
  }
  const parsed = modelFileSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, message: `${path}: ${describeIssues(parsed.error.issues)}` };
  return { ok: true, model: toModel(parsed.data, path) };
}

/** Names the key of every problem: `unknown key "latency.decode"`, `scheduler.max_num_seqs: ...`. */
function describeIssues(issues: z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const at = issue.path.map(String).join('.');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => `unknown key "${at === '' ? key : `${at}.${key}`}"`).join('; ');
      }
      return `${at === '' ? '(root)' : at}: ${issue.message}`;
    })
    .join('; ');
}

function toModel(file: ReturnType<typeof modelFileSchema.parse>, source: string): ModelConfig {
  return {
    name: file.name,
    outputTokens: file.output_tokens,
    latency: file.latency,
    maxNumSeqs: file.scheduler.max_num_seqs,
    maxWaiting: file.scheduler.max_waiting,
    prefixCache: {
      blockTokens: file.prefix_cache.block_tokens,
      capacityTokens: file.prefix_cache.capacity_tokens,
    },
    fault: file.fault && {
      mode: file.fault.mode,
      afterChunks: file.fault.after_chunks,
      delayMs: file.fault.delay_ms,
      utf8: file.fault.utf8,
    },
    source,
  };
}

/**
 * The parser's complaint with its position: its message's first line (the rest is a code excerpt
 * that a one-line startup error cannot carry) without the parser's own prefix.
 */
function tomlErrorText(err: unknown): string {
  if (!(err instanceof TomlError)) return `invalid TOML: ${err instanceof Error ? err.message : String(err)}`;
  const reason = err.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
  return `invalid TOML at line ${err.line}, column ${err.column}: ${reason}`;
}
