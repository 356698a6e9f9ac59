/**
 * Errors in the Anthropic Messages API's shape: the JSON body `{type: "error", error: {type,
 * message}}` and the same object as an SSE `error` event, with the error type Anthropic uses for
 * each HTTP status, and the conversion of a chat-completions provider's error body to that shape.
 */

export interface AnthropicErrorBody {
  readonly type: 'error';
  readonly error: { readonly type: string; readonly message: string };
}

const ERROR_TYPES: ReadonlyMap<number, string> = new Map([
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [503, 'overloaded_error'],
  [504, 'timeout_error'],
  [529, 'overloaded_error'],
]);

/** The Anthropic error type of an HTTP status: the table above, else by class (5xx, 4xx). */
export function anthropicErrorType(status: number): string {
  const known = ERROR_TYPES.get(status);
  if (known !== undefined) return known;
  return status >= 500 && status <= 599 ? 'api_error' : 'invalid_request_error';
}

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message } };
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
