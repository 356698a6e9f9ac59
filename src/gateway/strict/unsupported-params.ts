import { errorBody, type ErrorBody } from '../../lib/errors.js';
import { REFUSED_CHAT_PARAMS, type RefusedChatParam } from './refused-params.js';
import {
  UNSUPPORTED_PARAM_NAMES,
  isParamAbsent,
  type UnsupportedParamName,
} from './unsupported-params-catalog.js';

/**
 * The unsupported-parameter check of strict mode (spec 4.7), the second strict request check, over a
 * chat-completions body that passed the schema. It decides; the caller records: for each match it
 * increments `gateway_unsupported_params_total{param, model, traffic, action}` with `action` from
 * `rejected`, and logs once at info with the names, model, account and key id (never values).
 */

export interface UnsupportedParamMatch {
  readonly name: UnsupportedParamName;
  /** In the configured reject list: the metric's `action` is `rejected`, else `logged`. */
  readonly rejected: boolean;
}

export interface UnsupportedParamRejection {
  readonly ok: false;
  readonly status: 400;
  /** The body's code, and so the `gateway_rejections_total` label. */
  readonly code: 'unsupported_parameter';
  readonly error: ErrorBody;
}

export interface UnsupportedParamsResult {
  /** Every catalog parameter the request sets to a value that does not count as absent. */
  readonly matches: readonly UnsupportedParamMatch[];
  /** Non-null when the request must be refused; `matches` is still complete for the metrics. */
  readonly rejection: UnsupportedParamRejection | null;
}

const NO_MATCHES: readonly UnsupportedParamMatch[] = Object.freeze([]);
const NOTHING_UNSUPPORTED: UnsupportedParamsResult = Object.freeze({ matches: NO_MATCHES, rejection: null });
const CATALOG_NAMES: ReadonlySet<string> = new Set(UNSUPPORTED_PARAM_NAMES);
const REFUSED_NAMES: ReadonlySet<string> = new Set(REFUSED_CHAT_PARAMS);

/**
 * Matches come out in catalog (alphabetical) order, not body order, so the message and the metric
 * sequence do not depend on how a client happens to order its JSON keys. The body's few keys are
 * walked, not the catalog's dozens of names: a body that sets none of them costs a lookup per key.
 */
export function checkUnsupportedParams(
  body: Readonly<Record<string, unknown>>,
  rejectList: ReadonlySet<UnsupportedParamName> | readonly UnsupportedParamName[],
): UnsupportedParamsResult {
  let matches: UnsupportedParamMatch[] | undefined;
  let refusedSet = false;
  let rejectSet: ReadonlySet<UnsupportedParamName> | undefined;
  for (const key in body) {
    if (!Object.hasOwn(body, key)) continue;
    if (REFUSED_NAMES.has(key) && body[key] !== null && body[key] !== undefined) refusedSet = true;
    if (!CATALOG_NAMES.has(key)) continue;
    const name = key as UnsupportedParamName;
    if (isParamAbsent(name, body[name])) continue;
    rejectSet ??= isSet(rejectList) ? rejectList : new Set(rejectList);
    (matches ??= []).push({ name, rejected: rejectSet.has(name) });
  }
  if (matches === undefined && !refusedSet) return NOTHING_UNSUPPORTED;
  const found = matches === undefined ? NO_MATCHES : matches.sort(byName);
  const rejectedNames = found.filter((m) => m.rejected).map((m) => m.name);
  if (rejectedNames.length > 0)
    return { matches: found, rejection: unsupportedParamsRejection(rejectedNames) };
  const refused = findRefusedParam(body);
  return { matches: found, rejection: refused === null ? null : refusedParamRejection(refused) };
}

const byName = (a: UnsupportedParamMatch, b: UnsupportedParamMatch): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

function isSet<T>(value: ReadonlySet<T> | readonly T[]): value is ReadonlySet<T> {
  return value instanceof Set;
}

/**
 * `Unsupported parameter(s): \`a\`, \`b\`` — the spec's form, names in backticks separated by a
 * comma and a space, no closing period (a period after a backtick reads as part of the list).
 * `param` is the first name, so SDKs that point at the offending field have one to point at.
 */
export function unsupportedParamsRejection(names: readonly string[]): UnsupportedParamRejection {
  const list = names.map((n) => `\`${n}\``).join(', ');
  return {
    ok: false,
    status: 400,
    code: 'unsupported_parameter',
    error: errorBody(
      `Unsupported parameter(s): ${list}`,
      'invalid_request_error',
      'unsupported_parameter',
      names[0] ?? null,
    ),
  };
}

/**
 * The first provider-native reasoning control the body sets (any value other than null: an empty
 * `chat_template_kwargs` is still the provider-native channel, and the client should move off it).
 */
export function findRefusedParam(body: Readonly<Record<string, unknown>>): RefusedChatParam | null {
  for (const name of REFUSED_CHAT_PARAMS) {
    if (Object.hasOwn(body, name) && body[name] !== null && body[name] !== undefined) return name;
  }
  return null;
}

/**
 * Strict mode refuses provider-native reasoning controls outright in favour of the canonical
 * `reasoning_effort` (spec 2.6 rules 6-7, 4.7). Same status and code as a configured rejection, so
 * clients and the rejections metric treat both alike; the message says what to send instead.
 */
export function refusedParamRejection(name: RefusedChatParam): UnsupportedParamRejection {
  return {
    ok: false,
    status: 400,
    code: 'unsupported_parameter',
    error: errorBody(
      `Unsupported parameter: \`${name}\` is not accepted in strict mode; use \`reasoning_effort\` to control reasoning`,
      'invalid_request_error',
      'unsupported_parameter',
      name,
    ),
  };
}
