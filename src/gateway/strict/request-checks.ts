import type { ErrorBody } from '../../lib/errors.js';
import type { UnsupportedParamName } from './unsupported-params-catalog.js';
import { checkUnsupportedParams, type UnsupportedParamMatch } from './unsupported-params.js';
import {
  parseRequestBody,
  validateParsedRequest,
  type StrictEndpoint,
  type StrictRequestBodies,
} from './validate-request.js';

/**
 * The strict request checks of spec 4.4 rule 6 that belong to strict mode: schema validation, then
 * the unsupported-parameter check (chat completions only, 4.7). The first failure answers. Reasoning
 * validation, the rule's last check, runs after these in the pipeline (`pipeline/reasoning.ts`)
 * because it applies in both modes.
 */

/** A rejection of any strict request check; `code` is the `gateway_rejections_total` label. */
export interface StrictRequestRejection {
  readonly ok: false;
  readonly status: number;
  readonly code: string;
  readonly error: ErrorBody;
}

export interface StrictRequestCheckOptions {
  /** Root `reject_unsupported_params` of the configuration (the request's runtime table). */
  readonly rejectUnsupportedParams: ReadonlySet<UnsupportedParamName> | readonly UnsupportedParamName[];
}

export type StrictCheckStage = 'schema' | 'unsupported_params';

export type StrictRequestChecks<E extends StrictEndpoint> =
  | {
      readonly ok: true;
      readonly body: StrictRequestBodies[E];
      /** For `gateway_unsupported_params_total` (action `logged`) and the info log. */
      readonly unsupportedParams: readonly UnsupportedParamMatch[];
    }
  | (StrictRequestRejection & {
      readonly stage: StrictCheckStage;
      /** Matches found before the rejection; count them even when the request is refused. */
      readonly unsupportedParams: readonly UnsupportedParamMatch[];
    });

const NONE: readonly UnsupportedParamMatch[] = Object.freeze([]);

export function runStrictRequestChecks<E extends StrictEndpoint>(
  endpoint: E,
  contentType: string | undefined,
  bodyBytes: Uint8Array,
  options: StrictRequestCheckOptions,
): StrictRequestChecks<E> {
  const parsed = parseRequestBody(endpoint, contentType, bodyBytes);
  if (!parsed.ok) return { ...parsed, stage: 'schema', unsupportedParams: NONE };
  return runStrictChecksOnParsed(endpoint, parsed.value, options);
}

/** The same checks over a body the pipeline has already parsed (it parses a body once). */
export function runStrictChecksOnParsed<E extends StrictEndpoint>(
  endpoint: E,
  parsedBody: Record<string, unknown>,
  options: StrictRequestCheckOptions,
): StrictRequestChecks<E> {
  const validated = validateParsedRequest(endpoint, parsedBody);
  if (!validated.ok) return { ...validated, stage: 'schema', unsupportedParams: NONE };
  const body = validated.body;

  let matches = NONE;
  if (endpoint === 'chat_completions') {
    const checked = checkUnsupportedParams(body, options.rejectUnsupportedParams);
    matches = checked.matches;
    if (checked.rejection !== null) {
      return { ...checked.rejection, stage: 'unsupported_params', unsupportedParams: matches };
    }
  }

  return { ok: true, body, unsupportedParams: matches };
}
