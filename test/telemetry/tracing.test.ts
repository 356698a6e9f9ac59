import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
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
  setTokenUsage,
  shutdownTracing,
  startAttemptSpan,
  startServerSpan,
  startTracing,
  traceLogFields,
  type OutboundHeaders,
} from '../../src/gateway/telemetry/tracing.js';

/**
 * The SDK started through the test seam: an in-memory exporter behind a simple processor, so every
 * ended span is exported individually (`flushTracing` awaits the pending exports). One SDK for the
 * file; each test starts from an empty exporter.
 */
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  const decision = await startTracing({ exporter, env: {} });
  expect(decision.enabled).toBe(true);
});
afterAll(async () => {
  await shutdownTracing();
});
beforeEach(async () => {
  // Spans a previous test ended without reading them must not land in this test's list.
  await flushTracing();
  exporter.reset();
});

const INBOUND_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INBOUND_PARENT = '00f067aa0ba902b7';
const inbound = (extra: Record<string, string> = {}) => ({
  host: 'gateway',
  traceparent: `00-${INBOUND_TRACE}-${INBOUND_PARENT}-01`,
  ...extra,
});

function finished(name: string): ReadableSpan {
  const span = exporter.getFinishedSpans().find((s) => s.name === name);
  if (span === undefined) {
    throw new Error(
      `no finished span ${name}; have ${exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .join(', ')}`,
    );
  }
  return span;
}

describe('lifecycle', () => {
  it('is started once; a second start is refused', async () => {
    expect(isTracingEnabled()).toBe(true);
    await expect(startTracing({ exporter })).rejects.toThrow(/already started/);
  });

  it('spans carry the default service name', async () => {
    endServerSpan(startServerSpan({}, 'GET', '/v1/models'), 200, 'completed');
    await flushTracing();
    expect(finished('GET /v1/models').resource.attributes['service.name']).toBe('gateway');
  });
});

describe('server span', () => {
  it('SERVER kind, named `{method} {route}`, with the HTTP attributes and the final status', async () => {
    const span = startServerSpan({}, 'POST', '/v1/chat/completions');
    expect(span).not.toBe(NOOP_SPAN);
    expect(span.isRecording()).toBe(true);
    setRequestInfo(span, 'llama', 'realtime');
    endServerSpan(span, 200, 'completed');
    await flushTracing();
    const done = finished('POST /v1/chat/completions');
    expect(done.kind).toBe(SpanKind.SERVER);
    expect(done.attributes).toEqual({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'gateway.model': 'llama',
      'gateway.traffic': 'realtime',
      'gateway.outcome': 'completed',
    });
    expect(done.status.code).toBe(SpanStatusCode.UNSET);
    expect(done.parentSpanContext).toBeUndefined();
  });

  it('the inbound traceparent becomes the parent', async () => {
    endServerSpan(startServerSpan(inbound(), 'POST', '/v1/responses'), 200, 'completed');
    await flushTracing();
    const done = finished('POST /v1/responses');
    expect(done.spanContext().traceId).toBe(INBOUND_TRACE);
    expect(done.parentSpanContext?.spanId).toBe(INBOUND_PARENT);
    expect(done.parentSpanContext?.isRemote).toBe(true);
  });

  it('an invalid traceparent starts a new trace', async () => {
    endServerSpan(
      startServerSpan({ traceparent: '00-zz-yy-01' }, 'POST', '/v1/embeddings'),
      200,
      'completed',
    );
    await flushTracing();
    const done = finished('POST /v1/embeddings');
    expect(done.parentSpanContext).toBeUndefined();
    expect(done.spanContext().traceId).not.toBe(INBOUND_TRACE);
  });

  it('a 4xx answer is not a server error; a 5xx is, and so is a 200 that went wrong', async () => {
    endServerSpan(startServerSpan({}, 'POST', '/a'), 429, 'rejected');
    endServerSpan(startServerSpan({}, 'POST', '/b'), 500, 'internal_error');
    endServerSpan(startServerSpan({}, 'POST', '/c'), undefined, 'client_cancelled');
    endServerSpan(startServerSpan({}, 'POST', '/d'), 200, 'upstream_cut');
    endServerSpan(startServerSpan({}, 'POST', '/e'), 400, 'upstream_error');
    endServerSpan(startServerSpan({}, 'POST', '/f'), 200, 'completed');
    await flushTracing();
    expect(finished('POST /a').status.code).toBe(SpanStatusCode.UNSET);
    expect(finished('POST /a').attributes['gateway.outcome']).toBe('rejected');
    expect(finished('POST /b').status.code).toBe(SpanStatusCode.ERROR);
    expect(finished('POST /b').attributes['error.type']).toBe('internal_error');
    expect(finished('POST /c').attributes['error.type']).toBe('client_cancelled');
    expect(finished('POST /c').attributes).not.toHaveProperty('http.response.status_code');
    expect(finished('POST /d').status.code).toBe(SpanStatusCode.ERROR);
    expect(finished('POST /d').attributes['error.type']).toBe('upstream_cut');
    expect(finished('POST /e').status.code).toBe(SpanStatusCode.UNSET);
    expect(finished('POST /f').status.code).toBe(SpanStatusCode.UNSET);
    expect(finished('POST /f').attributes).not.toHaveProperty('error.type');
  });

  it('an unknown method is recorded as _OTHER with a generic span name', async () => {
    endServerSpan(startServerSpan({}, 'BREW', '/pot'), 501, 'internal_error');
    await flushTracing();
    expect(finished('HTTP /pot').attributes['http.request.method']).toBe('_OTHER');
  });
});

