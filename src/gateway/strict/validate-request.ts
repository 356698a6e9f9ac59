import type { z } from 'zod';
import { errorBody, type ErrorBody } from '../../lib/errors.js';
import { isPlainChatRequest } from './plain-chat-request.js';
import { ChatCompletionRequestSchema, type ChatCompletionRequest } from './request-schema-chat.js';
import { EmbeddingsRequestSchema, type EmbeddingsRequest } from './request-schema-embeddings.js';
import { MessagesRequestSchema, type MessagesRequest } from './request-schema-messages.js';
import { ResponsesRequestSchema, type ResponsesRequest } from './request-schema-responses.js';

/**
 * Strict request validation, the first of the strict request checks (spec 4.4 rule 6): bytes and
 * content type in, a parsed body or a 400 in the shape of spec 7.1 out. The `code` of a rejection is
 * the `gateway_rejections_total` label of spec 6; the body's own `code` is null, as 7.1 says.
 */

import type { StrictEndpoint } from '../api/surfaces.js';

export type { StrictEndpoint };

export interface StrictRequestBodies {
  chat_completions: ChatCompletionRequest;
  embeddings: EmbeddingsRequest;
  responses: ResponsesRequest;
  messages: MessagesRequest;
}

/** Metric labels of strict body errors (spec 6). */
export type BodyRejectionCode = 'invalid_json' | 'schema_mismatch' | 'invalid_content_type' | 'invalid_body';

export interface BodyRejection {
  readonly ok: false;
  readonly status: 400;
  readonly code: BodyRejectionCode;
  readonly error: ErrorBody;
}

export type RequestValidation<E extends StrictEndpoint> =
  { readonly ok: true; readonly body: StrictRequestBodies[E] } | BodyRejection;

const SCHEMAS: { readonly [E in StrictEndpoint]: z.ZodType } = {
  chat_completions: ChatCompletionRequestSchema,
  embeddings: EmbeddingsRequestSchema,
  responses: ResponsesRequestSchema,
  messages: MessagesRequestSchema,
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function validateRequest<E extends StrictEndpoint>(
  endpoint: E,
  contentType: string | undefined,
  bodyBytes: Uint8Array,
): RequestValidation<E> {
  const parsed = parseRequestBody(endpoint, contentType, bodyBytes);
  return parsed.ok ? validateParsedRequest(endpoint, parsed.value) : parsed;
}

/**
 * The first half of validation: bytes to a JSON object, with the body-error labels of spec 6. The
 * pipeline parses once, here, and hands the object to `validateParsedRequest` after routing.
 */
export function parseRequestBody(
  endpoint: StrictEndpoint,
  contentType: string | undefined,
  bodyBytes: Uint8Array,
): { readonly ok: true; readonly value: Record<string, unknown> } | BodyRejection {
  // Only the Responses surface has the content-type and unreadable-body labels (spec 6); chat and
  // embeddings read any body as JSON, as the reference server does.
  const responses = endpoint === 'responses';
  if (responses && !isJsonContentType(contentType)) {
    return reject(
      'invalid_content_type',
      'Invalid request: expected a JSON body with `Content-Type: application/json`.',
      null,
    );
  }
  let text: string;
  try {
    text = utf8.decode(bodyBytes);
  } catch {
    return responses
      ? reject('invalid_body', 'Invalid request: the body could not be read as UTF-8 text.', null)
      : reject('invalid_json', 'Invalid request: the body is not valid JSON.', null);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return reject('invalid_json', 'Invalid request: the body is not valid JSON.', null);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return reject('schema_mismatch', 'Invalid request: the body must be a JSON object.', null);
  }
  return { ok: true, value: parsed as Record<string, unknown> };
}

/** The second half of validation: the reference schema of the endpoint over a parsed object. */
export function validateParsedRequest<E extends StrictEndpoint>(
  endpoint: E,
  parsed: Record<string, unknown>,
): RequestValidation<E> {
  // The common text-only chat request is accepted without building zod's copy of it.
  if (endpoint === 'chat_completions' && isPlainChatRequest(parsed))
    return { ok: true, body: parsed as StrictRequestBodies[E] };
  const result = SCHEMAS[endpoint].safeParse(parsed);
  if (!result.success) {
    const { path, message } = describeIssues(result.error.issues);
    return reject('schema_mismatch', `Invalid request: \`${path}\`: ${message}.`, path);
  }
  // The schemas have no transforms or defaults, so the parsed JSON is the validated value; keeping
  // it (rather than zod's copy) keeps the client's key order for anything that re-serializes.
  return { ok: true, body: parsed as StrictRequestBodies[E] };
}

function reject(code: BodyRejectionCode, message: string, param: string | null): BodyRejection {
  return { ok: false, status: 400, code, error: errorBody(message, 'invalid_request_error', null, param) };
}

/** `application/json`, or a structured `+json` type, parameters such as charset allowed. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  const mediaType = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[!#$%&'*.^_`|~0-9a-z-]+\+json$/.test(mediaType);
}

// --- issue description ------------------------------------------------------------------------

type Issue = z.core.$ZodIssue;
type PathKey = PropertyKey;

/**
 * The one issue a client should hear about, with its full path. A union reports every branch's
 * issues; the branch that got deepest into the value is the one the client meant (a content array
 * whose third part is wrong, not "expected string" for the whole content), so descend into it.
 */
function describeIssues(issues: readonly Issue[]): { path: string; message: string } {
  let issue = issues[0]!;
  let prefix: readonly PathKey[] = [];
  for (;;) {
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const branch = deepestBranch(issue.errors);
      if (branch !== undefined) {
        prefix = [...prefix, ...issue.path];
        issue = branch;
        continue;
      }
    }
    break;
  }
  const fullPath = [...prefix, ...issue.path];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    return { path: formatPath([...fullPath, key]), message: 'unrecognized field' };
  }
  return { path: formatPath(fullPath), message: issueMessage(issue) };
}

function deepestBranch(branches: readonly (readonly Issue[])[]): Issue | undefined {
  let best: Issue | undefined;
  let bestDepth = -1;
  for (const branch of branches) {
    const first = branch[0];
    if (first === undefined) continue;
    const depth = first.path.length;
    if (depth > bestDepth) {
      best = first;
      bestDepth = depth;
    }
  }
  return best;
}

function issueMessage(issue: Issue): string {
  // zod phrases a missing field as a type error on `undefined`; say what it is.
  if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
    return 'required field is missing';
  }
  if (issue.code === 'invalid_union' && issue.discriminator !== undefined && 'options' in issue) {
    const options = issue.options ?? [];
    return `invalid value; expected one of ${options.map((o) => JSON.stringify(o)).join(', ')}`;
  }
  // zod's "Invalid input: expected int, received number" -> "expected int, received number".
  const message = issue.message.replace(/^Invalid (input|option): /, '');
  return message.length > 0 ? message.charAt(0).toLowerCase() + message.slice(1) : 'invalid value';
}

/** `messages[0].content[2].image_url.url`; the empty path is the body itself. */
export function formatPath(path: readonly PathKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out.length === 0 ? String(key) : `.${String(key)}`;
  }
  return out.length === 0 ? '(body)' : out;
}
