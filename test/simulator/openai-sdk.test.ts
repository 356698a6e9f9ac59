import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { writeModels, zeroLatencyModel } from './support.js';

/** The official SDK as a real client: normal streams, non-streaming answers, echo directives. */
let sim: StartedSim;
let client: OpenAI;

beforeAll(async () => {
  const { files } = writeModels({
    'zero.toml': zeroLatencyModel('zero', '', 'output_tokens = 6'),
    'tiny.toml': `name = "tiny"\n[latency]\nprefill_ms = 0\ndecode_ms = 5\n[scheduler]\nmax_num_seqs = 1\nmax_waiting = 1\n`,
  });
  sim = await startSim(['--enable-directives', '--model', files[0]!, '--model', files[1]!]);
  client = new OpenAI({ baseURL: `${sim.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await sim?.stop();
});

const FIRST_WORDS = 'Café déjà naïve résumé señor über ';

describe('the openai SDK against sim', () => {
  it('consumes a chat stream: role frame, deltas, finish reason, usage frame with empty choices', async () => {
    const stream = await client.chat.completions.create({
      model: 'zero',
      messages: [{ role: 'user', content: 'Say something' }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 4,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Café déjà naïve résumé ');
    const withFinish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(withFinish).toHaveLength(1);
    expect(withFinish[0]!.choices[0]!.finish_reason).toBe('length');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: 4, total_tokens: last.usage!.prompt_tokens + 4 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it('omits the usage frame unless asked, and stops naturally (finish_reason stop) without max_tokens', async () => {
    const stream = await client.chat.completions.create({
      model: 'zero',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(FIRST_WORDS);
  });

  it('returns the same deterministic text without streaming', async () => {
    const completion = await client.chat.completions.create({
      model: 'zero',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message.content).toBe(FIRST_WORDS);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ completion_tokens: 6 });
  });

  it('streams text completions from token ids and from text, with priority', async () => {
    const stream = await client.completions.create({
      model: 'zero',
      prompt: [1, 2, 3, 4, 5],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 3,
      // vLLM's extension, not in the SDK's types.
      ...({ priority: -1 } as object),
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe('Café déjà naïve ');
    expect(chunks[0]!.object).toBe('text_completion');
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 3 });

    const plain = await client.completions.create({ model: 'zero', prompt: 'Once upon', max_tokens: 2 });
    expect(plain.choices[0]!.text).toBe('Café déjà ');
    expect(plain.choices[0]!.finish_reason).toBe('length');
  });

  it('lists the models', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['zero', 'tiny']);
  });

  it('surfaces a 529 as an APIError with the overloaded body', async () => {
    // One long stream holds the only slot; of three more, one may wait and two are refused.
    const held = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      max_tokens: 2000,
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map(() =>
        client.chat.completions.create({
          model: 'tiny',
          max_tokens: 1,
          messages: [{ role: 'user', content: 'x' }],
        }),
      ),
    );
    const refused = results
      .filter((r) => r.status === 'rejected')
      .map((r) => (r as PromiseRejectedResult).reason);
    expect(refused).toHaveLength(2);
    for (const error of refused) {
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(529);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('queue_saturated');
    }
    held.controller.abort();
  });
});

describe('echo directives', () => {
  it('script the text and the finish reason', async () => {
    const completion = await client.chat.completions.create({
      model: 'zero',
      messages: [
        { role: 'system', content: 'You are a test.' },
        {
          role: 'user',
          content: 'Please answer.\n@sim {"text":"Hello there, tester!","finish_reason":"content_filter"}',
        },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('Hello there, tester!');
    expect(completion.choices[0]!.finish_reason).toBe('content_filter');
  });

  it('script tool calls that the SDK stream helper assembles', async () => {
    const directive = {
      text: 'Let me check.',
      tool_calls: [
        { name: 'get_weather', arguments: { city: 'Zürich', days: 3 } },
        { name: 'get_time', arguments: '{"tz":"Europe/Paris"}', id: 'call_fixed' },
      ],
    };
    const runner = client.chat.completions.stream({
      model: 'zero',
      messages: [{ role: 'user', content: `@sim ${JSON.stringify(directive)}` }],
    });
    const final = await runner.finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Let me check.');
    const calls = choice.message.tool_calls!.map((c) => (c.type === 'function' ? c : undefined)!);
    expect(calls.map((c) => c.function.name)).toEqual(['get_weather', 'get_time']);
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ city: 'Zürich', days: 3 });
    expect(calls[1]!.function.arguments).toBe('{"tz":"Europe/Paris"}');
    expect(calls[1]!.id).toBe('call_fixed');
  });

  it('stream reasoning in reasoning_content before the content', async () => {
    const stream = await client.chat.completions.create({
      model: 'zero',
      messages: [{ role: 'user', content: '@sim {"reasoning":"Think first.","text":"Done."}' }],
      stream: true,
    });
    let reasoning = '';
    let content = '';
    let order = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        order += 'r';
      }
      if (delta?.content) {
        content += delta.content;
        order += 'c';
      }
    }
    expect(reasoning).toBe('Think first.');
    expect(content).toBe('Done.');
    expect(order).toMatch(/^r+c+$/);
  });

  it('work on text completions as raw text', async () => {
    const completion = await client.completions.create({ model: 'zero', prompt: '@sim {"text":"raw text"}' });
    expect(completion.choices[0]!.text).toBe('raw text');
  });

  it('refuse a malformed directive with 400 invalid_echo_directive', async () => {
    const error = await client.chat.completions
      .create({ model: 'zero', messages: [{ role: 'user', content: '@sim {"txt":"typo"}' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_echo_directive');
  });
});