describe('attempt spans', () => {
  it('CLIENT children of the server span, one per attempt, with GenAI and gateway attributes', async () => {
    const server = startServerSpan(inbound(), 'POST', '/v1/chat/completions');
    const first = startAttemptSpan(server, 'primary', 1, 'llama-3-70b', {
      serverAddress: 'vllm.internal',
      serverPort: 8000,
    });
    setAttemptStatus(first, 503);
    endSpan(first);
    const second = startAttemptSpan(server, 'backup', 2, 'llama-3-70b');
    setAttemptStatus(second, 200);
    endSpan(second);
    endServerSpan(server, 200, 'completed');

    await flushTracing();
    const [a, b] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);
    const parent = finished('POST /v1/chat/completions');
    for (const attempt of [a!, b!]) {
      expect(attempt.name).toBe('chat llama-3-70b');
      expect(attempt.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(attempt.spanContext().traceId).toBe(INBOUND_TRACE);
    }
    expect(a!.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'llama-3-70b',
      'gateway.provider.name': 'primary',
      'gateway.attempt': 1,
      'server.address': 'vllm.internal',
      'server.port': 8000,
      'http.response.status_code': 503,
      'error.type': '503',
    });
    expect(a!.status.code).toBe(SpanStatusCode.ERROR);
    expect(b!.attributes).toMatchObject({
      'gateway.provider.name': 'backup',
      'gateway.attempt': 2,
      'http.request.resend_count': 1,
      'http.response.status_code': 200,
    });
    expect(b!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a span without a known model is named after the operation', async () => {
    const server = startServerSpan({}, 'POST', '/v1/embeddings');
    endSpan(startAttemptSpan(server, 'p', 1, undefined, { operation: 'embeddings' }));
    await flushTracing();
    expect(finished('embeddings').attributes['gen_ai.operation.name']).toBe('embeddings');
    expect(finished('embeddings').attributes).not.toHaveProperty('gen_ai.request.model');
  });

  it('a provider named by a URL with credentials is recorded without them', async () => {
    const span = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'http://user:pw@vllm:8000/v1', 1, 'm');
    endSpan(span);
    await flushTracing();
    expect(finished('chat m').attributes['gateway.provider.name']).toBe('http://vllm:8000/v1');
  });

  it('a failure without a status records its class, never a message', async () => {
    const span = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'm');
    setAttemptError(span, 'UND_ERR_CONNECT_TIMEOUT');
    endSpan(span);
    await flushTracing();
    const done = finished('chat m');
    expect(done.attributes['error.type']).toBe('UND_ERR_CONNECT_TIMEOUT');
    expect(done.status).toEqual({ code: SpanStatusCode.ERROR });
  });
});

describe('response model and token usage', () => {
  it('chat-style usage (prompt/completion tokens) and the upstream model', async () => {
    const span = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'alias-model');
    recordResponseSummary(span, {
      id: 'chatcmpl-1',
      model: 'meta-llama/Llama-3-70B',
      choices: [{ message: { role: 'assistant', content: 'an answer' } }],
      usage: { prompt_tokens: 12, completion_tokens: 34, total_tokens: 46 },
    });
    endSpan(span);
    await flushTracing();
    expect(finished('chat alias-model').attributes).toMatchObject({
      'gen_ai.response.model': 'meta-llama/Llama-3-70B',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 34,
    });
  });

  it('Responses-style usage (input/output tokens)', async () => {
    const span = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'r');
    recordResponseSummary(span, { model: 'gpt-x', output: [], usage: { input_tokens: 5, output_tokens: 7 } });
    endSpan(span);
    await flushTracing();
    expect(finished('chat r').attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 5,
      'gen_ai.usage.output_tokens': 7,
    });
  });

  it('unknown or malformed counts are left out, not guessed', async () => {
    const span = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'u');
    recordResponseSummary(span, { usage: { prompt_tokens: '12', completion_tokens: -1 } });
    setTokenUsage(span, { inputTokens: 1.5, outputTokens: Number.NaN });
    recordResponseSummary(span, null);
    recordResponseSummary(span, 'text');
    endSpan(span);
    await flushTracing();
    const attributes = finished('chat u').attributes;
    expect(attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
    expect(attributes).not.toHaveProperty('gen_ai.usage.output_tokens');
    expect(attributes).not.toHaveProperty('gen_ai.response.model');
  });
});

