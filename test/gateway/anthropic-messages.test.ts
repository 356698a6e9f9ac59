import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';
import { writeModels } from '../simulator/support.js';

/**
 * The Anthropic Messages API through the gateway, observed with the official `@anthropic-ai/sdk`:
 * passed through to a provider that speaks it (`api: anthropic`) and translated for one that speaks
 * only chat completions (the simulator serves both), streamed and not, with tool use, thinking,
 * images, usage and the gateway's own errors in Anthropic's shape.
 */

const KEY = 'sk-messages-alice-51c2';
const PRICES = {
  prompt_per_million: 3,
  completion_per_million: 15,
  cached_prompt_per_million: 0.3,
  cache_write_per_million: 3.75,
};

let sim: StartedSim;
let recorder: RecordingUpstream;
let gateway: StartedGateway;
let strict: StartedGateway;

/** Clients of both routes: `native` is passed through, `chat` is translated. */
const ROUTES = ['native', 'chat'] as const;
type Route = (typeof ROUTES)[number];

function client(options: { apiKey?: string; authToken?: string } = { apiKey: KEY }): Anthropic {
  return new Anthropic({ baseURL: gateway.url, maxRetries: 0, ...options });
}

beforeAll(async () => {
  const { files } = writeModels({
    'm.toml':
      'name = "m"\noutput_tokens = 8\n[latency]\nprefill_ms = 0\nprefill_per_token_ms = 0\ndecode_ms = 1\ndecode_per_seq_ms = 0\n[prefix_cache]\ncapacity_tokens = 100000\n',
  });
  [sim, recorder] = await Promise.all([
    startSim(['--enable-directives', '--model', files[0]!]),
    startUpstream(),
  ]);
  strict = await startGateway({
    strict_mode: true,
    targets: {
      native: { url: `${sim.baseUrl}/v1`, api: 'anthropic', gateway_model: 'm' },
      chat: { url: `${sim.baseUrl}/v1`, gateway_model: 'm' },
      'recorded-native': { url: `${recorder.url}/v1`, api: 'anthropic' },
      'recorded-chat': { url: `${recorder.url}/v1` },
    },
  });
  gateway = await startGateway({
    auth: { key_definitions: { alice: { key: KEY, labels: { account: 'team-a' } } } },
    targets: {
      native: {
        url: `${sim.baseUrl}/v1`,
        api: 'anthropic',
        gateway_model: 'm',
        keys: ['alice'],
        pricing: PRICES,
      },
      chat: { url: `${sim.baseUrl}/v1`, gateway_model: 'm', keys: ['alice'], pricing: PRICES },
      recorded: { url: `${recorder.url}/v1`, api: 'anthropic', keys: ['alice'], pricing: PRICES },
      // Chat first: what it cannot take goes to the provider that speaks the Messages API.
      mixed: {
        strategy: 'priority',
        providers: [
          { url: `${sim.baseUrl}/v1`, name: 'chat-side', gateway_model: 'm' },
          { url: `${sim.baseUrl}/v1`, name: 'native-side', api: 'anthropic', gateway_model: 'm' },
        ],
        keys: ['alice'],
      },
      limited: {
        url: `${sim.baseUrl}/v1`,
        api: 'anthropic',
        gateway_model: 'm',
        keys: ['alice'],
        rate_limit: { requests_per_second: 0.01, burst_size: 1 },
      },
    },
  });
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), strict?.stop()]);
  await Promise.all([sim?.stop(), recorder?.close()]);
});

const directive = (value: unknown): string => `@sim ${JSON.stringify(value)}`;

