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
  const embedded = embeddedError(value);
  if (embedded !== undefined || surface === undefined || surface.failureEventTypes.length === 0)
    return embedded;
  const event = value as { readonly type?: unknown; readonly response?: { readonly error?: unknown } } | null;
  if (typeof event?.type !== 'string' || !surface.failureEventTypes.includes(event.type)) return undefined;
  return event.response?.error ?? event;
}
