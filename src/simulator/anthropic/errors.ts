import { event } from './events.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** Anthropic's error object, the body of an error response and the data of an `error` event. */
export function errorJson(type: AnthropicErrorType, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** An error inside a 200 stream: Anthropic's `event: error`. */
export function errorEvent(type: AnthropicErrorType, message: string): string {
  return event('error', errorJson(type, message));
}

/** The error type Anthropic uses for an HTTP status. */
export function errorTypeFor(status: number): AnthropicErrorType {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}
