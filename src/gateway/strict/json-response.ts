import type { ErrorBody } from '../../lib/errors.js';
import {
  INVALID_UPSTREAM_STATUS,
  invalidUpstreamResponseBody,
  standaloneEmbeddedError,
  standardizeEmbeddedError,
} from './errors.js';
import { sanitizeBody, type SanitizeKind } from './sanitize.js';
import type { StrictEndpoint } from './validate-request.js';

/**
 * What to answer for a 2xx non-streaming upstream JSON body, in strict mode (4.5) and under
 * standalone sanitization (4.6). Non-2xx upstream responses go to `standardizeUpstreamError` /
 * `standaloneUpstreamErrorBody` instead, without reading their body.
 */
export type JsonResponseOutcome =
  /** Answer the upstream's 2xx status with this body (set Content-Length from it). */
  | { readonly kind: 'ok'; readonly body: string }
  /** Trusted provider's embedded error: forward the upstream's status, headers and bytes unchanged. */
  | { readonly kind: 'passthrough'; readonly upstreamError: unknown }
  /**
   * Answer this status and standard body. `embedded_error`: the body carried `error` (its value is
   * in `upstreamError` for the log, never for the client); `invalid_body`: it did not deserialize.
   */
  | {
      readonly kind: 'error';
      readonly reason: 'embedded_error' | 'invalid_body';
      readonly status: number;
      readonly body: ErrorBody;
      readonly upstreamError?: unknown;
    };

/** What each endpoint's answers are sanitized as; a Messages answer is passed through (surfaces.ts). */
const KINDS: { readonly [E in StrictEndpoint]: SanitizeKind | undefined } = {
  chat_completions: 'chat_completion',
  embeddings: 'embeddings',
  responses: 'responses',
  messages: undefined,
};

export function strictJsonResponse(
  endpoint: StrictEndpoint,
  body: Uint8Array,
  alias: string,
  trusted: boolean,
): JsonResponseOutcome {
  const kind = KINDS[endpoint];
  if (kind === undefined) throw new Error(`strict mode does not sanitize ${endpoint} answers`);
  const result = sanitizeBody(kind, body, alias);
  switch (result.kind) {
    case 'ok':
      return { kind: 'ok', body: result.json };
    case 'embedded_error': {
      const outcome = standardizeEmbeddedError(result.error, trusted);
      if (outcome.kind === 'passthrough') return { kind: 'passthrough', upstreamError: result.error };
      return {
        kind: 'error',
        reason: 'embedded_error',
        status: outcome.status,
        body: outcome.body,
        upstreamError: result.error,
      };
    }
    case 'invalid':
      return invalidBody();
  }
}

/**
 * Standalone sanitization covers chat completions only (4.6): fields removed and `model` rewritten.
 * An embedded error is answered with the 4.6 replacement body under the status its code names (no
 * masking); a body that does not deserialize is a 502 with the standard body, since relaying it
 * would defeat the sanitization the target asked for.
 */
export function standaloneJsonResponse(body: Uint8Array, alias: string): JsonResponseOutcome {
  const result = sanitizeBody('chat_completion', body, alias);
  switch (result.kind) {
    case 'ok':
      return { kind: 'ok', body: result.json };
    case 'embedded_error': {
      const { status, body: errorBody } = standaloneEmbeddedError(result.error);
      return {
        kind: 'error',
        reason: 'embedded_error',
        status,
        body: errorBody,
        upstreamError: result.error,
      };
    }
    case 'invalid':
      return invalidBody();
  }
}

function invalidBody(): JsonResponseOutcome {
  return {
    kind: 'error',
    reason: 'invalid_body',
    status: INVALID_UPSTREAM_STATUS,
    body: invalidUpstreamResponseBody(),
  };
}
