import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { errorJson } from '../../lib/errors.js';
import { anthropicErrorBody } from '../anthropic/errors.js';
import type { ApiSurface } from '../api/surfaces.js';
import type { Refusal } from '../limits/types.js';
import { STRICT_STATUS_TABLE } from '../strict/index.js';
import type { RequestOutcome } from './outcome.js';

/**
 * An error the gateway answers itself. Its `outcome` says whose doing it was: `rejected` marks the
 * client errors that `gateway_rejections_total` counts (spec 6), decisions of the gateway rather
 * than reports of an upstream response.
 */
export interface GatewayError {
  status: number;
  type: string;
  code: string | null;
  message: string;
  param: string | null;
  outcome: RequestOutcome;
  retryAfter?: number;
  /**
   * Sent with `x-should-retry: false`, which the OpenAI and Anthropic SDKs obey: a refusal that
   * stands until a window moves on is not worth their automatic retries.
   */
  noRetry?: true;
  /** The `code` label of `gateway_rejections_total` when it differs from the body's code (spec 6). */
  label?: string;
  /**
   * Made by the strict checks in strict mode's own words (spec 7.1: "Invalid request" style with
   * the offending field named, code null or `unsupported_parameter`): written as made.
   */
  strictShape?: true;
}

function make(
  status: number,
  type: string,
  code: string | null,
  message: string,
  extra: { outcome?: RequestOutcome; retryAfter?: number; param?: string | null } = {},
): GatewayError {
  return {
    status,
    type,
    code,
    message,
    param: extra.param ?? null,
    outcome: extra.outcome ?? 'rejected',
    ...(extra.retryAfter !== undefined ? { retryAfter: extra.retryAfter } : {}),
  };
}

/** The gateway's own errors (spec 7.1 and DESIGN 6), one constructor per condition. */
export const gatewayErrors = {
  modelNotFound: (alias: string) =>
    make(404, 'invalid_request_error', 'model_not_found', `The model \`${alias}\` does not exist.`, {
      param: 'model',
    }),
  missingModel: () =>
    make(
      400,
      'invalid_request_error',
      'missing_model',
      'No model named: send the alias in the JSON body field `model` or in the `model-override` header.',
      { param: 'model' },
    ),
  bodyTooDeep: () =>
    make(400, 'invalid_request_error', 'invalid_body', 'The request body is nested too deeply to forward.'),
  invalidJson: () =>
    make(400, 'invalid_request_error', 'invalid_json', 'The request body is not valid JSON.'),
  unsupportedContentType: (contentType: string | undefined) =>
    make(
      415,
      'invalid_request_error',
      'invalid_content_type',
      `The content-type must be application/json (${contentType === undefined ? 'the request has none' : `got \`${contentType.slice(0, 100)}\``}), or the alias named in the \`model-override\` header.`,
    ),
  bodyNotObject: () =>
    make(
      400,
      'invalid_request_error',
      'invalid_body',
      'The request body must be a JSON object with the alias in its `model` field.',
    ),
  modelNotString: (got: string) =>
    make(
      400,
      'invalid_request_error',
      'invalid_model',
      `\`model\` must be a string naming an alias, not ${got}.`,
      {
        param: 'model',
      },
    ),
  servedOnAdminPort: (path: string, adminPort: number) =>
    make(
      404,
      'not_found_error',
      null,
      `${path} is served on the admin port (${adminPort}, --metrics-port), not on the proxy port.`,
    ),
  unauthorized: () =>
    make(
      401,
      'authentication_error',
      'invalid_api_key',
      'Missing or invalid API key: send `Authorization: Bearer <key>`.',
    ),
  requestTooLarge: (maxBytes: number) =>
    make(413, 'invalid_request_error', 'request_too_large', `The request body exceeds ${maxBytes} bytes.`),
  upstreamUnavailable: () =>
    make(503, 'api_error', 'upstream_unavailable', 'The upstream provider could not be reached.', {
      outcome: 'upstream_error',
    }),
  /** A pool whose only entries are Services with no ready pod: nothing to send the request to. */
  noMembers: () =>
    make(503, 'api_error', 'no_ready_endpoints', 'No provider of this model has a ready endpoint.', {
      outcome: 'upstream_error',
    }),
  /** Resource mode before the first GatewayConfig loaded: nothing to route by yet. */
  notConfigured: () =>
    make(503, 'api_error', 'configuration_unavailable', 'The gateway has not loaded a configuration yet.', {
      outcome: 'rejected',
    }),
  /** A bug on the request path (logged where it is caught). */
  internal: () =>
    make(500, 'api_error', 'internal_error', 'Internal gateway error.', { outcome: 'internal_error' }),
  upstreamTimeout: () =>
    make(504, 'api_error', 'upstream_timeout', 'The upstream provider did not answer in time.', {
      outcome: 'timeout',
    }),
  firstTokenTimeout: () =>
    make(504, 'api_error', 'first_token_timeout', 'No provider produced a first token before the deadline.', {
      outcome: 'timeout',
    }),
};

