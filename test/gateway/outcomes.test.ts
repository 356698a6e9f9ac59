import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat, readBody } from '../helpers/client.js';
import {
  completion,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

/**
 * The request outcome (`gateway_requests_total{outcome}`, the server span's `gateway.outcome`): whose
 * doing the end of each request was. Cut and errored streams of every fault mode are covered by the
 * fault matrix (test/reliability/fault-matrix.test.ts); here, each outcome once through a real
 * gateway, read from /metrics.
 */

const KEY = 'sk-outcomes-3b1f';
const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
const chunk = (content: string) =>
  frame({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

/** The upstream's answer, chosen by the model the gateway sends (each target's `gateway_model`). */
const ANSWERS: Record<string, UpstreamHandler> = {
  ok: (_req, res) => {
    const text = JSON.stringify(completion('ok'));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
  },
  status500: (_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"boom","type":"server_error"}}');
  },
  embedded: (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"overloaded","type":"server_error","code":503}}');
  },
  failedResponse: (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      '{"object":"response","status":"failed","error":{"code":"server_error","message":"x"},"output":[]}',
    );
  },
  noDone: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(chunk('a') + chunk('b'));
  },
  // vLLM's order: the engine's error object, then its [DONE], each written on its own.
  errorThenDone: async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const part of [
      chunk('a'),
      frame({ object: 'error', message: 'engine died', code: 500 }),
      'data: [DONE]\n\n',
    ]) {
      res.write(part);
      await sleep(10);
    }
    res.end();
  },
  streamOk: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`${chunk('a')}data: [DONE]\n\n`);
  },
  slowStream: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('a'));
    // Never ends by itself: the client leaves (the gateway aborts this request).
  },
  silent: () => {
    // Accepts, never answers.
  },
};

let upstream: RecordingUpstream;
let gateway: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream((req, res, raw) => {
    const model = (JSON.parse(req.body) as { model: string }).model;
    return ANSWERS[model]!(req, res, raw);
  });
  const target = (model: string) => ({ url: upstream.url, gateway_model: model });
  gateway = await startGateway({
    auth: { key_definitions: { team: { key: KEY } } },
    targets: {
      ...Object.fromEntries(Object.keys(ANSWERS).map((model) => [model, target(model)])),
      keyed: { ...target('ok'), keys: ['team'] },
      deadline: {
        strategy: 'priority',
        fallback: { first_token_timeout_ms: 200 },
        providers: [target('silent')],
      },
      // Nothing listens on port 9 of loopback: the connection is refused.
      unreachable: { url: 'http://127.0.0.1:9' },
    },
  });
}, 30_000);

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

async function post(model: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const path = body.input === undefined ? '/v1/chat/completions' : '/v1/responses';
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body.input === undefined ? chat(model, body) : { model, ...body }),
  });
  return { status: response.status, ...(await readBody(response)) };
}

/** The request count of `model` under `outcome`, once the gateway counted it. */
async function counted(model: string, outcome: string): Promise<number> {
  let value = 0;
  await until(async () => {
    value = metricValue(await gateway.metrics(), 'gateway_requests_total', { model, outcome }) ?? 0;
    return value > 0;
  });
  return value;
}

describe('request outcomes', () => {
  it('completed: a response below 400 that reached its end, a stream with its [DONE]', async () => {
    expect((await post('ok')).status).toBe(200);
    expect((await post('streamOk', { stream: true })).status).toBe(200);
    expect(await counted('ok', 'completed')).toBe(1);
    expect(await counted('streamOk', 'completed')).toBe(1);
  });

  it('upstream_error: an error status, an error inside a 200, and no provider reachable', async () => {
    expect((await post('status500')).status).toBe(500);
    expect((await post('embedded')).status).toBe(200);
    expect((await post('failedResponse', { input: 'hi' })).status).toBe(200);
    expect((await post('unreachable')).status).toBe(503);
    for (const model of ['status500', 'embedded', 'failedResponse', 'unreachable'])
      expect(await counted(model, 'upstream_error'), model).toBe(1);
  });

  it('upstream_cut: a chat stream that ends cleanly without its [DONE] is never completed', async () => {
    const got = await post('noDone', { stream: true });
    // The client's response is cut after the provider's last byte: never a clean, complete-looking end.
    expect(got.failed).toBe(true);
    expect(await counted('noDone', 'upstream_cut')).toBe(1);
    expect(
      metricValue(await gateway.metrics(), 'gateway_requests_total', {
        model: 'noDone',
        outcome: 'completed',
      }),
    ).toBe(undefined);
  });

  it("upstream_error: an error event is a stream's last word; its [DONE] is not forwarded", async () => {
    const got = await post('errorThenDone', { stream: true });
    const text = got.bytes.toString('utf8');
    expect(text).toContain('"object":"error"');
    expect(text).not.toContain('[DONE]');
    expect(got.failed).toBe(true);
    expect(await counted('errorThenDone', 'upstream_error')).toBe(1);
    // The openai SDK does not know this error's shape: only the broken transfer stops it from
    // returning the text before the error as the whole answer.
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const read = async () => {
      let answer = '';
      const stream = await client.chat.completions.create({
        model: 'errorThenDone',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      for await (const part of stream) answer += part.choices?.[0]?.delta?.content ?? '';
      return answer;
    };
    await expect(read()).rejects.toThrow();
  });

  it('client_cancelled: the client leaves mid-stream', async () => {
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('slowStream', { stream: true })),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    expect(await counted('slowStream', 'client_cancelled')).toBe(1);
  });

  it('timeout: no first token before the deadline', async () => {
    const started = performance.now();
    expect((await post('deadline', { stream: true })).status).toBe(504);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await counted('deadline', 'timeout')).toBe(1);
  });

  it('rejected: the gateway refuses the request itself', async () => {
    expect((await post('keyed', {}, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post('keyed', {}, { authorization: `Bearer ${KEY}` })).status).toBe(200);
    expect(await counted('keyed', 'rejected')).toBe(1);
    expect(await counted('keyed', 'completed')).toBe(1);
    await sleep(50);
    // The status label still says what the client got.
    expect(
      metricValue(await gateway.metrics(), 'gateway_requests_total', {
        model: 'keyed',
        status: '401',
        outcome: 'rejected',
      }),
    ).toBe(1);
  });

  it('the access log says the same for every request above', async () => {
    const accessLines = () => gateway.program.logs.filter((line) => line.log === 'access');
    // Lines are written in batches (at most 200 ms apart).
    await until(async () => accessLines().some((line) => line.model === 'keyed' && line.status === 200));
    const access = accessLines();
    const outcomeOf = (model: string) =>
      access.filter((line) => line.model === model).map((line) => line.outcome);
    expect(outcomeOf('noDone')).toEqual(['upstream_cut']);
    expect(outcomeOf('slowStream')).toEqual(['client_cancelled']);
    expect(outcomeOf('embedded')).toEqual(['upstream_error']);
    expect(outcomeOf('deadline')).toEqual(['timeout']);
    const cancelled = access.find((line) => line.model === 'slowStream')!;
    // The client left after the head and a first frame: the status it got, the frame's time.
    expect(cancelled).toMatchObject({ status: 200, attempts: 1, provider: upstream.url });
    expect(cancelled.ttftMs).toBeGreaterThan(0);
  });
});
