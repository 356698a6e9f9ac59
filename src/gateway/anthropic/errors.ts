import { anthropicErrorType } from '../api/anthropic-error-status.js';
import { maskUpstreamStatus } from '../strict/errors.js';

/**
 * Errors in the Anthropic Messages API's shape: the JSON body `{type: "error", error: {type,
 * message}}` and the same object as an SSE `error` event, with the error type Anthropic uses for
 * each HTTP status, and the conversion of a chat-completions provider's error body to that shape.
 */

export interface AnthropicErrorBody {
  readonly type: 'error';
  readonly error: { readonly type: string; readonly message: string };
}

export { anthropicErrorType };

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message } };
}

/**
 * Strict mode's words for an untrusted provider's error (its own are never forwarded): the masked
 * status (spec 4.5) and a message that says only which side failed.
 */
export function maskedAnthropicError(status: number): AnthropicErrorBody {
  const masked = maskUpstreamStatus(status);
  return anthropicErrorBody(
    masked,
    masked >= 500 ? 'The upstream provider failed.' : 'The upstream provider rejected the request.',
  );
}

/** The SSE event a Messages stream ends with when it fails. */
export function anthropicErrorEvent(status: number, message: string): string {
  return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(status, message))}\n\n`;
}

/**
 * A chat-completions provider's error body in Anthropic's shape. The message is the provider's
 * (`error.message`, a bare string `error`, or vLLM's top-level `message`); the type follows the
 * status, since OpenAI's type names (`invalid_request_error`, `server_error`, ...) are not
 * Anthropic's. A body without any message gets one that names the status.
 */
export function fromOpenAiError(status: number, body: unknown): AnthropicErrorBody {
  return anthropicErrorBody(
    status,
    openAiErrorMessage(body) ?? `the provider answered with status ${status}`,
  );
}

/** The message of an OpenAI-shaped error value (`{error: {...}}`, vLLM's `{object: "error"}`). */
export function openAiErrorMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const record = body as { readonly error?: unknown; readonly message?: unknown };
  const error = record.error;
  if (typeof error === 'string' && error.length > 0) return error;
  if (typeof error === 'object' && error !== null && !Array.isArray(error)) {
    const message = (error as { readonly message?: unknown }).message;
    if (typeof message === 'string' && message.length > 0) return message;
  }
  if (typeof record.message === 'string' && record.message.length > 0) return record.message;
  return undefined;
}
