/**
 * Sanitization of the common chat completion and chunk without zod: text messages and deltas (role,
 * content, refusal), finish reasons and usage. Strict mode sanitizes every response and every
 * streamed event, and zod's parse of a 300-byte chunk allocates about 3 KB where parsing and
 * re-serializing it allocates about 1 KB; this builds the same output object as
 * `ChatCompletionSchema` / `ChatCompletionChunkSchema` (reference fields only, in the schema's
 * order, absent stays absent and null stays null, then `model` rewritten) and returns its JSON, or
 * `undefined` for anything it does not fully understand (tool calls, audio, logprobs, annotations,
 * moderation, metadata, a wrong type anywhere), which the schema then decides.
 * test/strict/plain-chat-response.test.ts checks that both paths give the same bytes on generated
 * bodies.
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

/** A completion's message: `role` is required and must be `assistant`. */
function message(value: unknown): unknown {
  if (!isObject(value) || value.role !== 'assistant') return NO;
  const out: Json = { role: 'assistant' };
  if (!copyNullableString(value, 'content', out)) return NO;
  if (!copyNullableString(value, 'refusal', out)) return NO;
  for (const key of ['annotations', 'audio', 'function_call', 'tool_calls'])
    if (!nullOnly(value, key, out)) return NO;
  return out;
}

interface Shape {
  object: string;
  /** The choice's payload field and its builder. */
  payload: 'delta' | 'message';
  build: (value: unknown) => unknown;
  /** Optional top-level fields after `choices`, in schema order (`usage` is handled last). */
  nullOnly: readonly string[];
  strings: readonly string[];
}

const CHUNK: Shape = {
  object: 'chat.completion.chunk',
  payload: 'delta',
  build: delta,
  nullOnly: ['moderation'],
  strings: ['obfuscation', 'service_tier', 'system_fingerprint'],
};

const COMPLETION: Shape = {
  object: 'chat.completion',
  payload: 'message',
  build: message,
  nullOnly: ['metadata', 'moderation'],
  strings: ['service_tier', 'system_fingerprint'],
};

function choice(value: unknown, shape: Shape): unknown {
  if (!isObject(value) || !Object.hasOwn(value, 'index') || !isFiniteNumber(value.index)) return NO;
  if (!Object.hasOwn(value, shape.payload)) return NO;
  const payload = shape.build(value[shape.payload]);
  if (payload === NO) return NO;
  const out: Json = { index: value.index, [shape.payload]: payload };
  if (!copyNullableString(value, 'finish_reason', out)) return NO;
  if (!nullOnly(value, 'logprobs', out)) return NO;
  return out;
}

/**
 * The sanitized JSON of a plain chat completion (`kind` `chat_completion`) or chunk
 * (`chat_completion_chunk`) with `model` set to `alias`, or undefined (ask the schema).
 */
export function sanitizePlainChat(
  kind: 'chat_completion' | 'chat_completion_chunk',
  body: Json,
  alias: string,
): string | undefined {
  const shape = kind === 'chat_completion_chunk' ? CHUNK : COMPLETION;
  const { id, created, choices } = body;
  if (typeof id !== 'string' || body.object !== shape.object || !isFiniteNumber(created)) return undefined;
  if (!Array.isArray(choices)) return undefined;
  const out: Json = { id, object: shape.object, created };
  if (Object.hasOwn(body, 'model')) {
    if (!isNullableString(body.model)) return undefined;
    out.model = alias;
  }
  const builtChoices: unknown[] = [];
  for (const item of choices as unknown[]) {
    const built = choice(item, shape);
    if (built === NO) return undefined;
    builtChoices.push(built);
  }
  out.choices = builtChoices;
  for (const key of shape.nullOnly) if (!nullOnly(body, key, out)) return undefined;
  for (const key of shape.strings) if (!copyNullableString(body, key, out)) return undefined;
  if (Object.hasOwn(body, 'usage')) {
    const built = usage(body.usage);
    if (built === NO) return undefined;
    out.usage = built;
  }
  // Without a `model` in the body the schema's copy gets it last, as here.
  out.model = alias;
  return JSON.stringify(out);
}
