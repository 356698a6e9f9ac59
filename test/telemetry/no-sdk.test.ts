import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  NOOP_SPAN,
  endServerSpan,
  endSpan,
  flushTracing,
  injectTraceHeaders,
  isTracingEnabled,
  recordResponseSummary,
  setAttemptError,
  setAttemptStatus,
  setRequestInfo,
  setResponseModel,
  setTokenUsage,
  shutdownTracing,
  startAttemptSpan,
  startServerSpan,
  startTracing,
  traceLogFields,
  type OutboundHeaders,
} from '../../src/gateway/telemetry/tracing.js';

/**
 * Tracing off: no endpoint in the environment, so no SDK is started (this file runs in its own
 * process, so no other test's SDK is registered here).
 */
const decision = await startTracing({ env: { OTEL_SERVICE_NAME: 'ignored' } });
const INBOUND = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('no SDK', () => {
  it('starts nothing and says why', () => {
    expect(decision).toEqual({
      enabled: false,
      reason: 'no OTLP endpoint configured',
      warning: undefined,
      serviceName: undefined,
    });
    expect(isTracingEnabled()).toBe(false);
    // No tracer provider was registered: the API hands out non-recording spans.
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
  });

  it('the span helpers hand out the one shared no-op span', () => {
    const server = startServerSpan({ traceparent: INBOUND }, 'POST', '/v1/chat/completions');
    const attempt = startAttemptSpan(server, 'p', 1, 'm');
    expect(server).toBe(NOOP_SPAN);
    expect(attempt).toBe(NOOP_SPAN);
    expect(server.isRecording()).toBe(false);
    expect(traceLogFields(server)).toBeUndefined();
  });

  it('the setters and enders accept it and do nothing', () => {
    setRequestInfo(NOOP_SPAN, 'llama', 'realtime');
    setAttemptStatus(NOOP_SPAN, 503);
    setAttemptError(NOOP_SPAN, 'ECONNREFUSED');
    setResponseModel(NOOP_SPAN, 'm');
    setTokenUsage(NOOP_SPAN, { inputTokens: 1, outputTokens: 2 });
    recordResponseSummary(NOOP_SPAN, { model: 'm', usage: { prompt_tokens: 1 } });
    endSpan(NOOP_SPAN);
    endServerSpan(NOOP_SPAN, 500, 'internal_error');
    expect(NOOP_SPAN.isRecording()).toBe(false);
  });

  it('propagate with no inbound context injects nothing', () => {
    const headers: OutboundHeaders = { 'content-type': 'application/json' };
    injectTraceHeaders(headers, NOOP_SPAN, true);
    expect(headers).toEqual({ 'content-type': 'application/json' });
  });

  it('propagate forwards the client’s trace headers unchanged (the gateway is not a hop)', () => {
    const headers: OutboundHeaders = { traceparent: INBOUND, tracestate: 'v=1', baggage: 'k=v' };
    injectTraceHeaders(headers, NOOP_SPAN, true);
    expect(headers).toEqual({ traceparent: INBOUND, tracestate: 'v=1', baggage: 'k=v' });
  });

  it('no propagation still strips the client’s trace headers', () => {
    const headers: OutboundHeaders = {
      traceparent: INBOUND,
      tracestate: 'v=1',
      baggage: 'k=v',
      accept: '*/*',
    };
    injectTraceHeaders(headers, NOOP_SPAN, false);
    expect(headers).toEqual({ accept: '*/*' });
  });

  it('flush and shutdown have nothing to do', async () => {
    await flushTracing();
    expect(await shutdownTracing()).toBe('not_started');
  });

  it('OTEL_SDK_DISABLED wins even over the test exporter', async () => {
    const seam = await startTracing({
      env: { OTEL_SDK_DISABLED: 'TRUE' },
      exporter: { export: () => undefined, shutdown: async () => undefined },
    });
    expect(seam.enabled).toBe(false);
    expect(isTracingEnabled()).toBe(false);
  });
});
