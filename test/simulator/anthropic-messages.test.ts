/**
 * Anthropic's Messages API on the simulator, through the real program over loopback HTTP: answers
 * parsed and accumulated as a client does, usage and prefix-cache reads, echo directives, thinking
 * signatures, stop sequences, count_tokens, errors in Anthropic's shape and the shared metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import { postMessages, streamMessages, type Json } from './anthropic-client.js';
import { getJson, metricValue, postJson, readMetrics, writeModels, zeroLatencyModel } from './support.js';

let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'zero.toml': zeroLatencyModel('zero', '', 'output_tokens = 6'),
    'cached.toml': zeroLatencyModel('cached', '[prefix_cache]\nblock_tokens = 16\ncapacity_tokens = 4096\n'),
    'sat.toml': `name = "sat"
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = 20
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = 1
max_waiting = 1
`,
  });
  sim = await startSim(['--enable-directives', ...files.flatMap((f) => ['--model', f])]);
});

afterAll(async () => {
  await sim?.stop();
});

const user = (content: unknown) => ({ role: 'user', content });
const ask = (model: string, content: unknown, extra: Json = {}): Json => ({
  model,
  max_tokens: 1024,
  messages: [user(content)],
  ...extra,
});
const directive = (script: Json): string => `Please answer.\n@sim ${JSON.stringify(script)}`;

async function chatText(model: string, maxTokens?: number): Promise<{ text: string; finish: string }> {
  const res = await postJson(sim.baseUrl, '/v1/chat/completions', {
    model,
    messages: [user('hi')],
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  });
  const choice = (res.json as { choices: { message: { content: string }; finish_reason: string }[] })
    .choices[0]!;
  return { text: choice.message.content, finish: choice.finish_reason };
}

async function countTokens(body: Json): Promise<number> {
  const res = await postMessages(sim.baseUrl, body, { path: '/v1/messages/count_tokens' });
  expect(res.status, res.text).toBe(200);
  expect(Object.keys(res.json!)).toEqual(['input_tokens']);
  return res.json!.input_tokens as number;
}

describe('POST /v1/messages', () => {
  it('answers a message with the text chat would give, end_turn and usage, and a request-id', async () => {
    const chat = await chatText('zero');
    const res = await postMessages(sim.baseUrl, ask('zero', 'hi'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('request-id')).toMatch(/^req_\w+$/);
    const body = res.json!;
    expect(body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'zero',
      content: [{ type: 'text', text: chat.text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(body.id).toMatch(/^msg_\w+$/);
    const usage = body.usage as Json;
    expect(usage).toEqual({
      input_tokens: await countTokens(ask('zero', 'hi')),
      output_tokens: chat.text.trim().split(' ').length,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  it('truncates at max_tokens with stop_reason max_tokens, and ignores a query string', async () => {
    const chat = await chatText('zero', 2);
    expect(chat.finish).toBe('length');
    const res = await postMessages(sim.baseUrl, ask('zero', 'hi', { max_tokens: 2 }), {
      path: '/v1/messages?beta=true',
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      content: [{ type: 'text', text: chat.text }],
      stop_reason: 'max_tokens',
      usage: { output_tokens: 2 },
    });
  });

  it('streams in Anthropic framing: message_start, ping, one text block, message_delta, message_stop, no [DONE]', async () => {
    const whole = await postMessages(sim.baseUrl, ask('zero', 'hi', { max_tokens: 4 }));
    const stream = await streamMessages(sim.baseUrl, ask('zero', 'hi', { max_tokens: 4 }));
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    const types = stream.events.map((e) => e.type);
    expect(types).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array<string>(4).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(stream.events[0]!.message).toMatchObject({
      role: 'assistant',
      model: 'zero',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { output_tokens: 1, input_tokens: (whole.json!.usage as Json).input_tokens },
    });
    expect(stream.events[2]!.content_block).toEqual({ type: 'text', text: '' });
    expect(stream.content).toEqual(whole.json!.content);
    expect(stream.message.stop_reason).toBe('max_tokens');
    expect(stream.message.stop_sequence).toBeNull();
    expect((stream.message.usage as Json).output_tokens).toBe(4);
    expect(stream.sawMessageStop).toBe(true);
  });

  it('accepts what Claude Code sends: block contents, a system role message, tools, thinking and unknown fields', async () => {
    const body = {
      model: 'zero',
      max_tokens: 32000,
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'list files' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Listing.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a.ts b.ts' }] },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
            { type: 'text', text: 'thanks' },
          ],
        },
        { role: 'system', content: 'Reminder: be brief.' },
      ],
      tools: [{ name: 'Bash', description: 'run', input_schema: { type: 'object', properties: {} } }],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      metadata: { user_id: 'u' },
      context_management: { edits: [] },
      output_config: { effort: 'high' },
      temperature: 1,
    };
    const res = await postMessages(sim.baseUrl, body);
    expect(res.status, res.text).toBe(200);
    expect((res.json!.usage as Json).input_tokens).toBe(await countTokens(body));
  });

  it('refuses an unknown model with 404 not_found_error and a missing max_tokens with 400 naming it', async () => {
    const unknown = await postMessages(sim.baseUrl, ask('claude-nope', 'hi'));
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('request-id')).toMatch(/^req_/);
    expect(unknown.json).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining('claude-nope') },
    });

    const missing = await postMessages(sim.baseUrl, { model: 'zero', messages: [user('hi')] });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') },
    });
  });

  it('refuses malformed bodies with invalid_request_error', async () => {
    for (const body of [
      { model: 'zero', max_tokens: 5 },
      ask('zero', 42),
      ask('zero', 'hi', { max_tokens: 0 }),
    ]) {
      const res = await postMessages(sim.baseUrl, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((res.json!.error as Json).type).toBe('invalid_request_error');
    }
    const res = await fetch(`${sim.baseUrl}/v1/messages`, { method: 'POST', body: '{not json' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});

describe('count_tokens and prompt tokens', () => {
  const SYSTEM = 'You are the assistant of a team of support engineers. '.repeat(8);

  it('counts the prompt as chat counts the same conversation, without needing max_tokens', async () => {
    const counted = await countTokens({
      model: 'zero',
      system: SYSTEM,
      messages: [
        user('hello'),
        { role: 'assistant', content: [{ type: 'text', text: 'hi there' }] },
        user('bye'),
      ],
    });
    const chat = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'zero',
      messages: [
        { role: 'system', content: SYSTEM },
        user('hello'),
        { role: 'assistant', content: 'hi there' },
        user('bye'),
      ],
    });
    expect(counted).toBe((chat.json as { usage: { prompt_tokens: number } }).usage.prompt_tokens);
  });

  it('counts the text of tool results and tool calls', async () => {
    const withResult = (text: string) => ({
      model: 'zero',
      messages: [user([{ type: 'tool_result', tool_use_id: 't', content: text }])],
    });
    const short = await countTokens(withResult('x'));
    expect(await countTokens(withResult('x'.repeat(401)))).toBe(short + 100);
    const call = (input: Json) => ({
      model: 'zero',
      messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input }] }],
    });
    expect(await countTokens(call({ a: 'y'.repeat(400) }))).toBeGreaterThan(await countTokens(call({})));
  });

  it('refuses an unknown model with 404', async () => {
    const res = await postMessages(
      sim.baseUrl,
      { model: 'nope', messages: [user('hi')] },
      {
        path: '/v1/messages/count_tokens',
      },
    );
    expect(res.status).toBe(404);
    expect((res.json!.error as Json).type).toBe('not_found_error');
  });

  it('reads a repeated conversation prefix from the prefix cache: input_tokens + cache_read_input_tokens = the prompt', async () => {
    const turn = (last: string): Json => ({
      model: 'cached',
      max_tokens: 2,
      system: SYSTEM,
      messages: [user('first question'), { role: 'assistant', content: 'first answer' }, user(last)],
    });
    const before = await readMetrics(sim.baseUrl);
    const first = await postMessages(sim.baseUrl, turn('second question'));
    const prompt = await countTokens(turn('second question'));
    expect(first.json!.usage).toMatchObject({ input_tokens: prompt, cache_read_input_tokens: 0 });

    const second = await postMessages(sim.baseUrl, turn('another question'));
    const usage = second.json!.usage as Json;
    const read = usage.cache_read_input_tokens as number;
    expect(read).toBeGreaterThan(100);
    expect(read % 16).toBe(0);
    expect((usage.input_tokens as number) + read).toBe(await countTokens(turn('another question')));

    // The same hit reported by the engine's own counter, and by a streamed answer's message_start.
    const after = await readMetrics(sim.baseUrl);
    const hits = (text: string) =>
      metricValue(text, 'vllm:prefix_cache_hits_total', { model_name: 'cached' })!;
    expect(hits(after) - hits(before)).toBe(read);
    const streamed = await streamMessages(sim.baseUrl, turn('another question'));
    expect((streamed.events[0]!.message as Json).usage).toMatchObject({
      input_tokens: usage.input_tokens,
      cache_read_input_tokens: read,
    });
  });
});

describe('echo directives', () => {
  it('scripts the text, streamed and not', async () => {
    const body = ask('zero', directive({ text: 'Scripted café answer.' }));
    const whole = await postMessages(sim.baseUrl, body);
    expect(whole.json).toMatchObject({
      content: [{ type: 'text', text: 'Scripted café answer.' }],
      stop_reason: 'end_turn',
    });
    const stream = await streamMessages(sim.baseUrl, body);
    expect(stream.content).toEqual(whole.json!.content);
    expect(stream.deltas.length).toBeGreaterThan(1);
  });

  it('scripts reasoning as a signed thinking block first, streamed as thinking_delta then signature_delta', async () => {
    const body = ask('zero', directive({ reasoning: 'Let me think about it.', text: 'Done.' }));
    const whole = await postMessages(sim.baseUrl, body);
    const content = whole.json!.content as Json[];
    expect(content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(content[0]).toMatchObject({ thinking: 'Let me think about it.' });
    expect(content[0]!.signature).toEqual(expect.any(String));
    expect((content[0]!.signature as string).length).toBeGreaterThan(20);

    const stream = await streamMessages(sim.baseUrl, body);
    expect(stream.content).toEqual(content);
    const thinkingDeltas = stream.deltas.filter(
      (d) => d.type === 'thinking_delta' || d.type === 'signature_delta',
    );
    expect(thinkingDeltas.at(-1)!.type).toBe('signature_delta');
    expect(thinkingDeltas.slice(0, -1).every((d) => d.type === 'thinking_delta')).toBe(true);
    expect(stream.events[2]!.content_block).toEqual({ type: 'thinking', thinking: '', signature: '' });
  });

  it('scripts tool calls as tool_use blocks whose input_json_delta fragments reassemble to the arguments', async () => {
    const args = { city: 'São Paulo', days: [1, 2, 3], units: { temperature: 'celsius' } };
    const body = ask(
      'zero',
      directive({
        text: 'Checking.',
        tool_calls: [
          { name: 'get_weather', arguments: args },
          { name: 'noop', id: 'toolu_given' },
        ],
      }),
    );
    const whole = await postMessages(sim.baseUrl, body);
    expect(whole.json).toMatchObject({
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_sim_0', name: 'get_weather', input: args },
        { type: 'tool_use', id: 'toolu_given', name: 'noop', input: {} },
      ],
      stop_reason: 'tool_use',
    });
    const stream = await streamMessages(sim.baseUrl, body);
    expect(stream.content).toEqual(whole.json!.content);
    const starts = stream.events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block);
    expect(starts[1]).toEqual({ type: 'tool_use', id: 'toolu_sim_0', name: 'get_weather', input: {} });
    const fragments = stream.deltas.filter((d) => d.type === 'input_json_delta');
    expect(fragments.length).toBeGreaterThan(2);
    expect(stream.message.stop_reason).toBe('tool_use');
  });

  it('maps finish_reason: stop -> end_turn, length -> max_tokens, tool_calls -> tool_use', async () => {
    for (const [finish, stop] of [
      ['stop', 'end_turn'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
    ] as const) {
      const res = await postMessages(
        sim.baseUrl,
        ask('zero', directive({ text: 'x', finish_reason: finish })),
      );
      expect(res.json!.stop_reason, finish).toBe(stop);
    }
  });

  it("reads the last user message's last text block, after tool results, and no earlier message", async () => {
    const res = await postMessages(sim.baseUrl, {
      model: 'zero',
      max_tokens: 50,
      messages: [
        user(directive({ text: 'from an earlier turn' })),
        { role: 'assistant', content: 'ok' },
        user([
          { type: 'tool_result', tool_use_id: 't', content: '@sim {"text":"from a tool result"}' },
          { type: 'text', text: directive({ text: 'from the last text block' }) },
        ]),
      ],
    });
    expect(res.json!.content).toEqual([{ type: 'text', text: 'from the last text block' }]);
  });

  it('refuses a malformed directive with 400 invalid_request_error', async () => {
    const res = await postMessages(sim.baseUrl, ask('zero', '@sim {"colour":"red"}'));
    expect(res.status).toBe(400);
    expect(res.json!.error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringMatching(/echo directive/),
    });
  });
});

describe('thinking signatures', () => {
  async function thinkingTurn(): Promise<Json> {
    const res = await postMessages(
      sim.baseUrl,
      ask('zero', directive({ reasoning: 'Private reasoning.', text: 'Answer.' })),
    );
    return { role: 'assistant', content: res.json!.content };
  }

  const followUp = (assistant: Json): Json => ({
    model: 'zero',
    max_tokens: 5,
    messages: [user('question'), assistant, user('and then?')],
  });

  it('accepts a thinking block handed back unchanged, streamed or not', async () => {
    const assistant = await thinkingTurn();
    expect((await postMessages(sim.baseUrl, followUp(assistant))).status).toBe(200);
    const streamed = await streamMessages(
      sim.baseUrl,
      ask('zero', directive({ reasoning: 'Private reasoning.', text: 'Answer.' })),
    );
    expect(
      (await postMessages(sim.baseUrl, followUp({ role: 'assistant', content: streamed.content }))).status,
    ).toBe(200);
  });

  it('refuses a thinking block whose text was altered, or whose signature was dropped or altered', async () => {
    const assistant = await thinkingTurn();
    const [thinking, ...rest] = assistant.content as Json[];
    const variants: Json[] = [
      { ...thinking, thinking: 'Private reasoning!' },
      { type: 'thinking', thinking: thinking!.thinking },
      { ...thinking, signature: `${(thinking!.signature as string).slice(0, -4)}AAA=` },
    ];
    for (const altered of variants) {
      const res = await postMessages(
        sim.baseUrl,
        followUp({ role: 'assistant', content: [altered, ...rest] }),
      );
      expect(res.status, JSON.stringify(altered)).toBe(400);
      expect(res.json).toEqual({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: expect.stringContaining('Invalid `signature` in `thinking` block'),
        },
      });
    }
  });
});

describe('stop_sequences', () => {
  it('stops before the first stop sequence in scripted text, streamed and not', async () => {
    const body = ask(
      'zero',
      directive({ text: 'alpha beta END gamma FIN delta', tool_calls: [{ name: 'f' }] }),
      {
        stop_sequences: ['FIN', 'END'],
      },
    );
    const whole = await postMessages(sim.baseUrl, body);
    expect(whole.json).toMatchObject({
      content: [{ type: 'text', text: 'alpha beta ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    const stream = await streamMessages(sim.baseUrl, body);
    expect(stream.content).toEqual(whole.json!.content);
    expect(stream.message).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    expect((stream.message.usage as Json).output_tokens).toBe((whole.json!.usage as Json).output_tokens);
  });

  it('finds a stop sequence that spans tokens of the model answer', async () => {
    const { text } = await chatText('zero');
    // A stop sequence made of the end of the third word and the start of the fourth.
    const words = text.split(' ');
    const stop = `${words[2]!.slice(-2)} ${words[3]!.slice(0, 2)}`;
    const res = await postMessages(sim.baseUrl, ask('zero', 'hi', { stop_sequences: [stop] }));
    expect(res.json).toMatchObject({
      content: [{ type: 'text', text: text.slice(0, text.indexOf(stop)) }],
      stop_reason: 'stop_sequence',
      stop_sequence: stop,
      usage: { output_tokens: 3 },
    });
  });

  it('ends normally when no stop sequence occurs', async () => {
    const res = await postMessages(sim.baseUrl, ask('zero', 'hi', { stop_sequences: ['never there'] }));
    expect(res.json).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
  });
});

describe('shared engine, metrics and refusals', () => {
  it('counts Messages requests in the vLLM metrics with the labels chat uses', async () => {
    const labels = { model_name: 'zero', finished_reason: 'length' };
    const before = await readMetrics(sim.baseUrl);
    await postMessages(sim.baseUrl, ask('zero', 'hi', { max_tokens: 2 }));
    await streamMessages(sim.baseUrl, ask('zero', 'hi', { max_tokens: 3 }));
    const after = await readMetrics(sim.baseUrl);
    const delta = (name: string, l: Record<string, string> = { model_name: 'zero' }) =>
      metricValue(after, name, l)! - (metricValue(before, name, l) ?? 0);
    expect(delta('vllm:request_success_total', labels)).toBe(2);
    expect(delta('vllm:generation_tokens_total')).toBe(5);
    expect(delta('vllm:prompt_tokens_total')).toBe(2 * (await countTokens(ask('zero', 'hi'))));
    expect(delta('vllm:e2e_request_latency_seconds_count')).toBe(2);
  });

  it('answers saturation with the 529 chat gives, as overloaded_error', async () => {
    // max_num_seqs 1 and max_waiting 1: one running, one waiting, the third refused.
    const controller = new AbortController();
    const open = [0, 1].map(() =>
      fetch(`${sim.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ask('sat', 'hi', { max_tokens: 500, stream: true })),
        signal: controller.signal,
      }),
    );
    try {
      await until(async () => {
        const records = (await getJson(sim.baseUrl, '/control/capacity')) as {
          model: string;
          waiting: number;
        }[];
        return records.find((r) => r.model === 'sat')?.waiting === 1;
      });
      const refused = await postMessages(sim.baseUrl, ask('sat', 'hi'));
      const chat = await postJson(sim.baseUrl, '/v1/chat/completions', {
        model: 'sat',
        messages: [user('hi')],
      });
      expect(refused.status).toBe(529);
      expect(chat.status).toBe(529);
      expect(refused.json).toEqual({
        type: 'error',
        error: { type: 'overloaded_error', message: (chat.json as { error: Json }).error.message },
      });
    } finally {
      controller.abort();
      await Promise.allSettled(open);
    }
  });

  it('answers a stopped engine with 503 overloaded_error and ends open streams with an error event', async () => {
    // The previous test's aborted requests leave the queue as the engine hears of their close.
    await until(async () => {
      const records = (await getJson(sim.baseUrl, '/control/capacity')) as {
        model: string;
        waiting: number;
      }[];
      return records.find((r) => r.model === 'sat')?.waiting === 0;
    });
    const res = await fetch(`${sim.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask('sat', 'hi', { max_tokens: 500, stream: true })),
    });
    const body = res.text();
    await postJson(sim.baseUrl, '/control/engine', { model: 'sat', state: 'stopped' });
    try {
      const text = await body;
      expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/);
      expect(text).not.toContain('message_stop');
      const refused = await postMessages(sim.baseUrl, ask('sat', 'hi'));
      expect(refused.status).toBe(503);
      expect((refused.json!.error as Json).type).toBe('overloaded_error');
    } finally {
      await postJson(sim.baseUrl, '/control/engine', { model: 'sat', state: 'running' });
    }
  });
});
