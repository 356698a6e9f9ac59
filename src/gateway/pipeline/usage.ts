/**
 * Token usage as providers report it, read from the text of a response without parsing the whole
 * of it: the last `"usage": {...}` object in the text is cut out and parsed alone (in a body's
 * bytes, read in place when it holds only counts: this runs once per request). Chat and text
 * completions and embeddings count `prompt_tokens` / `completion_tokens` (details:
 * `completion_tokens_details.reasoning_tokens`, `prompt_tokens_details.cached_tokens`); the
 * Responses API counts `input_tokens` / `output_tokens` (`output_tokens_details.reasoning_tokens`,
 * `input_tokens_details.cached_tokens`); Anthropic's Messages API counts `input_tokens` apart from
 * `cache_read_input_tokens` and `cache_creation_input_tokens`, which are added to the prompt here.
 * Reasoning tokens are part of the completion tokens and cached tokens part of the prompt tokens.
 */
export interface TokenUsage {
  readonly prompt: number;
  readonly completion: number;
  readonly reasoning: number;
  readonly cachedPrompt: number;
  /** Prompt tokens written to the provider's prompt cache (Anthropic's `cache_creation_input_tokens`). */
  readonly cacheWrite: number;
}

const USAGE_KEY = '"usage"';
/** Occurrences of the key tried from the end (a stream's earlier chunks may carry `"usage": null`). */
const MAX_TRIES = 4;
/** A usage object longer than this is not one (the scan stops rather than walk a whole body). */
const MAX_USAGE_CHARS = 4_096;

/** The usage in `text` (the last non-null `"usage"` object), or undefined when it has none. */
export function usageFromText(text: string): TokenUsage | undefined {
  let at = text.lastIndexOf(USAGE_KEY);
  for (let tries = 0; at >= 0 && tries < MAX_TRIES; tries++) {
    const object = objectAfterKey(text, at + USAGE_KEY.length);
    if (object !== undefined) {
      const usage = usageOf(object);
      if (usage !== undefined) return usage;
    }
    at = at === 0 ? -1 : text.lastIndexOf(USAGE_KEY, at - 1);
  }
  return undefined;
}

const USAGE_KEY_BYTES = Buffer.from(USAGE_KEY);

/** The usage in a body's bytes: only the text from the last `"usage"` on is decoded, if any. */
export function usageFromBytes(bytes: Buffer): TokenUsage | undefined {
  let at = bytes.lastIndexOf(USAGE_KEY_BYTES);
  for (let tries = 0; at >= 0 && tries < MAX_TRIES; tries++) {
    let object: unknown = countsAfterKey(bytes, at + USAGE_KEY.length);
    if (object === NOT_COUNTS) {
      const text = bytes.toString('utf8', at, Math.min(bytes.length, at + MAX_USAGE_CHARS));
      object = objectAfterKey(text, USAGE_KEY.length);
    }
    const usage = usageOf(object);
    if (usage !== undefined) return usage;
    at = at === 0 ? -1 : bytes.lastIndexOf(USAGE_KEY_BYTES, at - 1);
  }
  return undefined;
}

/** `countsAfterKey` met something other than counts: the text is parsed instead. */
const NOT_COUNTS = Symbol('not counts');
/** Longer usage objects are read by the text path (well within its MAX_USAGE_CHARS). */
const MAX_COUNTS_BYTES = 1_024;

/**
 * The common usage object, read from the bytes without decoding or parsing them: members whose
 * values are integers, null, or objects of such members (the details), with any whitespace. Only the
 * members `usageOf` reads are kept, with the values JSON.parse would give them; anything else
 * (a string, a fraction, an exponent, a sign, a leading zero, a long number, a deeper object, a key
 * with an escape) is NOT_COUNTS, and JSON.parse decides.
 */
