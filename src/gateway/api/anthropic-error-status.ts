/**
 * Anthropic's error types and the HTTP statuses its API answers them with, both ways: the type of
 * an error the gateway words in Anthropic's shape, and the status an error event inside a 200
 * stands for (failed over on it, counted as it).
 */
const ERROR_TYPES: readonly (readonly [status: number, type: string])[] = [
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [500, 'api_error'],
  [503, 'overloaded_error'],
  [504, 'timeout_error'],
  // Last of its type: the status an `overloaded_error` stands for is Anthropic's own 529.
  [529, 'overloaded_error'],
];

const TYPE_OF_STATUS: ReadonlyMap<number, string> = new Map(ERROR_TYPES);
const STATUS_OF_TYPE: ReadonlyMap<string, number> = new Map(
  ERROR_TYPES.map(([status, type]) => [type, status]),
);

/** The Anthropic error type of an HTTP status: the table above, else by class (5xx, 4xx). */
export function anthropicErrorType(status: number): string {
  const known = TYPE_OF_STATUS.get(status);
  if (known !== undefined) return known;
  return status >= 500 && status <= 599 ? 'api_error' : 'invalid_request_error';
}

/** The status an Anthropic error `type` stands for; an unknown type is a 500 (a failure unexplained). */
export function anthropicErrorStatus(type: unknown): number {
  return (typeof type === 'string' ? STATUS_OF_TYPE.get(type) : undefined) ?? 500;
}
