/**
 * Strict mode, response sanitization and trusted providers: the pure decisions the request and
 * response stages of the pipeline call. See each module for the rule it owns.
 */
export {
  runStrictChecksOnParsed,
  runStrictRequestChecks,
  type StrictCheckStage,
  type StrictRequestCheckOptions,
  type StrictRequestChecks,
  type StrictRequestRejection,
} from './request-checks.js';
export {
  formatPath,
  isJsonContentType,
  parseRequestBody,
  validateParsedRequest,
  validateRequest,
  type BodyRejection,
  type BodyRejectionCode,
  type RequestValidation,
  type StrictEndpoint,
  type StrictRequestBodies,
} from './validate-request.js';
export {
  checkUnsupportedParams,
  findRefusedParam,
  refusedParamRejection,
  unsupportedParamsRejection,
  type UnsupportedParamMatch,
  type UnsupportedParamRejection,
  type UnsupportedParamsResult,
} from './unsupported-params.js';
export { REFUSED_CHAT_PARAMS, type RefusedChatParam } from './refused-params.js';
export {
  INVALID_UPSTREAM_STATUS,
  STRICT_STATUS_TABLE,
  UPSTREAM_REJECTED_MESSAGE,
  describeStatus,
  embeddedErrorEvent,
  invalidUpstreamResponseBody,
  invalidUpstreamResponseEvent,
  maskUpstreamStatus,
  maskedEmbeddedStatus,
  standaloneEmbeddedError,
  standaloneEmbeddedErrorEvent,
  standaloneUpstreamErrorBody,
  standardErrorBody,
  standardizeEmbeddedError,
  standardizeUpstreamError,
  type StatusDescription,
  type UpstreamErrorOutcome,
} from './errors.js';
export { embeddedError, embeddedErrorStatus, embeddedStatus } from '../api/embedded-error.js';
export { isUsageOnlyChunk } from './usage-chunk.js';
export {
  sanitizeBody,
  sanitizeJson,
  sanitizeValue,
  type SanitizeKind,
  type SanitizeResult,
} from './sanitize.js';
export { standaloneJsonResponse, strictJsonResponse, type JsonResponseOutcome } from './json-response.js';
export {
  SseSanitizeTransform,
  type SseEndStep,
  type SseStep,
  type SseStreamError,
  type SseTransformOptions,
  type SseTransformState,
} from './sse-transform.js';
