import { errorBody, type ErrorBody } from '../../lib/errors.js';

/**
 * The refusals of the reasoning stage, as values. Spec 7.1 fixes the statuses of the budget errors
 * (422 when the limit is missing, 400 when it is not above the budget) and DESIGN 6 the code of an
 * unsupported effort; the other codes are this module's. `code` is also the
 * `gateway_rejections_total` label, and every one of these is a rejection the gateway decides
 * itself (spec 6), in strict and non-strict mode alike.
 */

export type ReasoningRejectionCode =
  /** The client effort is not one of the seven (400). */
  | 'invalid_reasoning_effort'
  /** A provider that may serve the request lists the effort as unsupported (400). */
  | 'unsupported_reasoning_effort'
  /** The effort emits a token budget and the request carries no usable output limit (422). */
  | 'reasoning_budget_requires_limit'
  /** The output limit is equal to or below the budget; budgets are never clipped (400). */
  | 'reasoning_budget_exceeds_limit'
  /** A provider-native reasoning control in the client request (400). */
  | 'unsupported_reasoning_control';

export interface ReasoningRejection {
  readonly ok: false;
  readonly status: 400 | 422;
  readonly type: 'invalid_request_error';
  readonly code: ReasoningRejectionCode;
  readonly message: string;
  /** The request field at fault, dotted for nested fields (`reasoning.effort`). */
  readonly param: string;
}

export function reject(
  status: 400 | 422,
  code: ReasoningRejectionCode,
  param: string,
  message: string,
): ReasoningRejection {
  return Object.freeze({ ok: false, status, type: 'invalid_request_error', code, message, param });
}

/** The standard error object (spec 2.7) for a reasoning rejection, strict or not. */
export function reasoningErrorBody(rejection: ReasoningRejection): ErrorBody {
  return errorBody(rejection.message, rejection.type, rejection.code, rejection.param);
}
