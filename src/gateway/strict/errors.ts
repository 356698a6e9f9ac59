import { errorBody, type ErrorBody } from '../../lib/errors.js';
import { formatDataEvent } from '../../lib/sse.js';
import { embeddedStatus } from '../api/embedded-error.js';

/**
 * Error standardization (spec 7.2), account-class masking, embedded error codes (spec 6, 7.2) and
 * the replacement bodies of standalone sanitization (4.6). Pure functions; the caller logs the
 * upstream's own error details (never its body) and writes what these return.
 *
 * Standardized bodies carry `param: null` and `code: null`: the HTTP status is the classification,
 * and the upstream's param and code are details strict mode does not forward. The stand-alone SSE
 * error event is the exception: its `code` is the (masked) status as a number, because inside a 200
 * stream it is the only place the status can travel (spec 6).
 */

export interface StatusDescription {
  readonly type: string;
  readonly message: string;
}

/** Spec 7.2, row for row. */
export const STRICT_STATUS_TABLE: ReadonlyMap<number, StatusDescription> = new Map([
  [400, { type: 'invalid_request_error', message: 'Invalid request' }],
  [401, { type: 'authentication_error', message: 'Authentication failed' }],
  [403, { type: 'permission_error', message: 'Permission denied' }],
  [404, { type: 'not_found_error', message: 'Not found' }],
  [429, { type: 'rate_limit_error', message: 'Rate limit exceeded' }],
  [500, { type: 'api_error', message: 'Internal server error' }],
  [502, { type: 'api_error', message: 'Bad gateway' }],
  [503, { type: 'api_error', message: 'Service unavailable' }],
]);

/**
 * Statuses outside the spec's table. 4xx keep the client-error type with a generic message (a
 * specific one only where the status says something the client can act on); 504 and 529 keep the
 * meaning a retrying client or dispatcher relies on (timeout; overload, with the `overloaded_error`
 * type the gateway's own 529 uses, spec 7.1); any other status is an internal error.
 */
const EXTRA_STATUS_TABLE: ReadonlyMap<number, StatusDescription> = new Map([
  [408, { type: 'invalid_request_error', message: 'Request timeout' }],
  [413, { type: 'invalid_request_error', message: 'Request too large' }],
  [504, { type: 'api_error', message: 'Gateway timeout' }],
  [529, { type: 'overloaded_error', message: 'Overloaded' }],
]);
const GENERIC_CLIENT_ERROR: StatusDescription = { type: 'invalid_request_error', message: 'Invalid request' };
const GENERIC_SERVER_ERROR: StatusDescription = STRICT_STATUS_TABLE.get(500)!;

/** The standard `type` and message for a status (after masking, when masking applies). */
export function describeStatus(status: number): StatusDescription {
  const known = STRICT_STATUS_TABLE.get(status) ?? EXTRA_STATUS_TABLE.get(status);
  if (known !== undefined) return known;
  return status >= 400 && status < 500 ? GENERIC_CLIENT_ERROR : GENERIC_SERVER_ERROR;
}

/** The standard error body for a status: table type and message, `param` and `code` null. */
export function standardErrorBody(status: number): ErrorBody {
  const { type, message } = describeStatus(status);
  return errorBody(message, type);
}

const MASKED_TO_BAD_GATEWAY: ReadonlySet<number> = new Set([401, 402, 403, 451]);
const CLIENT_STATUSES_KEPT: ReadonlySet<number> = new Set([400, 404, 413, 422, 429]);

/**
 * Account-class masking for untrusted upstreams (spec 7.2), applied before the status table.
 * Rows of the spec: 401/402/403/451 -> 502, 408 -> 504, 400/404/413/422/429 unchanged.
 * Beyond the spec: every other 4xx -> 502, because it describes the gateway's exchange with its
 * upstream (a method, media type or retired model the client did not choose), not the client's
 * request, and surfacing it would both leak upstream configuration and invite the client to "fix"
 * a request that is fine; 5xx unchanged (already server-side, and 503/529 must stay distinct for
 * retrying clients and dispatchers); anything else that is not a success (1xx, 3xx, beyond 599)
 * -> 502, an answer the gateway cannot relay.
 */
export function maskUpstreamStatus(status: number): number {
  if (CLIENT_STATUSES_KEPT.has(status)) return status;
  if (MASKED_TO_BAD_GATEWAY.has(status)) return 502;
  if (status === 408) return 504;
  if (status >= 500 && status <= 599) return status;
  return 502;
}