describe.each(ROUTES)('the Messages API, %s', (route: Route) => {
  it('answers a non-streamed request with a whole message and its usage', async () => {
    const message = await client().messages.create({
      model: route,
      max_tokens: 64,
      system: 'Be brief.',
      messages: [{ role: 'user', content: directive({ text: 'Hello there.' }) }],
    });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.model).toBe(route === 'native' ? 'm' : route);
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello there.' })]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('streams a message the SDK assembles, ending with message_stop', async () => {
    const stream = client().messages.stream({
      model: route,
      max_tokens: 64,
      messages: [{ role: 'user', content: directive({ text: 'One two three four.' }) }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'One two three four.' })]);
    expect(message.stop_reason).toBe('end_turn');
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(types).toContain('content_block_delta');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('round-trips a tool call: the input arrives as the object, the result goes back', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const ask: Anthropic.MessageParam = {
      role: 'user',
      content: directive({
        tool_calls: [{ name: 'get_weather', arguments: { city: 'Zürich', days: [1, 2] } }],
      }),
    };
    const stream = client().messages.stream({ model: route, max_tokens: 64, tools, messages: [ask] });
    const first = await stream.finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block) => block.type === 'tool_use');
    expect(call).toMatchObject({
      type: 'tool_use',
      name: 'get_weather',
      input: { city: 'Zürich', days: [1, 2] },
    });

    const second = await client().messages.create({
      model: route,
      max_tokens: 64,
      tools,
      messages: [
        ask,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: call!.type === 'tool_use' ? call!.id : '', content: 'Sunny' },
          ],
        },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content[0]?.type).toBe('text');
  });

  it('returns thinking with a signature the next turn is accepted with, unchanged', async () => {
    const ask: Anthropic.MessageParam = {
      role: 'user',
      content: directive({ reasoning: 'Think it over.', text: 'Done.' }),
    };
    const first = await client()
      .messages.stream({ model: route, max_tokens: 64, messages: [ask] })
      .finalMessage();
    const thinking = first.content.find((block) => block.type === 'thinking');
    expect(thinking).toMatchObject({ type: 'thinking', thinking: 'Think it over.' });
    expect(thinking?.type === 'thinking' && thinking.signature.length).toBeGreaterThan(0);

    const next = await client().messages.create({
      model: route,
      max_tokens: 64,
      messages: [ask, { role: 'assistant', content: first.content }, { role: 'user', content: 'And?' }],
    });
    expect(next.content[0]?.type).toBe('text');

    // A thinking block altered on its way back is refused (by the provider or by the translation).
    const altered = first.content.map((block) =>
      block.type === 'thinking' ? { ...block, thinking: 'Something else.' } : block,
    );
    const refused = await client()
      .messages.create({
        model: route,
        max_tokens: 64,
        messages: [ask, { role: 'assistant', content: altered }, { role: 'user', content: 'And?' }],
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
  });

  it('takes an image block', async () => {
    const pixel =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const message = await client().messages.create({
      model: route,
      max_tokens: 16,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
            { type: 'text', text: directive({ text: 'A pixel.' }) },
          ],
        },
      ],
    });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'A pixel.' })]);
  });

  it('raises on a stream the provider cut, never returning the partial message', async () => {
    const stream = client().messages.stream(
      { model: route, max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] },
      { headers: { 'x-sim-fault': 'cut_between_frames;after_chunks=2' } },
    );
    await expect(stream.finalMessage()).rejects.toThrow();
  });
});

