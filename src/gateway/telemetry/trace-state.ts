import {
  INVALID_SPAN_CONTEXT,
  trace,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';

/**
 * What the span and header helpers use while tracing is on, set by `startTracing` and cleared by
 * `shutdownTracing`. While it is undefined every helper returns (or ignores) `NOOP_SPAN` after one
 * comparison: no span objects, no context lookups, no attribute maps on the request path of a
 * gateway without a collector. The SDK and the propagator are loaded only when tracing starts, so a
 * gateway without tracing does not pay their import time either.
 */
export interface ActiveTracing {
  readonly tracer: Tracer;
  /** W3C Trace Context, whatever `OTEL_PROPAGATORS` says (see `trace-headers.ts`). */
  readonly propagator: TextMapPropagator;
}

let active: ActiveTracing | undefined;

export function activeTracing(): ActiveTracing | undefined {
  return active;
}

export function setActiveTracing(tracing: ActiveTracing | undefined): void {
  active = tracing;
}

/**
 * The one span handed out while tracing is off: non-recording, with the invalid context, so it is
 * never injected and every method on it is a no-op. Shared, so handing it out allocates nothing.
 */
export const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
