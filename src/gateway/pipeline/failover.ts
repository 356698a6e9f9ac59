import type { FallbackPolicy } from '../runtime/table.js';

/**
 * The failover policy (spec 2.5), apart from its mechanism: given what an attempt that produced
 * nothing for the client ended with, whether the next provider is tried. The attempt loop and the
 * response path only report results and act on the answer; this is the one place the rules live.
 */

/** What an attempt ended with before anything reached the client. */
export type AttemptResult =
  /** The provider answered this status (its response's, or that of an error inside a 200). */
  | { readonly kind: 'status'; readonly status: number }
  /** The provider entry's own `rate_limit` or `concurrency_limit` refused the attempt. */
  | { readonly kind: 'local_refusal' }
  /** The first-token deadline expired. */
  | { readonly kind: 'deadline' }
  /** One of the provider's `timeouts` expired before the response was committed. */
  | { readonly kind: 'timeout' }
  /** The provider could not be reached, or broke the response before the commit point. */
  | { readonly kind: 'connection_error' }
  /** The client left: nothing is tried for it. */
  | { readonly kind: 'client_gone' };

/**
 * Whether the next provider is tried after `result`. Never without a `fallback` policy or another
 * attempt left (`attemptsLeft`). A status moves on when `on_status` matches it; a local refusal
 * with `on_rate_limit`; a connection error, and a timeout (the same failure seen from the clock),
 * with `on_connection_error`; an expired first-token deadline always (the deadline exists to move
 * on). A client that left is never failed over.
 */
export function failsOver(
  policy: FallbackPolicy | undefined,
  result: AttemptResult,
  attemptsLeft: boolean,
): boolean {
  if (policy === undefined || !attemptsLeft) return false;
  switch (result.kind) {
    case 'status':
      return policy.onStatus(result.status);
    case 'local_refusal':
      return policy.onRateLimit;
    case 'deadline':
      return true;
    case 'timeout':
    case 'connection_error':
      return policy.onConnectionError;
    case 'client_gone':
      return false;
  }
}
