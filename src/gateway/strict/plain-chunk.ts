/**
 * Sanitization of the common chat completion chunk without zod: text deltas (role, content,
 * refusal), finish reasons and usage. A strict stream sanitizes every event, and zod's parse of a
 * 300-byte chunk allocates about 3 KB where parsing and re-serializing it allocates about 1 KB; this
 * builds the same output object as `ChatCompletionChunkSchema` (reference fields only, in the
 * schema's order, absent stays absent and null stays null, then `model` rewritten) and returns its
 * JSON, or `undefined` for any chunk it does not fully understand (tool calls, audio, logprobs,
 * moderation, a wrong type anywhere), which the schema then decides.
 * test/strict/plain-chunk.test.ts checks that both paths give the same bytes on generated chunks.
 */

type Json = Record<string, unknown>;

const ROLES: ReadonlySet<unknown> = new Set(['developer', 'system', 'user', 'assistant', 'tool']);

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isFiniteNumber = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value);
const isNullableString = (value: unknown): boolean => value === null || typeof value === 'string';

/** Marks a value the fast path cannot take. */
const NO = Symbol('not a plain chunk');

/** An optional nullable field that is only taken when null (its non-null form needs the schema). */
function nullOnly(source: Json, key: string, out: Json): boolean {
  if (!Object.hasOwn(source, key)) return true;
  if (source[key] !== null) return false;
  out[key] = null;
  return true;
}

function copyNullableString(source: Json, key: string, out: Json): boolean {
  if (!Object.hasOwn(source, key)) return true;
  const value = source[key];
  if (!isNullableString(value)) return false;
  out[key] = value;
  return true;
}

const COMPLETION_DETAILS = [
  'accepted_prediction_tokens',
  'audio_tokens',
  'reasoning_tokens',
  'rejected_prediction_tokens',
  'text_tokens',
];
const PROMPT_DETAILS = ['audio_tokens', 'cache_write_tokens', 'cached_tokens', 'image_tokens', 'text_tokens'];

function details(value: unknown, keys: readonly string[]): unknown {
  if (value === null) return null;
  if (!isObject(value)) return NO;
  const out: Json = {};
  for (const key of keys) {
    if (!Object.hasOwn(value, key)) continue;
    const field = value[key];
    if (field !== null && !isFiniteNumber(field)) return NO;
    out[key] = field;
  }
  return out;
}

function usage(value: unknown): unknown {
  if (value === null) return null;
  if (!isObject(value)) return NO;
  const out: Json = {};
  for (const key of ['completion_tokens', 'prompt_tokens', 'total_tokens']) {
    if (!isFiniteNumber(value[key]) || !Object.hasOwn(value, key)) return NO;
    out[key] = value[key];
  }
  for (const [key, keys] of [
    ['completion_tokens_details', COMPLETION_DETAILS],
    ['prompt_tokens_details', PROMPT_DETAILS],
  ] as const) {
    if (!Object.hasOwn(value, key)) continue;
    const built = details(value[key], keys);
    if (built === NO) return NO;
    out[key] = built;
  }
  return out;
}

function delta(value: unknown): unknown {
  if (!isObject(value)) return NO;
  const out: Json = {};
  if (Object.hasOwn(value, 'role')) {
    const role = value.role;
    if (role !== null && !ROLES.has(role)) return NO;
    out.role = role;
  }
  if (!copyNullableString(value, 'content', out)) return NO;
  if (!copyNullableString(value, 'refusal', out)) return NO;
  for (const key of ['audio', 'function_call', 'tool_calls']) if (!nullOnly(value, key, out)) return NO;
  return out;
}

function choice(value: unknown): unknown {
  if (!isObject(value) || !Object.hasOwn(value, 'index') || !isFiniteNumber(value.index)) return NO;
  if (!Object.hasOwn(value, 'delta')) return NO;
  const builtDelta = delta(value.delta);
  if (builtDelta === NO) return NO;
  const out: Json = { index: value.index, delta: builtDelta };
  if (!copyNullableString(value, 'finish_reason', out)) return NO;
  if (!nullOnly(value, 'logprobs', out)) return NO;
  return out;
}

/** The sanitized JSON of a plain chunk with `model` set to `alias`, or undefined (ask the schema). */
export function sanitizePlainChunk(chunk: Json, alias: string): string | undefined {
  const { id, created, choices } = chunk;
  if (typeof id !== 'string' || chunk.object !== 'chat.completion.chunk' || !isFiniteNumber(created))
    return undefined;
  if (!Array.isArray(choices)) return undefined;
  const out: Json = { id, object: 'chat.completion.chunk', created };
  if (Object.hasOwn(chunk, 'model')) {
    if (!isNullableString(chunk.model)) return undefined;
    out.model = alias;
  }
  const builtChoices: unknown[] = [];
  for (const item of choices as unknown[]) {
    const built = choice(item);
    if (built === NO) return undefined;
    builtChoices.push(built);
  }
  out.choices = builtChoices;
  if (!nullOnly(chunk, 'moderation', out)) return undefined;
  for (const key of ['obfuscation', 'service_tier', 'system_fingerprint'])
    if (!copyNullableString(chunk, key, out)) return undefined;
  if (Object.hasOwn(chunk, 'usage')) {
    const built = usage(chunk.usage);
    if (built === NO) return undefined;
    out.usage = built;
  }
  // Without a `model` in the chunk the schema's copy gets it last, as here.
  out.model = alias;
  return JSON.stringify(out);
}
