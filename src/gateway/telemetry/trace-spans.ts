import type { Attributes, Span, SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from './trace-attributes.js';
import { extractTraceContext, type InboundHeaders } from './trace-headers.js';
import { NOOP_SPAN, activeTracing } from './trace-state.js';
import type { GenAiOperation } from '../api/surfaces.js';

/**
 * The spans of one request: a SERVER span for the client's request (child of the client's
 * `traceparent` when it sent one) and a CLIENT span per upstream attempt under it, named and
 * attributed after the OpenTelemetry GenAI conventions (`{gen_ai.operation.name}
 * {gen_ai.request.model}`).
 *
 * Attributes are identifiers and counts only: models, provider names, statuses, token counts.
 * No helper takes a prompt, a completion, a message or a body, so content cannot reach a span
 * through them (the GenAI conventions make content capture opt-in; the gateway never opts in).
 *
 * While tracing is off every function here returns or ignores `NOOP_SPAN` after one check.
 */

export { NOOP_SPAN };

/** The API's `SpanStatusCode.ERROR`, as its number: the enum would load the API while tracing is off. */
const SPAN_STATUS_ERROR = 2 satisfies SpanStatusCode.ERROR;

/**
 * `gen_ai.provider.name` is the telemetry flavour of the wire protocol (the conventions' note: it
 * "may differ from the actual model provider"). Every upstream speaks the OpenAI format, so the
 * value is `openai`; which configured provider served the attempt is `gateway.provider.name`.
 */
const WIRE_PROVIDER = 'openai';

/** Gateway-specific attributes (not in the semantic conventions). */
export const ATTR_GATEWAY_PROVIDER_NAME = 'gateway.provider.name';
export const ATTR_GATEWAY_ATTEMPT = 'gateway.attempt';
export const ATTR_GATEWAY_MODEL = 'gateway.model';
export const ATTR_GATEWAY_TRAFFIC = 'gateway.traffic';
/** How the request ended (the `outcome` label of `gateway_requests_total`). */
export const ATTR_GATEWAY_OUTCOME = 'gateway.outcome';

const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/**
 * Starts the span of one client request. `route` is the low-cardinality route (`/v1/chat/
 * completions`), not the raw URL: a query string or an id in a span name would explode the
 * number of distinct names a backend indexes.
 */
export function startServerSpan(headers: InboundHeaders, method: string, route: string): Span {
  const tracing = activeTracing();
  if (tracing === undefined) return NOOP_SPAN;
  const known = KNOWN_METHODS.has(method);
  return tracing.tracer.startSpan(
    `${known ? method : 'HTTP'} ${route}`,
    {
      kind: tracing.api.SpanKind.SERVER,
      attributes: { [ATTR_HTTP_REQUEST_METHOD]: known ? method : '_OTHER', [ATTR_HTTP_ROUTE]: route },
    },
    extractTraceContext(headers),
  );
}

/** The trace id of a recording span (for the access log), else null. */
export function traceIdOf(span: Span): string | null {
  if (span === NOOP_SPAN || !span.isRecording()) return null;
  return span.spanContext().traceId;
}

/** The alias and traffic class of the request, once resolved. */
export function setRequestInfo(span: Span, model: string, traffic: string): void {
  if (!span.isRecording()) return;
  span.setAttributes({ [ATTR_GATEWAY_MODEL]: model, [ATTR_GATEWAY_TRAFFIC]: traffic });
}

/**
 * Ends the server span with the status the client received (none if the client left first) and the
 * request's outcome. Per the HTTP conventions a 4xx is the client's mistake, not the gateway's
 * failure; the span is an error for a 5xx, and for an outcome that went wrong after or without a
 * status (a cut stream, an error inside a 200, a timeout, a client that left), with the outcome as
 * `error.type`.
 */
export function endServerSpan(span: Span, status: number | undefined, outcome: string): void {
  if (span === NOOP_SPAN) return;
  if (span.isRecording()) {
    if (status !== undefined) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    span.setAttribute(ATTR_GATEWAY_OUTCOME, outcome);
    const clientError = status !== undefined && status >= 400 && status < 500;
    const failed = outcome !== 'completed' && outcome !== 'rejected' && !clientError;
    if (failed || (status !== undefined && status >= 500)) {
      span.setAttribute(ATTR_ERROR_TYPE, failed ? outcome : String(status));
      span.setStatus({ code: SPAN_STATUS_ERROR });
    }
  }
  span.end();
}

export interface AttemptSpanOptions {
  /** Default `chat`. */
  readonly operation?: GenAiOperation;
  /** The upstream host and port (`server.address`, `server.port`). */
  readonly serverAddress?: string;
  readonly serverPort?: number;
}

/**
 * Starts the CLIENT span of one upstream attempt as a child of the request's server span.
 * `attempt` counts from 1; `requestModel` is the model sent upstream (`gateway_model` when set).
 */
export function startAttemptSpan(
  parent: Span,
  providerName: string,
  attempt: number,
  requestModel: string | undefined,
  options: AttemptSpanOptions = {},
): Span {
  const tracing = activeTracing();
  if (tracing === undefined) return NOOP_SPAN;
  const { api } = tracing;
  const operation = options.operation ?? 'chat';
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: operation,
    [ATTR_GEN_AI_PROVIDER_NAME]: WIRE_PROVIDER,
    [ATTR_GATEWAY_PROVIDER_NAME]: withoutCredentials(providerName),
    [ATTR_GATEWAY_ATTEMPT]: attempt,
  };
  if (requestModel !== undefined) attributes[ATTR_GEN_AI_REQUEST_MODEL] = requestModel;
  // The HTTP conventions' retry counter: absent on the first try, 1 on the first resend.
  if (attempt > 1) attributes[ATTR_HTTP_REQUEST_RESEND_COUNT] = attempt - 1;
  if (options.serverAddress !== undefined) attributes[ATTR_SERVER_ADDRESS] = options.serverAddress;
  if (options.serverPort !== undefined) attributes[ATTR_SERVER_PORT] = options.serverPort;
  return tracing.tracer.startSpan(
    requestModel === undefined ? operation : `${operation} ${requestModel}`,
    { kind: api.SpanKind.CLIENT, attributes },
    api.trace.setSpan(api.ROOT_CONTEXT, parent),
  );
}

