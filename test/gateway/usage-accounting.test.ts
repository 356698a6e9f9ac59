import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat, readBody } from '../helpers/client.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';
import { latency, simModels } from '../reliability/support.js';

/**
 * Token usage and cost per account and key, time to first token, upstream time and the access log,
 * through a real gateway in front of the simulator (chat and text completions, streamed and not)
 * and a stub speaking the Responses and embeddings APIs. Every figure is read back from /metrics
 * and compared with the usage the client itself received.
 */

const ALICE = 'sk-usage-alice-7c1d';
const UNNAMED = 'sk-usage-unnamed-4e2a';
const PRICES = { prompt_per_million: 2, completion_per_million: 8, cached_prompt_per_million: 0.5 };

let sim: StartedSim;
let stub: RecordingUpstream;
let gateway: StartedGateway;

const responsesUsage = {
  input_tokens: 11,
  output_tokens: 7,
  output_tokens_details: { reasoning_tokens: 3 },
  input_tokens_details: { cached_tokens: 4 },
  total_tokens: 18,
};

beforeAll(async () => {
  const models = simModels({ tiny: latency(0, 1, 5) });
  [sim, stub] = await Promise.all([
    startSim(['--model', models.tiny!]),
    startUpstream((req, res) => {
      const body = JSON.parse(req.body) as { stream?: boolean };
      if (req.url.endsWith('/embeddings')) {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_provider_1' });
        res.end(JSON.stringify({ object: 'list', data: [], usage: { prompt_tokens: 6, total_tokens: 6 } }));
        return;
      }
      const response = {
        object: 'response',
        status: 'completed',
        error: null,
        output: [],
        usage: responsesUsage,
      };
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { ...response, usage: null } })}\n\n`,
        );
        res.end(
          `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response })}\n\n`,
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(response));
    }),
  ]);
  gateway = await startGateway({
    auth: {
      key_definitions: {
        alice: { key: ALICE, labels: { account: 'team-a' } },
        anon: { key: UNNAMED },
      },
    },
    targets: {
      tiny: { url: `${sim.baseUrl}/v1`, keys: ['alice', 'anon'], pricing: PRICES },
      stub: {
        strategy: 'priority',
        providers: [{ url: `${stub.url}/v1`, name: 'stub', pricing: PRICES }],
        keys: ['alice'],
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([sim?.stop(), stub?.close()]);
});

const provider = () => `${sim.baseUrl}/v1`;

async function post(path: string, body: unknown, key = ALICE, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  const { bytes } = await readBody(response);
  return { status: response.status, headers: response.headers, text: bytes.toString('utf8') };
}

async function metrics(): Promise<string> {
  return gateway.metrics();
}

function tokens(text: string, labels: Record<string, string>): number {
  return metricValue(text, 'gateway_tokens_total', labels) ?? 0;
}

/** Waits until `read` gives a value other than `before`. */
async function changed(read: () => Promise<number>, before: number): Promise<number> {
  let value = before;
  await until(async () => (value = await read()) !== before);
  return value;
}

interface ClientUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

describe('token usage and cost', () => {
  it('a non-streamed chat completion counts its tokens and cost per account and key', async () => {
    const labels = { model: 'tiny', provider: provider(), account: 'team-a', key: 'alice' };
    const before = await metrics();
    const got = await post('/v1/chat/completions', chat('tiny'));
    expect(got.status).toBe(200);
    const usage = (JSON.parse(got.text) as { usage: ClientUsage }).usage;
    const prompt = await changed(
      async () => tokens(await metrics(), { ...labels, type: 'prompt' }),
      tokens(before, { ...labels, type: 'prompt' }),
    );
    const after = await metrics();
    expect(prompt - tokens(before, { ...labels, type: 'prompt' })).toBe(usage.prompt_tokens);
    expect(
      tokens(after, { ...labels, type: 'completion' }) - tokens(before, { ...labels, type: 'completion' }),
    ).toBe(usage.completion_tokens);
    const cost =
      (metricValue(after, 'gateway_cost_total', labels) ?? 0) -
      (metricValue(before, 'gateway_cost_total', labels) ?? 0);
    expect(cost).toBeCloseTo((usage.prompt_tokens * 2 + usage.completion_tokens * 8) / 1e6, 12);
    // The key's name and account, never the key itself.
    expect(after).not.toContain(ALICE);
  });

  it('an unnamed key is counted with an empty key label, and the request id comes back', async () => {
    const got = await post('/v1/chat/completions', chat('tiny'), UNNAMED, { 'x-request-id': 'client-id-1' });
    expect(got.status).toBe(200);
    expect(got.headers.get('x-request-id')).toBe('client-id-1');
    const labels = { model: 'tiny', provider: provider(), account: '', key: 'anon', type: 'prompt' };
    expect(await changed(async () => tokens(await metrics(), labels), 0)).toBeGreaterThan(0);
  });

  it('streams: counted from the usage chunk when the client asked for it, else counted as missing', async () => {
    const labels = {
      model: 'tiny',
      provider: provider(),
      account: 'team-a',
      key: 'alice',
      type: 'completion',
    };
    const missing = { model: 'tiny', provider: provider() };
    for (const path of ['/v1/chat/completions', '/v1/completions']) {
      const base = path.endsWith('chat/completions') ? chat('tiny') : { model: 'tiny', prompt: 'hi' };
      const before = await metrics();
      const streamed = await post(path, { ...base, stream: true, stream_options: { include_usage: true } });
      const usageLine = streamed.text.split('\n').find((line) => line.includes('"usage":{'))!;
      const usage = (JSON.parse(usageLine.slice('data: '.length)) as { usage: ClientUsage }).usage;
      const after = await changed(async () => tokens(await metrics(), labels), tokens(before, labels));
      expect(after - tokens(before, labels), path).toBe(usage.completion_tokens);
      const firstTokens =
        metricValue(await metrics(), 'gateway_time_to_first_token_seconds_count', missing) ?? 0;
      expect(firstTokens).toBeGreaterThan(
        metricValue(before, 'gateway_time_to_first_token_seconds_count', missing) ?? 0,
      );

      const missingBefore = metricValue(await metrics(), 'gateway_usage_missing_total', missing) ?? 0;
      expect((await post(path, { ...base, stream: true })).status).toBe(200);
      expect(
        await changed(
          async () => metricValue(await metrics(), 'gateway_usage_missing_total', missing) ?? 0,
          missingBefore,
        ),
      ).toBe(missingBefore + 1);
    }
  });

  it('the Responses API (streamed and not) and embeddings, with reasoning and cached tokens priced apart', async () => {
    const labels = { model: 'stub', provider: 'stub', account: 'team-a', key: 'alice' };
    const before = await metrics();
    expect((await post('/v1/responses', { model: 'stub', input: 'hi' })).status).toBe(200);
    expect((await post('/v1/responses', { model: 'stub', input: 'hi', stream: true })).status).toBe(200);
    expect((await post('/v1/embeddings', { model: 'stub', input: 'hi' })).status).toBe(200);
    const delta = async (type: string) =>
      tokens(await metrics(), { ...labels, type }) - tokens(before, { ...labels, type });
    await until(async () => (await delta('prompt')) === 2 * 11 + 6);
    expect(await delta('completion')).toBe(2 * 7);
    expect(await delta('reasoning')).toBe(2 * 3);
    expect(await delta('cached_prompt')).toBe(2 * 4);
    const after = await metrics();
    const cost =
      (metricValue(after, 'gateway_cost_total', labels) ?? 0) -
      (metricValue(before, 'gateway_cost_total', labels) ?? 0);
    // Uncached prompt at 2, cached at 0.5, completion at 8, per million.
    expect(cost).toBeCloseTo((2 * ((11 - 4) * 2 + 4 * 0.5 + 7 * 8) + 6 * 2) / 1e6, 12);
    expect(
      metricValue(after, 'gateway_upstream_duration_seconds_count', { model: 'stub', provider: 'stub' }),
    ).toBeGreaterThanOrEqual(3);
  });

  it('the official openai SDK with stream_options.include_usage gets its usage chunk, and it is counted', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: ALICE, maxRetries: 0 });
    const labels = { model: 'tiny', provider: provider(), account: 'team-a', key: 'alice', type: 'prompt' };
    const before = tokens(await metrics(), labels);
    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect((await changed(async () => tokens(await metrics(), labels), before)) - before).toBe(
      usage!.prompt_tokens,
    );
  });
});

describe('access log', () => {
  const accessLines = () => gateway.program.logs.filter((line) => line.log === 'access');

  it('one line per finished request with its fields, never the key; the request id is returned and sent upstream', async () => {
    const got = await post('/v1/responses', { model: 'stub', input: 'hi' });
    const id = got.headers.get('x-request-id')!;
    // A made id has a version-4 UUID's shape.
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(stub.requests.at(-1)!.headers['x-request-id']).toBe(id);
    await until(async () => accessLines().some((line) => line.requestId === id));
    const line = accessLines().find((l) => l.requestId === id)!;
    expect(line).toMatchObject({
      msg: 'request finished',
      method: 'POST',
      path: '/v1/responses',
      model: 'stub',
      provider: 'stub',
      status: 200,
      outcome: 'completed',
      attempts: 1,
      promptTokens: 11,
      completionTokens: 7,
      reasoningTokens: 3,
      cachedPromptTokens: 4,
      account: 'team-a',
      key: 'alice',
      traffic: 'realtime',
      ttftMs: null,
      traceId: null,
      client: '127.0.0.1',
    });
    expect(typeof line.durationMs).toBe('number');
    expect(typeof line.time).toBe('string');
    expect(JSON.stringify(accessLines())).not.toContain(ALICE);
  });

  it("the provider's own request id is kept under x-upstream-request-id", async () => {
    const got = await post('/v1/embeddings', { model: 'stub', input: 'hi' }, ALICE, {
      'x-request-id': 'mine',
    });
    expect(got.headers.get('x-request-id')).toBe('mine');
    expect(got.headers.get('x-upstream-request-id')).toBe('req_provider_1');
  });

  it('a rejection and a stream carry their outcome and first-token time', async () => {
    const rejected = await post('/v1/chat/completions', chat('tiny'), 'sk-wrong');
    expect(rejected.status).toBe(401);
    const rejectedId = rejected.headers.get('x-request-id')!;
    const streamed = await post('/v1/chat/completions', { ...chat('tiny'), stream: true });
    const streamedId = streamed.headers.get('x-request-id')!;
    expect(streamedId).not.toBe(rejectedId);
    await until(
      async () =>
        accessLines().filter((l) => l.requestId === rejectedId || l.requestId === streamedId).length === 2,
    );
    expect(accessLines().find((l) => l.requestId === rejectedId)).toMatchObject({
      status: 401,
      outcome: 'rejected',
      attempts: 0,
      provider: '',
      key: null,
      promptTokens: null,
    });
    const stream = accessLines().find((l) => l.requestId === streamedId)!;
    expect(stream).toMatchObject({ status: 200, outcome: 'completed', attempts: 1 });
    expect(stream.ttftMs).toBeGreaterThan(0);
    expect(stream.ttftMs as number).toBeLessThanOrEqual(stream.durationMs as number);
  });
});

describe('usage.request_in_streams', () => {
  const chunkOf = (content: string) => ({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  });
  /** A provider that, like OpenAI, adds `"usage": null` to each chunk and a usage chunk when asked. */
  const providerStream = (includeUsage: boolean): string => {
    const events = ['Hel', 'lo'].map((c) => ({ ...chunkOf(c), ...(includeUsage ? { usage: null } : {}) }));
    if (includeUsage)
      events.push({
        ...chunkOf(''),
        choices: [],
        usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
      } as never);
    return `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
  };
  let upstream: RecordingUpstream;
  let raw: StartedGateway;
  let strict: StartedGateway;

  beforeAll(async () => {
    upstream = await startUpstream(async (req, res) => {
      const body = JSON.parse(req.body) as { stream_options?: { include_usage?: boolean } };
      const text = providerStream(body.stream_options?.include_usage === true);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // One event per write, as providers send them.
      for (const part of text.split(/(?<=\n\n)/)) {
        res.write(part);
        await new Promise((r) => setTimeout(r, 2));
      }
      res.end();
    });
    const config = { usage: { request_in_streams: true }, targets: { up: { url: upstream.url } } };
    [raw, strict] = await Promise.all([startGateway(config), startGateway({ ...config, strict_mode: true })]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([raw?.stop(), strict?.stop()]);
    await upstream?.close();
  });

  const stream = async (gateway: StartedGateway, extra: Record<string, unknown> = {}) => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...chat('up'), stream: true, ...extra }),
    });
    return (await readBody(response)).bytes.toString('utf8');
  };
  const counted = async (gateway: StartedGateway) =>
    metricValue(await gateway.metrics(), 'gateway_tokens_total', { model: 'up', type: 'prompt' }) ?? 0;

  it('a client that asked for usage gets the provider stream byte for byte, and its body unchanged', async () => {
    const body = { ...chat('up'), stream: true, stream_options: { include_usage: true } };
    const got = await stream(raw, { stream_options: { include_usage: true } });
    expect(got).toBe(providerStream(true));
    expect(upstream.requests.at(-1)!.body).toBe(JSON.stringify(body));
  });

  it('a client that did not ask gets the stream without the usage chunk, and the usage is counted', async () => {
    const before = await counted(raw);
    const got = await stream(raw);
    const sent = JSON.parse(upstream.requests.at(-1)!.body) as { stream_options?: unknown };
    expect(sent.stream_options).toEqual({ include_usage: true });
    const expected = providerStream(true).replace(/data: \{[^\n]*"choices":\[\],[^\n]*\n\n/, '');
    expect(expected).not.toBe(providerStream(true));
    expect(got).toBe(expected);
    expect((await changed(async () => counted(raw), before)) - before).toBe(9);
  });

  it('strict mode re-emits the stream without the usage chunk too', async () => {
    const before = await counted(strict);
    const got = await stream(strict);
    expect(got).not.toContain('"usage":{');
    expect(got).toContain('Hel');
    expect(got.endsWith('data: [DONE]\n\n')).toBe(true);
    expect((await changed(async () => counted(strict), before)) - before).toBe(9);
    // Asked for by the client, the usage chunk is part of the strict stream.
    expect(await stream(strict, { stream_options: { include_usage: true } })).toContain('"usage":{');
  });
});
