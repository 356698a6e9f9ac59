/**
 * Token usage as providers report it, read from the text of a response without parsing the whole
 * of it: the last `"usage": {...}` object in the text is cut out and parsed alone. Chat and text
 * completions and embeddings count `prompt_tokens` / `completion_tokens` (details:
 * `completion_tokens_details.reasoning_tokens`, `prompt_tokens_details.cached_tokens`); the
 * Responses API counts `input_tokens` / `output_tokens` (`output_tokens_details.reasoning_tokens`,
 * `input_tokens_details.cached_tokens`). Reasoning tokens are part of the completion tokens and
 * cached tokens part of the prompt tokens, as the providers count them.
 */
export interface TokenUsage {
  readonly prompt: number;
  readonly completion: number;
  readonly reasoning: number;
  readonly cachedPrompt: number;
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

/** The usage in a body's bytes: only the text from the last `"usage"` on is decoded. */
export function usageFromBytes(bytes: Buffer): TokenUsage | undefined {
  let at = bytes.lastIndexOf(USAGE_KEY_BYTES);
  for (let tries = 0; at >= 0 && tries < MAX_TRIES; tries++) {
    const text = bytes.toString('utf8', at, Math.min(bytes.length, at + MAX_USAGE_CHARS));
    const usage = usageOf(objectAfterKey(text, USAGE_KEY.length));
    if (usage !== undefined) return usage;
    at = at === 0 ? -1 : bytes.lastIndexOf(USAGE_KEY_BYTES, at - 1);
  }
  return undefined;
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
  return {
    prompt,
    completion: count(usage.completion_tokens) ?? count(usage.output_tokens) ?? 0,
    reasoning: count(completionDetails?.reasoning_tokens) ?? 0,
    cachedPrompt: count(promptDetails?.cached_tokens) ?? 0,
  };
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