describe('the Messages API, around the answer', () => {
  it('accepts the key in x-api-key or as a bearer token, and answers a missing key in Anthropic shape', async () => {
    const body = {
      model: 'native',
      max_tokens: 8,
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    await expect(client({ authToken: KEY }).messages.create(body)).resolves.toMatchObject({
      type: 'message',
    });
    const refused = await client({ apiKey: 'sk-wrong' })
      .messages.create(body)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((refused as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', message: expect.any(String) },
    });
  });

  it('says which request fields a translation dropped, in a response header', async () => {
    const { response } = await client()
      .messages.create({
        model: 'chat',
        max_tokens: 8,
        context_management: { edits: [] },
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hi' }],
      } as Anthropic.MessageCreateParamsNonStreaming)
      .withResponse();
    expect(response.headers.get('x-gateway-translation-dropped')?.split(', ').sort()).toEqual([
      'cache_control',
      'context_management',
    ]);
    const passed = await client()
      .messages.create({ model: 'native', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(passed.response.headers.get('x-gateway-translation-dropped')).toBeNull();
  });

  it('lists the models in Anthropic shape for a client that sends anthropic-version', async () => {
    const page = await client().models.list();
    expect(page.data.map((model) => model.id)).toEqual(['native', 'chat', 'recorded', 'mixed', 'limited']);
    expect(page.data[0]).toMatchObject({ type: 'model', display_name: 'native' });
    expect(Number.isNaN(Date.parse(page.data[0]!.created_at))).toBe(false);
    const openai = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(((await openai.json()) as { object: string }).object).toBe('list');
  });

  it('counts tokens: passed to a provider that speaks the API, estimated for a chat provider', async () => {
    const body = {
      max_tokens: 8,
      system: 'Be brief.',
      messages: [{ role: 'user' as const, content: 'Count the tokens of this sentence, please.' }],
    };
    const native = await client().messages.countTokens({ ...body, model: 'native' });
    const simulated = await fetch(`${sim.baseUrl}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, model: 'm' }),
    });
    expect(native.input_tokens).toBe(((await simulated.json()) as { input_tokens: number }).input_tokens);
    const { data: estimated, response } = await client()
      .messages.countTokens({ ...body, model: 'chat' })
      .withResponse();
    expect(response.headers.get('x-gateway-token-count')).toBe('estimate');
    expect(estimated.input_tokens).toBeGreaterThan(5);
    expect(estimated.input_tokens).toBeLessThan(40);
  });

  it("answers the gateway's own limits in Anthropic shape, with the rate-limit headers", async () => {
    const ask = { model: 'limited', max_tokens: 8, messages: [{ role: 'user' as const, content: 'hi' }] };
    await client().messages.create(ask);
    const refused = await client()
      .messages.create(ask)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const error = refused as InstanceType<typeof Anthropic.RateLimitError>;
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(error.headers.get('x-ratelimit-remaining-requests')).toBe('0');
  });

  it('names only header-safe dropped fields, counting the others', async () => {
    const { response } = await client()
      .messages.create({
        model: 'chat',
        max_tokens: 8,
        ключ: 1,
        'a b': 2,
        messages: [{ role: 'user', content: 'hi' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .withResponse();
    expect(response.headers.get('x-gateway-translation-dropped')).toBe('(2 more)');
  });

  it('prices cache writes at cache_write_per_million', async () => {
    recorder.respondWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'up',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: 10,
            cache_creation_input_tokens: 1000,
            cache_read_input_tokens: 100,
            output_tokens: 5,
          },
        }),
      );
    });
    const labels = { model: 'recorded', account: 'team-a', key: 'alice' };
    const read = async (name: string, extra: Record<string, string> = {}): Promise<number> =>
      metricValue(await gateway.metrics(), name, { ...labels, ...extra }) ?? 0;
    const before = await read('gateway_cost_total');
    const writesBefore = await read('gateway_tokens_total', { type: 'cache_write' });
    await client().messages.create({
      model: 'recorded',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await until(
      async () => (await read('gateway_tokens_total', { type: 'cache_write' })) - writesBefore === 1000,
    );
    const expected =
      (10 * PRICES.prompt_per_million +
        100 * PRICES.cached_prompt_per_million +
        1000 * PRICES.cache_write_per_million +
        5 * PRICES.completion_per_million) /
      1e6;
    expect((await read('gateway_cost_total')) - before).toBeCloseTo(expected, 9);
  });

  it('sends what a mixed pool cannot translate to its provider that speaks the API, token counts too', async () => {
    const ask: Anthropic.MessageParam = {
      role: 'user',
      content: directive({ reasoning: 'Hmm.', text: 'Yes.' }),
    };
    // A thinking block the simulator signed: no chat provider can take it back.
    const first = await client().messages.create({ model: 'native', max_tokens: 32, messages: [ask] });
    const next = await client().messages.create({
      model: 'mixed',
      max_tokens: 32,
      messages: [ask, { role: 'assistant', content: first.content }, { role: 'user', content: 'And?' }],
    });
    expect(next.content[0]?.type).toBe('text');
    const { data, response } = await client()
      .messages.countTokens({ model: 'mixed', messages: [{ role: 'user', content: 'Count me.' }] })
      .withResponse();
    expect(response.headers.get('x-gateway-token-count')).toBeNull();
    expect(data.input_tokens).toBeGreaterThan(0);
  });

  it('answers an unknown model with not_found_error', async () => {
    const refused = await client()
      .messages.create({ model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('refuses what a chat provider cannot take, naming the field', async () => {
    const refused = await client()
      .messages.create({
        model: 'chat',
        max_tokens: 8,
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
        messages: [{ role: 'user', content: 'hi' }],
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    const error = (refused as InstanceType<typeof Anthropic.BadRequestError>).error as {
      error: { message: string };
    };
    expect(error.error.message).toContain('tools[0].type');
  });

  it('passes the request through byte for byte, with the version and beta headers, never the key', async () => {
    recorder.requests.length = 0;
    const raw =
      '{"model":"recorded","max_tokens":8,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],"thinking":{"type":"adaptive"}}';
    const response = await fetch(`${gateway.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': KEY,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'interleaved-thinking-2025-05-14',
      },
      body: raw,
    });
    await response.arrayBuffer();
    const seen = recorder.requests.at(-1)!;
    expect(seen.url).toBe('/v1/messages?beta=true');
    expect(seen.body).toBe(raw);
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    expect(seen.headers['x-api-key']).toBeUndefined();
  });

  it('counts usage and cost from message_start and message_delta, cache reads included', async () => {
    // The provider label of a URL target is its URL: the series is found by the other labels.
    const labels = { model: 'native', account: 'team-a', key: 'alice' };
    const read = async (type: string): Promise<number> =>
      metricValue(await gateway.metrics(), 'gateway_tokens_total', { ...labels, type }) ?? 0;
    const cost = async (): Promise<number> =>
      metricValue(await gateway.metrics(), 'gateway_cost_total', labels) ?? 0;
    const before = { prompt: await read('prompt'), cached: await read('cached_prompt'), cost: await cost() };
    const history: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: `${'A long shared prefix of words. '.repeat(40)}${directive({ text: 'ok' })}`,
      },
    ];
    const first = await client()
      .messages.stream({ model: 'native', max_tokens: 8, messages: history })
      .finalMessage();
    const second = await client()
      .messages.stream({ model: 'native', max_tokens: 8, messages: history })
      .finalMessage();
    const cacheRead = (m: Anthropic.Message): number => m.usage.cache_read_input_tokens ?? 0;
    const prompt = (m: Anthropic.Message): number =>
      m.usage.input_tokens + cacheRead(m) + (m.usage.cache_creation_input_tokens ?? 0);
    expect(cacheRead(second)).toBeGreaterThan(0);
    await until(async () => (await read('prompt')) - before.prompt === prompt(first) + prompt(second));
    const cached = cacheRead(first) + cacheRead(second);
    expect((await read('cached_prompt')) - before.cached).toBe(cached);
    const uncached = prompt(first) + prompt(second) - cached;
    const output = first.usage.output_tokens + second.usage.output_tokens;
    const expected =
      (uncached * PRICES.prompt_per_million +
        cached * PRICES.cached_prompt_per_million +
        output * PRICES.completion_per_million) /
      1e6;
    expect((await cost()) - before.cost).toBeCloseTo(expected, 9);
  });
});