/** `gen_ai.response.model`: the model the upstream says answered (before any rewrite to the alias). */
export function setResponseModel(span: Span, model: string | undefined): void {
  if (model === undefined || !span.isRecording()) return;
  span.setAttribute(ATTR_GEN_AI_RESPONSE_MODEL, model);
}

export interface TokenUsage {
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
}

/** `gen_ai.usage.input_tokens` / `output_tokens`, each only when it is a known count. */
export function setTokenUsage(span: Span, usage: TokenUsage): void {
  if (!span.isRecording()) return;
  if (isCount(usage.inputTokens)) span.setAttribute(ATTR_GEN_AI_USAGE_INPUT_TOKENS, usage.inputTokens);
  if (isCount(usage.outputTokens)) span.setAttribute(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, usage.outputTokens);
}

/**
 * Reads only `model` and the usage counts from a parsed upstream response or SSE chunk and records
 * them: chat and legacy completions count `prompt_tokens`/`completion_tokens`, Responses
 * `input_tokens`/`output_tokens`. Nothing else of the body is looked at.
 */
export function recordResponseSummary(span: Span, body: unknown): void {
  if (!span.isRecording() || typeof body !== 'object' || body === null) return;
  const record = body as Record<string, unknown>;
  if (typeof record.model === 'string') setResponseModel(span, record.model);
  const usage = record.usage;
  if (typeof usage !== 'object' || usage === null) return;
  const counts = usage as Record<string, unknown>;
  setTokenUsage(span, {
    inputTokens: numberOr(counts.prompt_tokens, counts.input_tokens),
    outputTokens: numberOr(counts.completion_tokens, counts.output_tokens),
  });
}

/**
 * The upstream's answer status on the attempt span. Per the HTTP client conventions any status of
 * 400 or more marks the attempt as failed (`error.type` is the status code).
 */
export function setAttemptStatus(span: Span, status: number): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  if (status >= 400) {
    span.setAttribute(ATTR_ERROR_TYPE, String(status));
    span.setStatus({ code: SPAN_STATUS_ERROR });
  }
}

/**
 * An attempt that failed without a usable status: `errorType` is a low-cardinality class such as
 * an undici error code (`UND_ERR_CONNECT_TIMEOUT`), `first_token_timeout` or `client_gone`.
 * Deliberately no message: upstream error texts can echo the request.
 */
export function setAttemptError(span: Span, errorType: string): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR_ERROR_TYPE, errorType);
  span.setStatus({ code: SPAN_STATUS_ERROR });
}

/** Ends a span (attempt spans end when the attempt's response body has been relayed or abandoned). */
export function endSpan(span: Span): void {
  if (span !== NOOP_SPAN) span.end();
}

/** `{ trace_id, span_id }` for log correlation, or undefined while tracing is off. */
export function traceLogFields(span: Span): { trace_id: string; span_id: string } | undefined {
  if (span === NOOP_SPAN) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

function isCount(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function numberOr(first: unknown, second: unknown): number | undefined {
  if (typeof first === 'number') return first;
  return typeof second === 'number' ? second : undefined;
}

/** A provider named by its URL keeps the URL, minus any `user:password@`. */
function withoutCredentials(name: string): string {
  if (!name.includes('@') || !name.includes('://')) return name;
  try {
    const url = new URL(name);
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return name;
  }
}
