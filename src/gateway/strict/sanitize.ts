import type { z } from 'zod';
import { embeddedError } from '../api/embedded-error.js';
import { sanitizePlainChat } from './plain-chat-response.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  EmbeddingsResponseSchema,
  ResponseObjectSchema,
} from './response-schemas.js';

/**
 * Response sanitization (spec 4.5, 4.6): deserialize against the reference response schema (unknown
 * fields dropped at every depth), write the requested alias into `model`, re-serialize. A body that
 * carries an `error` instead of (or beside) a result is reported as such, so the caller can answer
 * it as an error; a body that does not deserialize is reported as invalid, so the caller can answer
 * a standard error. The raw body is never part of a result.
 */

export type SanitizeKind = 'chat_completion' | 'chat_completion_chunk' | 'embeddings' | 'responses';

export type SanitizeResult =
  /** The sanitized JSON text (no trailing newline). */
  | { readonly kind: 'ok'; readonly json: string }
  /** The body carries `error`: its value, for error handling and logging; never forward it raw. */
  | { readonly kind: 'embedded_error'; readonly error: unknown }
  /** Not JSON, or not the reference object. */
  | { readonly kind: 'invalid' };

const SCHEMAS: { readonly [K in SanitizeKind]: z.ZodType<Record<string, unknown>> } = {
  chat_completion: ChatCompletionSchema,
  chat_completion_chunk: ChatCompletionChunkSchema,
  embeddings: EmbeddingsResponseSchema,
  responses: ResponseObjectSchema,
};

const INVALID: SanitizeResult = Object.freeze({ kind: 'invalid' as const });

/** Sanitizes JSON text. */
export function sanitizeJson(kind: SanitizeKind, text: string, alias: string): SanitizeResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return INVALID;
  }
  return sanitizeValue(kind, value, alias);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Sanitizes a whole response body; bytes that are not UTF-8 are invalid, not repaired. */
export function sanitizeBody(kind: SanitizeKind, body: Uint8Array, alias: string): SanitizeResult {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return INVALID;
  }
  return sanitizeJson(kind, text, alias);
}

/** Sanitizes an already parsed value (the SSE path parses once and inspects before this). */
export function sanitizeValue(kind: SanitizeKind, value: unknown, alias: string): SanitizeResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return INVALID;
  const record = value as Record<string, unknown>;
  const error = embeddedError(record);
  if (error !== undefined) return { kind: 'embedded_error', error };
  if (kind === 'chat_completion' || kind === 'chat_completion_chunk') {
    const json = sanitizePlainChat(kind, record, alias);
    if (json !== undefined) return { kind: 'ok', json };
  }
  const parsed = SCHEMAS[kind].safeParse(record);
  if (!parsed.success) return INVALID;
  // The parsed object is zod's fresh copy, so writing into it cannot alias the caller's value.
  const out = parsed.data;
  out.model = alias;
  return { kind: 'ok', json: JSON.stringify(out) };
}
