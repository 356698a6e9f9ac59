import type { ServerResponse } from 'node:http';

/**
 * How a request ended, named by whose doing it was: the `outcome` label of
 * `gateway_requests_total`, the access log's `outcome` and the server span's `gateway.outcome`.
 * - `completed`: a response below 400 that reached its end (a stream: its `[DONE]` where the
 *   endpoint has one);
 * - `upstream_error`: a provider's error served to the client, as a status or inside a 200 (body or
 *   stream event), or the gateway's 502/503 when no provider could answer;
 * - `upstream_cut`: the provider's body broke after the client's head was sent (reset, unfinished
 *   event, an event stream that ended without its `[DONE]`, an event outgrowing the buffer limit),
 *   whatever the status was;
 * - `client_cancelled`: the client went away before its response ended;
 * - `timeout`: a deadline ended the request (no first token in time);
 * - `rejected`: the gateway refused the request itself (its own 4xx: auth, limits, validation);
 * - `internal_error`: a fault in the gateway itself (its 500).
 */
export type RequestOutcome =
  | 'completed'
  | 'upstream_error'
  | 'upstream_cut'
  | 'client_cancelled'
  | 'timeout'
  | 'rejected'
  | 'internal_error';

export const REQUEST_OUTCOMES: readonly RequestOutcome[] = [
  'completed',
  'upstream_error',
  'upstream_cut',
  'client_cancelled',
  'timeout',
  'rejected',
  'internal_error',
];

/**
 * The request's outcome once its response closed. An ending the gateway recorded while answering
 * (`recorded`: a refusal, a timeout, a cut, an error served) stands; otherwise a response that
 * never reached its end was left by the client, and one that did is judged by its status.
 */
export function finalOutcome(recorded: RequestOutcome | undefined, res: ServerResponse): RequestOutcome {
  if (recorded !== undefined) return recorded;
  if (!res.writableFinished) return 'client_cancelled';
  return res.statusCode >= 400 ? 'upstream_error' : 'completed';
}
