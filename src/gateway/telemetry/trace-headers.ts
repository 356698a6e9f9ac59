import type { Context, Span } from '@opentelemetry/api';
import { EMPTY_CONTEXT, NOOP_SPAN, activeTracing } from './trace-state.js';

/**
 * W3C trace context on the way in and out (spec 2.2 `propagate_trace_context`).
 *
 * The format is fixed to W3C Trace Context whatever `OTEL_PROPAGATORS` says: the spec promises
 * `traceparent` and `tracestate` to providers, and the same propagator reads the client's headers
 * so the two sides agree. The propagator and the API are loaded with the SDK (`startTracing`).
 */

/** Headers that carry trace context or baggage; never forwarded to a provider that may not see it. */
export const TRACE_CONTEXT_HEADERS = ['traceparent', 'tracestate', 'baggage'] as const;

/** Outbound request headers as the upstream client takes them (lower-case names). */
export type OutboundHeaders = Record<string, string | string[]>;

/** Inbound request headers (`IncomingHttpHeaders` fits). */
export type InboundHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The client's trace context as the parent of the gateway's server span (invalid or absent -> a
 * new trace; tracing off -> the root context).
 */
export function extractTraceContext(headers: InboundHeaders): Context {
  const tracing = activeTracing();
  if (tracing === undefined) return EMPTY_CONTEXT;
  const { api } = tracing;
  return tracing.propagator.extract(api.ROOT_CONTEXT, headers, api.defaultTextMapGetter);
}

/**
 * Sets the trace headers of one upstream attempt, in place on the attempt's own header object
 * (`forwardRequestHeaders` builds a fresh one per attempt):
 *
 * - `propagate` false: `traceparent`, `tracestate` and `baggage` are removed, so a client's context
 *   cannot reach a provider that is not allowed to receive it either.
 * - `propagate` true and a span with a valid context (tracing on, sampled or not): the attempt
 *   span's `traceparent` and `tracestate` replace whatever the client sent, so the provider's spans
 *   become children of the attempt. The client's `baggage` is forwarded as sent.
 * - `propagate` true and tracing off (the no-op span): the client's headers are forwarded unchanged.
 *   The gateway then is not a hop in the trace, and passing the context through keeps the client's
 *   trace connected to the provider's, which is what the provider was allowed to receive.
 */
export function injectTraceHeaders(headers: OutboundHeaders, span: Span, propagate: boolean): void {
  if (!propagate) {
    // Usually dropped already (the request path leaves them out when copying the client's headers).
    for (const name of TRACE_CONTEXT_HEADERS) if (headers[name] !== undefined) delete headers[name];
    return;
  }
  if (span === NOOP_SPAN) return;
  const tracing = activeTracing();
  // A span that outlived `shutdownTracing` is treated like the no-op span.
  if (tracing === undefined) return;
  const { api } = tracing;
  if (!api.isSpanContextValid(span.spanContext())) return;
  delete headers.traceparent;
  delete headers.tracestate;
  tracing.propagator.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), headers, api.defaultTextMapSetter);
}
