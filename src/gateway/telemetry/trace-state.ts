import { trace, type Span, type Tracer } from '@opentelemetry/api';
import { INVALID_SPAN_CONTEXT } from '@opentelemetry/api';

/**
 * The tracer the span helpers use, set by `startTracing` and cleared by `shutdownTracing`. While it
 * is undefined every helper returns `NOOP_SPAN` after one comparison: no span objects, no context
 * lookups, no attribute maps on the request path of a gateway without a collector.
 */
let active: Tracer | undefined;

export function activeTracer(): Tracer | undefined {
  return active;
}

export function setActiveTracer(tracer: Tracer | undefined): void {
  active = tracer;
}

/**
 * The one span handed out while tracing is off: non-recording, with the invalid context, so it is
 * never injected and every method on it is a no-op. Shared, so handing it out allocates nothing.
 */
export const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