/** A limiter's refusal (spec 7.1: 429 rate, concurrency and in-flight; 529 batch cap) as an error. */
export function refusalError(refusal: Refusal): GatewayError {
  const message =
    refusal.kind === 'rate_limit' || refusal.kind === 'concurrency' || refusal.kind === 'tokens'
      ? `${refusal.message} (${refusal.scope} limit).`
      : `${refusal.message}.`;
  const error = make(refusal.status, refusal.type, refusal.code, message, {
    ...(refusal.retryAfterSeconds !== undefined ? { retryAfter: refusal.retryAfterSeconds } : {}),
  });
  if (refusal.kind === 'budget' && refusal.status === 429) error.noRetry = true;
  return error;
}

/**
 * The codes spec 7.1 gives the gateway's errors whose status is in the table of 7.2 (the strict
 * checks' `unsupported_parameter` aside, made in strict mode's shape), and `budget_exceeded`, which
 * a client must tell apart from a rate limit (it stands until the budget's window moves on). Strict
 * mode answers any other code as null; the rejections metric keeps it as its label.
 */
const STRICT_CODES: ReadonlySet<string> = new Set([
  'rate_limit',
  'concurrency_limit_exceeded',
  'inflight_limit_exceeded',
  'budget_exceeded',
]);

/**
 * A gateway error in the shape of the mode it is answered in, the one place that decides it. Strict
 * mode (spec 7.2, "all strict errors use the object of 2.7"): a status in the table gets the table's
 * message and type, the code 7.1 gives (else null); `param`, Retry-After and the rejections-metric
 * label stay. A status outside the table (413, 415, 422, 504, 529) keeps its body: the spec does not
 * specify those, and their messages and codes (the size limit, the reasoning budget, batch capacity)
 * are what a client acts on. Outside strict mode, and for errors already in strict mode's words,
 * the error as made.
 */
export function inResponseMode(error: GatewayError, strictMode: boolean): GatewayError {
  if (!strictMode || error.strictShape) return error;
  const row = STRICT_STATUS_TABLE.get(error.status);
  if (row === undefined) return error;
  const label = error.label ?? error.code;
  return {
    ...error,
    type: row.type,
    message: row.message,
    code: error.code !== null && STRICT_CODES.has(error.code) ? error.code : null,
    ...(label === null ? {} : { label }),
  };
}

/** On every error the gateway answers itself, naming its code; never on a provider's answer. */
const GATEWAY_ERROR_HEADER = 'x-gateway-error';

/**
 * Writes a gateway error as the standard error object (in the request surface's shape) with an exact Content-Length, carrying the
 * request's id when it has one and the request's rate-limit headers when it has them.
 */
export function writeGatewayError(
  res: ServerResponse,
  error: GatewayError,
  requestId?: string,
  limitHeaders?: OutgoingHttpHeaders,
  shape: ApiSurface['errorShape'] = 'openai',
): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  // Anthropic's shape has a type by status and a message: the gateway's code stays in its logs.
  const body =
    shape === 'anthropic'
      ? JSON.stringify(anthropicErrorBody(error.status, error.message))
      : errorJson(error.message, error.type, error.code, error.param);
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  // Says the gateway answered, not a provider: a provider's 404 for a model it does not serve and
  // the gateway's 404 for an unknown alias are otherwise alike to a client.
  headers[GATEWAY_ERROR_HEADER] = error.label ?? error.code ?? String(error.status);
  if (error.retryAfter !== undefined) headers['retry-after'] = String(error.retryAfter);
  if (error.noRetry) headers['x-should-retry'] = 'false';
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  if (limitHeaders !== undefined) Object.assign(headers, limitHeaders);
  res.writeHead(error.status, headers);
  res.end(body);
}
