import type * as OtelApi from '@opentelemetry/api';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { serviceNameOverride, tracingDecision, type TraceEnv, type TracingDecision } from './trace-env.js';
import { setActiveTracing } from './trace-state.js';

/**
 * OpenTelemetry tracing for the gateway: starting the SDK from the standard `OTEL_*` environment,
 * and flushing it during graceful shutdown (spec 3.2: "tracing flushed"). The span and header
 * helpers the request path uses are re-exported here, so the pipeline imports one module.
 *
 * - With `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` set (and neither
 *   `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`): the Node SDK with an OTLP/HTTP
 *   exporter behind a batch processor. The exporter reads its own variables (endpoint, headers,
 *   timeout, compression), the batch processor `OTEL_BSP_*`, the sampler `OTEL_TRACES_SAMPLER*`,
 *   the resource `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`. Metrics and logs stay with
 *   prom-client and pino: the SDK is started with no metric readers and no log processors.
 * - Otherwise nothing is started, nor even loaded: no `@opentelemetry` package, the API included
 *   (the SDK costs about 400 ms of import time; the API and the semantic-convention constants
 *   several MB of memory). The helpers hand out one shared no-op span.
 */

export {
  TRACE_CONTEXT_HEADERS,
  extractTraceContext,
  injectTraceHeaders,
  type InboundHeaders,
  type OutboundHeaders,
} from './trace-headers.js';
export {
  ATTR_GATEWAY_ATTEMPT,
  ATTR_GATEWAY_MODEL,
  ATTR_GATEWAY_OUTCOME,
  ATTR_GATEWAY_PROVIDER_NAME,
  ATTR_GATEWAY_TRAFFIC,
  NOOP_SPAN,
  endServerSpan,
  traceIdOf,
  endSpan,
  recordResponseSummary,
  setAttemptError,
  setAttemptStatus,
  setRequestInfo,
  setResponseModel,
  setTokenUsage,
  startAttemptSpan,
  startServerSpan,
  traceLogFields,
  type AttemptSpanOptions,
  type TokenUsage,
} from './trace-spans.js';
export {
  DEFAULT_SERVICE_NAME,
  serviceNameOverride,
  tracingDecision,
  type TraceEnv,
  type TracingDecision,
} from './trace-env.js';

/** Instrumentation scope of the gateway's spans. */
export const TRACER_NAME = 'gateway';

export interface StartTracingOptions {
  /**
   * Test seam: export to this exporter through a simple (synchronous) processor, regardless of the
   * endpoint variables. `OTEL_SDK_DISABLED=true` still wins.
   */
  readonly exporter?: SpanExporter;
  /** Defaults to `process.env`. */
  readonly env?: TraceEnv;
}

let sdk: NodeSDK | undefined;
/** `@opentelemetry/api`, loaded with the SDK; set exactly while `sdk` is. */
let api: typeof OtelApi | undefined;
/** Set while `startTracing` is loading the SDK, so a concurrent second start is refused too. */
let starting = false;

/**
 * Starts tracing when the environment asks for it (or a test passes an exporter) and says what it
 * did, for the startup log. Call once, before the proxy listens; a second call while started is a
 * programming error.
 */
export async function startTracing(options: StartTracingOptions = {}): Promise<TracingDecision> {
  if (sdk !== undefined || starting) throw new Error('tracing is already started');
  const env = options.env ?? process.env;
  const fromEnv = tracingDecision(env);
  const decision: TracingDecision =
    options.exporter === undefined || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true'
      ? fromEnv
      : {
          enabled: true,
          reason: 'exporting spans to the given exporter',
          warning: undefined,
          serviceName: serviceNameOverride(env),
        };
  if (!decision.enabled) return decision;

  starting = true;
  try {
    const [
      otelApi,
      { NodeSDK },
      { SimpleSpanProcessor },
      { OTLPTraceExporter },
      { W3CTraceContextPropagator },
    ] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/core'),
    ]);
    const started = new NodeSDK({
      ...(decision.serviceName === undefined ? {} : { serviceName: decision.serviceName }),
      ...(options.exporter === undefined
        ? // The SDK wraps a given exporter in a batch processor configured from OTEL_BSP_*.
          { traceExporter: new OTLPTraceExporter() }
        : { spanProcessors: [new SimpleSpanProcessor({ exporter: options.exporter })] }),
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
    });
    started.start();
    sdk = started;
    api = otelApi;
    setActiveTracing({
      api: otelApi,
      tracer: otelApi.trace.getTracer(TRACER_NAME),
      propagator: new W3CTraceContextPropagator(),
    });
    return decision;
  } finally {
    starting = false;
  }
}

export function isTracingEnabled(): boolean {
  return sdk !== undefined;
}

/**
 * Exports every span ended so far (the batch processor otherwise waits for its schedule). For tests
 * and for an embedding program that wants its spans out at a point of its choosing; shutdown
 * flushes by itself.
 */
export async function flushTracing(): Promise<void> {
  if (sdk === undefined || api === undefined) return;
  const global = api.trace.getTracerProvider();
  const provider: object = global instanceof api.ProxyTracerProvider ? global.getDelegate() : global;
  if ('forceFlush' in provider && typeof provider.forceFlush === 'function') {
    await (provider.forceFlush as () => Promise<void>).call(provider);
  }
}

export type TracingShutdown = 'flushed' | 'timeout' | 'not_started';

/**
 * Flushes pending spans and stops the SDK; the helpers return to the no-op span at once, so
 * requests still draining are not traced into a closed exporter. Bounded by `timeoutMs`: an
 * unreachable collector must not hold the process past its shutdown sequence (the export goes on
 * in the background until the process exits). Idempotent.
 */
export async function shutdownTracing(timeoutMs = 5_000): Promise<TracingShutdown> {
  const stopping = sdk;
  const stoppingApi = api;
  if (stopping === undefined || stoppingApi === undefined) return 'not_started';
  sdk = undefined;
  api = undefined;
  setActiveTracing(undefined);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([stopping.shutdown().then(() => 'flushed' as const), timedOut]);
  } finally {
    clearTimeout(timer);
    // The SDK leaves its globals registered; releasing them lets a later start (tests, an embedding
    // program) register fresh ones instead of being refused by the API's register-once rule.
    stoppingApi.trace.disable();
    stoppingApi.context.disable();
    stoppingApi.propagation.disable();
    stoppingApi.logs.disable();
  }
}