describe('the Messages API in strict mode', () => {
  const strictClient = (): Anthropic =>
    new Anthropic({ baseURL: strict.url, apiKey: 'unused', maxRetries: 0 });

  it('refuses a request that does not match the schema, naming the field, in Anthropic shape', async () => {
    const refused = await strictClient()
      .messages.create({
        model: 'native',
        max_tokens: 8,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }],
          },
        ],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    const body = (refused as InstanceType<typeof Anthropic.BadRequestError>).error as {
      type: string;
      error: { type: string; message: string };
    };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('messages[0].content[0].source');
  });

  it('serves a valid request with beta fields it does not know, both routes', async () => {
    for (const model of ['native', 'chat']) {
      const message = await strictClient().messages.create({
        model,
        max_tokens: 8,
        context_management: { edits: [] },
        messages: [{ role: 'user', content: directive({ text: 'Fine.' }) }],
      } as Anthropic.MessageCreateParamsNonStreaming);
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Fine.' })]);
    }
  });

  it("never forwards an untrusted provider's error words, passed through or translated", async () => {
    const secret = 'SECRET-UPSTREAM-DETAIL';
    recorder.respondWith((req, res) => {
      if (req.url.includes('/messages')) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: secret } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: 'Hi' } }] })}\n\n`,
      );
      res.end(`data: ${JSON.stringify({ error: { message: secret, code: 503 } })}\n\n`);
    });
    const native = await fetch(`${strict.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'recorded-native',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const nativeText = await native.text();
    expect(native.status).toBe(502);
    expect(nativeText).not.toContain(secret);
    expect(JSON.parse(nativeText)).toMatchObject({ type: 'error', error: { type: 'api_error' } });

    const translated = await fetch(`${strict.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'recorded-chat',
        max_tokens: 8,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const streamText = await translated.text();
    expect(streamText).not.toContain(secret);
    expect(streamText.trimEnd().split('\n\n').at(-1)).toMatch(
      /^event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/,
    );
  });

  it('ends a stream the provider cut with an Anthropic error event, both routes', async () => {
    for (const model of ['native', 'chat']) {
      const response = await fetch(`${strict.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-fault': 'no_done;after_chunks=2' },
        body: JSON.stringify({
          model,
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text).not.toContain('message_stop');
      expect(text.trimEnd().split('\n\n').at(-1)).toMatch(
        /^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/,
      );
    }
  });
});