describe('no content in spans', () => {
  it('prompts and completions never reach an attribute, an event or a span name', async () => {
    const prompt = 'SECRET-PROMPT-7f3a';
    const completion = 'SECRET-COMPLETION-91bc';
    const headers = { ...inbound(), 'x-request-note': prompt };
    const server = startServerSpan(headers, 'POST', '/v1/chat/completions');
    const attempt = startAttemptSpan(server, 'p', 1, 'm');
    recordResponseSummary(attempt, {
      model: 'm',
      choices: [{ message: { content: completion }, delta: { content: completion } }],
      usage: { prompt_tokens: 1, completion_tokens: 2 },
      prompt,
    });
    setAttemptStatus(attempt, 200);
    endSpan(attempt);
    endServerSpan(server, 200, 'completed');
    await flushTracing();
    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(2);
    const everything = JSON.stringify(
      spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })),
    );
    expect(everything).not.toContain(prompt);
    expect(everything).not.toContain(completion);
  });
});

describe('injectTraceHeaders', () => {
  it('propagate: the attempt span’s traceparent replaces the client’s; tracestate and baggage travel', () => {
    const server = startServerSpan(inbound({ tracestate: 'vendor=abc', baggage: 'k=v' }), 'POST', '/x');
    const attempt = startAttemptSpan(server, 'p', 1, 'm');
    const headers: OutboundHeaders = {
      'content-type': 'application/json',
      traceparent: `00-${INBOUND_TRACE}-${INBOUND_PARENT}-01`,
      tracestate: 'vendor=abc',
      baggage: 'k=v',
    };
    injectTraceHeaders(headers, attempt, true);
    const { traceId, spanId } = attempt.spanContext();
    expect(headers).toEqual({
      'content-type': 'application/json',
      traceparent: `00-${traceId}-${spanId}-01`,
      tracestate: 'vendor=abc',
      baggage: 'k=v',
    });
    expect(traceId).toBe(INBOUND_TRACE);
    expect(spanId).not.toBe(INBOUND_PARENT);
  });

  it('propagate with no inbound context: a fresh traceparent, no tracestate', () => {
    const attempt = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'm');
    const headers: OutboundHeaders = { 'content-type': 'application/json' };
    injectTraceHeaders(headers, attempt, true);
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(headers).not.toHaveProperty('tracestate');
  });

  it('a stale client tracestate does not survive when the parent context carries none', () => {
    const attempt = startAttemptSpan(startServerSpan({}, 'POST', '/x'), 'p', 1, 'm');
    const headers: OutboundHeaders = { tracestate: 'stale=1' };
    injectTraceHeaders(headers, attempt, true);
    expect(headers).not.toHaveProperty('tracestate');
  });

  it('no propagation: trace context and baggage are stripped, everything else kept', () => {
    const attempt = startAttemptSpan(startServerSpan(inbound(), 'POST', '/x'), 'p', 1, 'm');
    const headers: OutboundHeaders = {
      accept: 'text/event-stream',
      traceparent: `00-${INBOUND_TRACE}-${INBOUND_PARENT}-01`,
      tracestate: 'vendor=abc',
      baggage: 'user=alice',
    };
    injectTraceHeaders(headers, attempt, false);
    expect(headers).toEqual({ accept: 'text/event-stream' });
  });

  it('per attempt: each provider gets its own attempt span as the parent', () => {
    const server = startServerSpan({}, 'POST', '/x');
    const first = startAttemptSpan(server, 'a', 1, 'm');
    const second = startAttemptSpan(server, 'b', 2, 'm');
    const h1: OutboundHeaders = {};
    const h2: OutboundHeaders = {};
    injectTraceHeaders(h1, first, true);
    injectTraceHeaders(h2, second, true);
    expect(h1.traceparent).toContain(first.spanContext().spanId);
    expect(h2.traceparent).toContain(second.spanContext().spanId);
  });
});

describe('log correlation', () => {
  it('trace and span ids of a live span', () => {
    const span = startServerSpan(inbound(), 'GET', '/v1/models');
    expect(traceLogFields(span)).toEqual({ trace_id: INBOUND_TRACE, span_id: span.spanContext().spanId });
    endServerSpan(span, 200, 'completed');
  });
});

describe('shutdown', () => {
  it('flushes, then the helpers fall back to the no-op span; a second shutdown has nothing to do', async () => {
    const span = startServerSpan({}, 'POST', '/late');
    expect(await shutdownTracing()).toBe('flushed');
    expect(isTracingEnabled()).toBe(false);
    expect(startServerSpan({}, 'POST', '/after')).toBe(NOOP_SPAN);
    expect(await shutdownTracing()).toBe('not_started');
    span.end();
    // Restart for any test that runs after this one in the file.
    await startTracing({ exporter, env: {} });
  });
});
