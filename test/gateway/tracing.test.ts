import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gatewaysPerTest, type StartedGateway } from '../helpers/gateway.js';
import { jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

let trusted: RecordingUpstream;
let untrusted: RecordingUpstream;
let optedIn: RecordingUpstream;
let collector: RecordingUpstream;
const startGateway = gatewaysPerTest();

const completion = {
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'served-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'secret answer' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
};

beforeAll(async () => {
  [trusted, untrusted, optedIn, collector] = await Promise.all([
    startUpstream(jsonReply(200, completion)),
    startUpstream(jsonReply(200, completion)),
    startUpstream(jsonReply(200, completion)),
    startUpstream(jsonReply(200, {})),
  ]);
});
afterAll(async () => {
  await Promise.all([trusted, untrusted, optedIn, collector].map((u) => u.close()));
});
afterEach(async () => {
  for (const u of [trusted, untrusted, optedIn, collector]) u.requests.length = 0;
});

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;

const config = () => ({
  targets: {
    t: { url: trusted.url, trusted: true, gateway_model: 'upstream-model' },
    u: { url: untrusted.url },
    e: { url: optedIn.url, propagate_trace_context: true },
  },
});

async function ask(gateway: StartedGateway, model: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: TRACEPARENT, tracestate: 'vendor=1' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'secret prompt' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

function exportedSpans(): OtlpSpan[] {
  const spans: OtlpSpan[] = [];
  for (const request of collector.requests) {
    const body = JSON.parse(request.body) as {
      resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
    };
    for (const resource of body.resourceSpans)
      for (const scope of resource.scopeSpans) spans.push(...scope.spans);
  }
  return spans;
}

function attribute(span: OtlpSpan, key: string): unknown {
  const found = span.attributes.find((a) => a.key === key);
  return found === undefined ? undefined : Object.values(found.value)[0];
}

const SERVER = 2;
const CLIENT = 3;

describe('trace context and spans', () => {
  it('exports a server span per request and a client span per attempt, linked, with GenAI attributes and no content', async () => {
    const gateway = await startGateway(config(), {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'gateway-test' },
    });
    expect(await ask(gateway, 't')).toBe(200);
    expect(await ask(gateway, 'u')).toBe(200);
    // SIGTERM flushes the batch exporter during the drain (spec 3.2).
    gateway.program.proc.kill('SIGTERM');
    expect((await gateway.program.exited).code).toBe(0);

    const spans = exportedSpans();
    const servers = spans.filter((s) => s.kind === SERVER);
    const clients = spans.filter((s) => s.kind === CLIENT);
    expect(servers).toHaveLength(2);
    expect(clients).toHaveLength(2);
    for (const server of servers) {
      // The client's traceparent is the parent of the request.
      expect(server.traceId).toBe(CLIENT_TRACE);
      expect(server.parentSpanId).toBe(CLIENT_SPAN);
      expect(server.name).toBe('POST /v1/chat/completions');
    }
    for (const client of clients) {
      const parent = servers.find((s) => s.spanId === client.parentSpanId);
      expect(parent, 'every attempt span is a child of a server span').toBeDefined();
      expect(attribute(client, 'gen_ai.operation.name')).toBe('chat');
      expect(attribute(client, 'gateway.attempt')).toBe(1);
    }
    const toTrusted = clients.find((c) => attribute(c, 'gen_ai.request.model') === 'upstream-model')!;
    expect(toTrusted).toBeDefined();
    expect(attribute(toTrusted, 'server.address')).toBe('127.0.0.1');
    expect(attribute(toTrusted, 'server.port')).toBe(trusted.port);

    // The trusted provider got the attempt span as its parent; the untrusted one got nothing.
    const sent = trusted.requests[0]!.headers.traceparent as string;
    expect(sent).toMatch(new RegExp(`^00-${CLIENT_TRACE}-${toTrusted.spanId}-01$`));
    expect(untrusted.requests[0]!.headers.traceparent).toBeUndefined();
    expect(untrusted.requests[0]!.headers.tracestate).toBeUndefined();

    // No prompt or completion content in any exported span.
    const everything = collector.requests.map((r) => r.body).join('');
    expect(everything).not.toContain('secret prompt');
    expect(everything).not.toContain('secret answer');
    expect(everything).toContain('gateway-test');
  });

  it('without an OTLP endpoint: no spans, inbound context forwarded only where allowed', async () => {
    const gateway = await startGateway(config());
    for (const model of ['t', 'u', 'e']) expect(await ask(gateway, model)).toBe(200);
    expect(trusted.requests[0]!.headers.traceparent).toBe(TRACEPARENT);
    expect(optedIn.requests[0]!.headers.traceparent).toBe(TRACEPARENT);
    expect(optedIn.requests[0]!.headers.tracestate).toBe('vendor=1');
    expect(untrusted.requests[0]!.headers.traceparent).toBeUndefined();
    expect(untrusted.requests[0]!.headers.tracestate).toBeUndefined();
    gateway.program.proc.kill('SIGTERM');
    await gateway.program.exited;
    expect(collector.requests).toHaveLength(0);
    expect(gateway.program.logs.find((l) => l.msg === 'tracing')).toMatchObject({ enabled: false });
  });
});
