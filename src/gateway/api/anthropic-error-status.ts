/**
 * The HTTP status an Anthropic error `type` stands for (the statuses Anthropic's API answers with
 * each), so an error event inside a 200 stream is judged like that status: failed over on it, counted
 * as it. An unknown type is a 500: the provider failed without saying how.
 */
const STATUS_OF_TYPE: ReadonlyMap<string, number> = new Map([
  ['invalid_request_error', 400],
  ['authentication_error', 401],
  ['billing_error', 402],
  ['permission_error', 403],
  ['not_found_error', 404],
  ['request_too_large', 413],
  ['rate_limit_error', 429],
  ['api_error', 500],
  ['timeout_error', 504],
  ['overloaded_error', 529],
]);

export function anthropicErrorStatus(type: unknown): number {
  return (typeof type === 'string' ? STATUS_OF_TYPE.get(type) : undefined) ?? 500;
}