function countsAfterKey(
  bytes: Buffer,
  from: number,
): Record<string, unknown> | undefined | typeof NOT_COUNTS {
  let i = skipSpaceBytes(bytes, from);
  if (bytes[i] !== 0x3a /* : */) return undefined;
  i = skipSpaceBytes(bytes, i + 1);
  if (bytes[i] !== 0x7b /* { */) return undefined;
  const usage: Record<string, unknown> = {};
  let details: Record<string, unknown> | undefined;
  let depth = 1;
  i = skipSpaceBytes(bytes, i + 1);
  if (bytes[i] === 0x7d /* } */) return usage;
  for (;;) {
    // A member: "key" : value
    if (bytes[i] !== 0x22 /* " */) return NOT_COUNTS;
    const keyStart = i + 1;
    i = keyStart;
    while (isKeyByte(bytes[i])) i++;
    if (bytes[i] !== 0x22 || i === keyStart) return NOT_COUNTS;
    const key = memberAt(bytes, keyStart, i);
    i = skipSpaceBytes(bytes, i + 1);
    if (bytes[i] !== 0x3a) return NOT_COUNTS;
    i = skipSpaceBytes(bytes, i + 1);
    const c = bytes[i];
    let value: unknown;
    if (c === 0x7b && depth === 1) {
      details = {};
      if (key !== undefined && USAGE_MEMBERS.has(key)) usage[key] = details;
      depth = 2;
      i = skipSpaceBytes(bytes, i + 1);
      if (bytes[i] !== 0x7d) continue;
      value = details;
    } else if (c === 0x6e /* n */) {
      if (bytes[i + 1] !== 0x75 || bytes[i + 2] !== 0x6c || bytes[i + 3] !== 0x6c) return NOT_COUNTS;
      i += 4;
      value = null;
    } else if (c !== undefined && c >= 0x30 && c <= 0x39) {
      const start = i;
      let n = 0;
      while (bytes[i]! >= 0x30 && bytes[i]! <= 0x39) n = n * 10 + bytes[i++]! - 0x30;
      const next = bytes[i];
      // JSON has no leading zeros; fractions, exponents and long numbers are left to JSON.parse.
      if ((c === 0x30 && i - start > 1) || i - start > 15 || next === 0x2e || next === 0x65 || next === 0x45)
        return NOT_COUNTS;
      value = n;
    } else {
      return NOT_COUNTS;
    }
    if (value !== details && key !== undefined) {
      if (depth === 1) {
        if (USAGE_MEMBERS.has(key)) usage[key] = value;
      } else if (DETAIL_MEMBERS.has(key)) {
        details![key] = value;
      }
    }
    // After a value: more members, or the end of the details object, then of the usage object.
    for (;;) {
      i = skipSpaceBytes(bytes, i);
      if (bytes[i] === 0x2c /* , */) {
        i = skipSpaceBytes(bytes, i + 1);
        break;
      }
      if (bytes[i] !== 0x7d) return NOT_COUNTS;
      i++;
      // A long object is left to the text path, which bounds how far it reads.
      if (depth === 1) return i - from > MAX_COUNTS_BYTES ? NOT_COUNTS : usage;
      depth = 1;
    }
  }
}

/** The members of a usage object and of its details objects that `usageOf` reads. */
const USAGE_MEMBERS: ReadonlySet<string> = new Set([
  'prompt_tokens',
  'input_tokens',
  'completion_tokens',
  'output_tokens',
  'completion_tokens_details',
  'output_tokens_details',
  'prompt_tokens_details',
  'input_tokens_details',
  'cache_read_input_tokens',
  'cache_creation_input_tokens',
]);
const DETAIL_MEMBERS: ReadonlySet<string> = new Set(['reasoning_tokens', 'cached_tokens']);

/** The members `usageOf` reads, by their name's length and first byte (no two share both). */
const MEMBER_BY_SHAPE = new Map<number, { readonly name: string; readonly bytes: Buffer }>(
  [...USAGE_MEMBERS, ...DETAIL_MEMBERS].map((name) => [
    name.length * 256 + name.charCodeAt(0),
    { name, bytes: Buffer.from(name) },
  ]),
);

