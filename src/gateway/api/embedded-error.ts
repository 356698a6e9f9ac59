import { anthropicErrorStatus } from './anthropic-error-status.js';
import type { ApiSurface } from './surfaces.js';

/**
 * What counts as an error in a 200 answer, defined here once for every stage and both modes.
 *
 * "An error inside a 200": the one rule, for every endpoint and both modes. A provider that answers
 * 200 may still report a failure in the body (a JSON body, or one SSE data event): the pool fails
 * over on it like on the status it stands for, and strict mode answers it as that error.
 *
 * - An `error` that is neither absent nor null makes the value an error, whatever else it carries
 *   ("with or without completion fields", specification §6). That covers a failed Responses
 *   object too (`"status": "failed"` with its `error` set): the generation did not happen, so it is
 *   not a success to serve while another provider may answer.
 * - An object whose `object` is `"error"` (vLLM's `ErrorResponse`: `message`, `type`, `param`,
 *   `code` at the top level, which the engine also writes into a 200 stream when a request fails
 *   after partial output) is its own error value, so its `code` is read and masked like any
 *   embedded code and a trusted provider's is forwarded as sent.
 */
export function embeddedError(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as { readonly error?: unknown; readonly object?: unknown };
  if (record.error !== undefined && record.error !== null) return record.error;
  return record.object === 'error' ? value : undefined;
}

/**
 * The error an event of a stream on `surface` carries, or undefined: an error inside a 200 (above),
 * or one of the surface's own failure events (the Responses API's `error` and `response.failed`),
 * whose error is the event itself or its response's `error`.
 */
export function eventError(surface: ApiSurface | undefined, value: unknown): unknown {
  if (surface?.errorShape === 'anthropic') return anthropicError(surface, value);
  const embedded = embeddedError(value);
  if (embedded !== undefined || surface === undefined || surface.failureEventTypes.length === 0)
    return embedded;
  const event = value as { readonly type?: unknown; readonly response?: { readonly error?: unknown } } | null;
  if (typeof event?.type !== 'string' || !surface.failureEventTypes.includes(event.type)) return undefined;
  return event.response?.error ?? event;
}

/**
 * The error of an Anthropic event or body (`{"type": "error", "error": {"type", "message"}}`), with
 * the status its type stands for as its `code` (the one field every reader of an embedded error
 * reads), or undefined for anything else.
 */
function anthropicError(surface: ApiSurface, value: unknown): unknown {
  const event = value as { readonly type?: unknown; readonly error?: unknown } | null;
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return undefined;
  if (!surface.failureEventTypes.includes(event.type)) return undefined;
  const error = typeof event.error === 'object' && event.error !== null ? event.error : {};
  return { ...error, code: anthropicErrorStatus((error as { readonly type?: unknown }).type) };
}

const RATE_LIMIT_NAMES: ReadonlySet<string> = new Set([
  'rate_limit',
  'rate_limit_error',
  'rate_limit_exceeded',
]);
const NUMERIC = /^\s*\d+\s*$/;

/**
 * The status an embedded `error.code` stands for (spec 7.2), before masking: a number or a numeric
 * string is the status itself; the rate-limit names are 429; any other name is 500. A number that
 * is not an error status (outside 400-599, or not an integer) and a missing code are 500: the
 * upstream reported an error without a usable status, which is a server-side failure.
 */
export function embeddedErrorStatus(code: unknown): number {
  let status: number | undefined;
  if (typeof code === 'number') status = code;
  else if (typeof code === 'string') {
    if (NUMERIC.test(code)) status = Number(code);
    else return RATE_LIMIT_NAMES.has(code.trim().toLowerCase()) ? 429 : 500;
  }
  if (status === undefined || !Number.isInteger(status) || status < 400 || status > 599) return 500;
  return status;
}

/** The `code` of an embedded `error` value, which providers send as an object (or, rarely, a string). */
function embeddedCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && !Array.isArray(error)
    ? (error as { code?: unknown }).code
    : undefined;
}

/** The status an embedded `error` value stands for, unmasked (trusted providers, standalone). */
export function embeddedStatus(error: unknown): number {
  return embeddedErrorStatus(embeddedCode(error));
}
