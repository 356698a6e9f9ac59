/**
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