/** The member named by `bytes[start, end)`, as the interned name, or undefined for any other key. */
function memberAt(bytes: Buffer, start: number, end: number): string | undefined {
  const member = MEMBER_BY_SHAPE.get((end - start) * 256 + bytes[start]!);
  if (member === undefined) return undefined;
  const name = member.bytes;
  for (let k = 1; k < name.length; k++) if (bytes[start + k] !== name[k]) return undefined;
  return member.name;
}

/** A byte of the keys read in place: lower-case letters, digits and `_` (others go to JSON.parse). */
function isKeyByte(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f);
}

function skipSpaceBytes(bytes: Buffer, from: number): number {
  let i = from;
  for (;;) {
    const c = bytes[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The usage of a parsed usage object, or undefined when it counts no prompt tokens. */
export function usageOf(value: unknown): TokenUsage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const usage = value as Record<string, unknown>;
  const prompt = count(usage.prompt_tokens) ?? count(usage.input_tokens);
  if (prompt === undefined) return undefined;
  const completionDetails = (usage.completion_tokens_details ?? usage.output_tokens_details) as
    Record<string, unknown> | null | undefined;
  const promptDetails = (usage.prompt_tokens_details ?? usage.input_tokens_details) as
    Record<string, unknown> | null | undefined;
  // Anthropic counts cache reads and writes beside `input_tokens`, not within them.
  const cacheRead = count(usage.cache_read_input_tokens) ?? 0;
  const cacheWrite = count(usage.cache_creation_input_tokens) ?? 0;
  return {
    prompt: prompt + cacheRead + cacheWrite,
    completion: count(usage.completion_tokens) ?? count(usage.output_tokens) ?? 0,
    reasoning: count(completionDetails?.reasoning_tokens) ?? 0,
    cachedPrompt: (count(promptDetails?.cached_tokens) ?? 0) + cacheRead,
    cacheWrite,
  };
}

/**
 * A Messages stream's usage: `message_start` (in `startText`, the chunk that carried it) counts the
 * prompt, the last `message_delta` (the last usage in `tailText`, the stream's end) the output and,
 * from newer providers, the prompt again: counts the delta repeats win.
 */
export function messagesStreamUsage(startText: string | undefined, tailText: string): TokenUsage | undefined {
  const startAt = startText?.indexOf(USAGE_KEY, Math.max(0, startText.indexOf('"message_start"'))) ?? -1;
  const start = startAt < 0 ? undefined : objectAfterKey(startText!, startAt + USAGE_KEY.length);
  const deltaAt = tailText.lastIndexOf(USAGE_KEY);
  const delta = deltaAt < 0 ? undefined : objectAfterKey(tailText, deltaAt + USAGE_KEY.length);
  if (typeof start !== 'object' || start === null) return usageOf(delta);
  if (typeof delta !== 'object' || delta === null) return usageOf(start);
  return usageOf({ ...start, ...delta });
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The JSON object that follows `"key"` at `from` (after `:` and spaces), parsed; else undefined. */
function objectAfterKey(text: string, from: number): unknown {
  let i = skipSpaces(text, from);
  if (text.charCodeAt(i) !== 0x3a /* : */) return undefined;
  i = skipSpaces(text, i + 1);
  if (text.charCodeAt(i) !== 0x7b /* { */) return undefined;
  const end = objectEnd(text, i);
  if (end < 0) return undefined;
  try {
    return JSON.parse(text.slice(i, end));
  } catch {
    return undefined;
  }
}

function skipSpaces(text: string, from: number): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The index just past the object opening at `start` (strings and escapes respected), or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  const limit = Math.min(text.length, start + MAX_USAGE_CHARS);
  for (let i = start; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b) {
      depth++;
    } else if (c === 0x7d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
