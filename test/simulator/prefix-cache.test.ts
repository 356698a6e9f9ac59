/**
 * The simulator's prefix cache through the real program: a model file's `[prefix_cache]` table, the
 * chat template's tokens, vLLM's counters, and the KV-cache gauge reflecting cached blocks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { metricValue, postJson, readMetrics, writeModels } from './support.js';

let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'cached.toml': `name = "cached"
output_tokens = 2
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = 0
decode_per_seq_ms = 0
[prefix_cache]
block_tokens = 16
capacity_tokens = 1600
`,
    'plain.toml': `name = "plain"
output_tokens = 2
[latency]
prefill_ms = 0
decode_ms = 0
`,
  });
  sim = await startSim(['--model', files[0]!, '--model', files[1]!]);
});

afterAll(async () => {
  await sim?.stop();
});

/** 400 characters: 100 tokens, plus the chat template's 4: 104 tokens for the system message. */
const SYSTEM = 'You are the assistant of a team of support engineers. '.repeat(8).slice(0, 400);
const conversation = (model: string, user: string) => ({
  model,
  messages: [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: user },
  ],
});

describe('prefix cache', () => {
  it('counts the prompt tokens it looked up and the full blocks of the shared system prompt it found', async () => {
    // 104 + 4 + 3 = 111 tokens each; the first 6 blocks of 16 (96 tokens) lie inside the system prompt.
    expect(
      (await postJson(sim.baseUrl, '/v1/chat/completions', conversation('cached', 'hello one'))).status,
    ).toBe(200);
    expect(
      (await postJson(sim.baseUrl, '/v1/chat/completions', conversation('cached', 'hello two'))).status,
    ).toBe(200);
    const text = await readMetrics(sim.baseUrl);
    const labels = { model_name: 'cached' };
    expect(metricValue(text, 'vllm:prefix_cache_queries_total', labels)).toBe(222);
    expect(metricValue(text, 'vllm:prefix_cache_hits_total', labels)).toBe(96);
    expect(metricValue(text, 'vllm:prompt_tokens_total', labels)).toBe(222);
    // The cache holds the 6 shared blocks (each request's 7th is not full): 96 of 1600 tokens.
    expect(metricValue(text, 'vllm:kv_cache_usage_perc', labels)).toBeCloseTo(96 / 1600, 6);
  });

  it('is off unless capacity_tokens is set: no lookups, no hits', async () => {
    expect(
      (await postJson(sim.baseUrl, '/v1/chat/completions', conversation('plain', 'hello one'))).status,
    ).toBe(200);
    expect(
      (await postJson(sim.baseUrl, '/v1/chat/completions', conversation('plain', 'hello two'))).status,
    ).toBe(200);
    const text = await readMetrics(sim.baseUrl);
    expect(metricValue(text, 'vllm:prefix_cache_queries_total', { model_name: 'plain' })).toBe(0);
    expect(metricValue(text, 'vllm:prefix_cache_hits_total', { model_name: 'plain' })).toBe(0);
  });
});

describe('prompt tokens', () => {
  it('lists exactly the tokens it counts, equal text giving equal tokens', async () => {
    const { parseCompletionRequest } = await import('../../src/simulator/openai/requests.js');
    const bodies: [kind: 'chat' | 'completions', body: unknown][] = [
      ['chat', { messages: [{ role: 'user', content: 'héllo wörld, and more' }] }],
      [
        'chat',
        {
          messages: [
            { role: 'system', content: null },
            { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url' }] },
          ],
        },
      ],
      ['completions', { prompt: 'one two three four five' }],
      ['completions', { prompt: [1, 2, 3, 4, 5, 6, 7] }],
    ];
    for (const [kind, body] of bodies) {
      const parsed = parseCompletionRequest(kind, body);
      if (!parsed.ok) throw new Error(parsed.message);
      expect(parsed.request.promptTokenList()).toHaveLength(parsed.request.promptTokens);
    }
    const tokensOf = (content: string): string[] => {
      const parsed = parseCompletionRequest('chat', {
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content },
        ],
      });
      if (!parsed.ok) throw new Error(parsed.message);
      return parsed.request.promptTokenList();
    };
    // The system message's 104 tokens are shared; the user's role tokens differ from the system's.
    expect(tokensOf('hello one').slice(0, 104)).toEqual(tokensOf('hello two').slice(0, 104));
    expect(tokensOf('hello one').slice(104, 108)).toEqual([
      '<|user|0>',
      '<|user|1>',
      '<|user|2>',
      '<|user|3>',
    ]);
  });
});
