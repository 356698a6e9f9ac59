import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  endServerSpan,
  endSpan,
  injectTraceHeaders,
  isTracingEnabled,
  setAttemptStatus,
  shutdownTracing,
  startAttemptSpan,
  startServerSpan,
  startTracing,
  type OutboundHeaders,
} from '../../src/gateway/telemetry/tracing.js';

/**
 * The production path: the SDK started from `OTEL_*` variables, exporting OTLP/HTTP through its
 * batch processor to a collector on loopback, flushed by `shutdownTracing`.
 */

interface Received {
  readonly path: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string;
}

let collector: Server;
let received: Received[];
let respond: boolean;
let savedEnv: NodeJS.ProcessEnv;

beforeEach(async () => {
  savedEnv = { ...process.env };
  for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
  received = [];
  respond = true;
  collector = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url,
        contentType: req.headers['content-type'],
        body: Buffer.concat(chunks).toString('utf8'),
      });
      if (respond) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const { port } = collector.address() as AddressInfo;
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `http://127.0.0.1:${port}/v1/traces`;
});

afterEach(async () => {
  await shutdownTracing(1_000);
  process.env = savedEnv;
  collector.closeAllConnections();
  await new Promise<void>((resolve) => collector.close(() => resolve()));
});

function requestWithAttempt(): { traceId: string } {
  const server = startServerSpan({}, 'POST', '/v1/chat/completions');
  const attempt = startAttemptSpan(server, 'primary', 1, 'llama');
  setAttemptStatus(attempt, 200);
  endSpan(attempt);
  endServerSpan(server, 200, 'completed');
  return { traceId: server.spanContext().traceId };
}

describe('OTLP/HTTP export', () => {
  it('spans reach the collector when tracing shuts down (batch processor flushed)', async () => {
    const decision = await startTracing();
    expect(decision.enabled).toBe(true);
    const { traceId } = requestWithAttempt();
    // The batch processor waits for its schedule (5 s by default): nothing was sent yet.
    expect(received).toHaveLength(0);

    expect(await shutdownTracing()).toBe('flushed');
    expect(received.length).toBeGreaterThan(0);
    const [first] = received;
    expect(first!.path).toBe('/v1/traces');
    expect(first!.contentType).toContain('application/json');

    const payload = JSON.parse(received.map((r) => r.body).join('')) as {
      resourceSpans: {
        resource: { attributes: { key: string; value: { stringValue?: string } }[] };
        scopeSpans: { spans: { name: string; traceId: string }[] }[];
      }[];
    };
    const resource = payload.resourceSpans[0]!.resource.attributes;
    expect(resource.find((a) => a.key === 'service.name')?.value.stringValue).toBe('gateway');
    const spans = payload.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /v1/chat/completions', 'chat llama']);
    // OTLP/JSON encodes ids as hex strings.
    expect(spans.every((s) => s.traceId.toLowerCase() === traceId)).toBe(true);
  });

  it('OTEL_SERVICE_NAME names the service', async () => {
    process.env.OTEL_SERVICE_NAME = 'edge-gateway';
    await startTracing();
    requestWithAttempt();
    await shutdownTracing();
    expect(received.map((r) => r.body).join('')).toContain('"edge-gateway"');
  });

  it('an unsampled trace still propagates its context, flagged not sampled, and exports nothing', async () => {
    process.env.OTEL_TRACES_SAMPLER = 'always_off';
    await startTracing();
    const server = startServerSpan({}, 'POST', '/v1/chat/completions');
    const attempt = startAttemptSpan(server, 'p', 1, 'm');
    expect(attempt.isRecording()).toBe(false);
    const headers: OutboundHeaders = {};
    injectTraceHeaders(headers, attempt, true);
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    endSpan(attempt);
    endServerSpan(server, 200, 'completed');
    expect(await shutdownTracing()).toBe('flushed');
    expect(received).toHaveLength(0);
  });

  it('a collector that never answers cannot hold shutdown past its bound', async () => {
    respond = false;
    await startTracing();
    requestWithAttempt();
    const started = performance.now();
    expect(await shutdownTracing(300)).toBe('timeout');
    // Generous margin: the bound is what matters, not the exact time.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(isTracingEnabled()).toBe(false);
  });

  it('OTEL_TRACES_EXPORTER=none keeps the SDK off even with an endpoint', async () => {
    process.env.OTEL_TRACES_EXPORTER = 'none';
    expect((await startTracing()).enabled).toBe(false);
    expect(isTracingEnabled()).toBe(false);
  });
});