export type UpstreamErrorOutcome =
  /** Trusted provider: forward the upstream's status, headers and body bytes unchanged (4.5). */
  | { readonly kind: 'passthrough'; readonly status: number }
  /** Untrusted provider: answer this status and standard body instead; log the upstream's. */
  | { readonly kind: 'standardized'; readonly status: number; readonly body: ErrorBody };

/** Strict mode's answer to a non-2xx upstream response. */
export function standardizeUpstreamError(status: number, trusted: boolean): UpstreamErrorOutcome {
  if (trusted) return { kind: 'passthrough', status };
  const masked = maskUpstreamStatus(status);
  return { kind: 'standardized', status: masked, body: standardErrorBody(masked) };
}

// --- embedded errors --------------------------------------------------------------------------

/** The masked status of an embedded error from an untrusted provider. */
export function maskedEmbeddedStatus(error: unknown): number {
  return maskUpstreamStatus(embeddedStatus(error));
}

/**
 * The stand-alone SSE event strict mode emits for a chunk that carries `error` (spec 6): its data is
 * an object with only `error`. Untrusted: the masked status as a numeric `code`, with the table's
 * type and message (the upstream's message is never forwarded). Trusted: the provider's `error`
 * value verbatim, so the client sees exactly what the provider said.
 */
export function embeddedErrorEvent(error: unknown, trusted: boolean): string {
  if (trusted) return formatDataEvent(JSON.stringify({ error }));
  const status = maskedEmbeddedStatus(error);
  const { type, message } = describeStatus(status);
  return formatDataEvent(JSON.stringify(errorBody(message, type, status)));
}

/**
 * Strict mode's answer to a 200 JSON body that carries `error` instead of a result: the embedded
 * code read and masked as for SSE, answered as that status with the standard body. Trusted
 * providers' bodies pass through unchanged, status included (4.5: errors pass through unchanged).
 */
export function standardizeEmbeddedError(error: unknown, trusted: boolean): UpstreamErrorOutcome {
  if (trusted) return { kind: 'passthrough', status: 200 };
  const status = maskedEmbeddedStatus(error);
  return { kind: 'standardized', status, body: standardErrorBody(status) };
}

// --- upstream bodies the gateway cannot relay -------------------------------------------------

/**
 * A success response that failed deserialization (strict 4.5, and standalone sanitization): the
 * upstream answered something that is not the reference response, which is a bad gateway. Used as a
 * status and body before headers are sent, and as an SSE error event (code 502) mid-stream.
 */
export const INVALID_UPSTREAM_STATUS = 502;

export function invalidUpstreamResponseBody(): ErrorBody {
  return standardErrorBody(INVALID_UPSTREAM_STATUS);
}

export function invalidUpstreamResponseEvent(): string {
  const { type, message } = describeStatus(INVALID_UPSTREAM_STATUS);
  return formatDataEvent(JSON.stringify(errorBody(message, type, INVALID_UPSTREAM_STATUS)));
}

// --- standalone sanitization (spec 4.6, 7.3) --------------------------------------------------

export const UPSTREAM_REJECTED_MESSAGE = 'The upstream provider rejected the request.';

/**
 * The body that replaces a non-2xx upstream body under standalone `sanitize_response`; the status
 * is preserved by the caller. 4xx: the spec's fixed object. 5xx and anything else: the 7.2 internal
 * error (message `Internal server error`, type `api_error`, param and code null), the generic
 * object standardization also uses.
 */
export function standaloneUpstreamErrorBody(status: number): ErrorBody {
  if (status >= 400 && status < 500) {
    return errorBody(UPSTREAM_REJECTED_MESSAGE, 'invalid_request_error', 'upstream_error');
  }
  return errorBody(GENERIC_SERVER_ERROR.message, GENERIC_SERVER_ERROR.type);
}

/**
 * Standalone sanitization of an embedded error (a 200 stream chunk or body carrying `error`): no
 * standardization and no masking, but the provider's details are not relayed either. The status the
 * code names (read as in 7.2) chooses the 4.6 replacement body.
 */
export function standaloneEmbeddedError(error: unknown): {
  readonly status: number;
  readonly body: ErrorBody;
} {
  const status = embeddedStatus(error);
  return { status, body: standaloneUpstreamErrorBody(status) };
}

export function standaloneEmbeddedErrorEvent(error: unknown): string {
  return formatDataEvent(JSON.stringify(standaloneEmbeddedError(error).body));
}
