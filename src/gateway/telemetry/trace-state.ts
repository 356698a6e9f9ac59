import type * as OtelApi from '@opentelemetry/api';
import type { Context, Span, SpanContext, TextMapPropagator, Tracer } from '@opentelemetry/api';

/**
 * What the span and header helpers use while tracing is on, set by `startTracing` and cleared by
 * `shutdownTracing`. While it is undefined every helper returns (or ignores) `NOOP_SPAN` after one
 * comparison: no span objects, no context lookups, no attribute maps on the request path of a
 * gateway without a collector.
 *
 * Nothing of OpenTelemetry is loaded while tracing is off, not even `@opentelemetry/api` (about
 * 6 MB of RSS with the semantic-convention constants): this module and the helpers import its types
 * only, and `startTracing` hands them the API module it loaded with the SDK. test/telemetry/
 * lazy-modules.test.ts fails when a gateway without tracing loads any `@opentelemetry` package.
 */
export interface ActiveTracing {
  /** `@opentelemetry/api`, loaded by `startTracing`. */
  readonly api: typeof OtelApi;
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

/** The API's `INVALID_SPAN_CONTEXT`: all-zero ids, not sampled; never injected into headers. */
const INVALID_SPAN_CONTEXT: SpanContext = Object.freeze({
  traceId: '00000000000000000000000000000000',
  spanId: '0000000000000000',
  traceFlags: 0,
});

/**
 * The one span handed out while tracing is off: non-recording, with the invalid context, so it is
 * never injected and every method on it is a no-op (what the API's `trace.wrapSpanContext` of the
 * invalid context returns, written out so that the API need not be loaded). Shared, so handing it
 * out allocates nothing.
 */
export const NOOP_SPAN: Span = Object.freeze({
  spanContext: () => INVALID_SPAN_CONTEXT,
  setAttribute: () => NOOP_SPAN,
  setAttributes: () => NOOP_SPAN,
  addEvent: () => NOOP_SPAN,
  addLink: () => NOOP_SPAN,
  addLinks: () => NOOP_SPAN,
  setStatus: () => NOOP_SPAN,
  updateName: () => NOOP_SPAN,
  end: () => undefined,
  isRecording: () => false,
  recordException: () => undefined,
});

/**
 * An empty, immutable context (the API's `ROOT_CONTEXT` behaves the same), for a caller that asks
 * for the client's trace context while tracing is off.
 */
class EmptyContext implements Context {
  private readonly values: ReadonlyMap<symbol, unknown>;
  constructor(values: ReadonlyMap<symbol, unknown> = new Map()) {
    this.values = values;
  }
  getValue(key: symbol): unknown {
    return this.values.get(key);
  }
  setValue(key: symbol, value: unknown): Context {
    return new EmptyContext(new Map(this.values).set(key, value));
  }
  deleteValue(key: symbol): Context {
    const values = new Map(this.values);
    values.delete(key);
    return new EmptyContext(values);
  }
}

export const EMPTY_CONTEXT: Context = new EmptyContext();
