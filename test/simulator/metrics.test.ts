import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import { metricValue, postJson, readMetrics, writeModels } from './support.js';

let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'm.toml': `name = "m"
output_tokens = 5
[latency]
prefill_ms = 2
prefill_per_token_ms = 0
decode_ms = 2
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = 1
`,
    'long.toml': `name = "long"
output_tokens = 1000000
[latency]
prefill_ms = 0
decode_ms = 5
[scheduler]
max_num_seqs = 1
`,
  });
  sim = await startSim(['--model', files[0]!, '--model', files[1]!]);
});

afterAll(async () => {
  await sim?.stop();
});

const labels = { model_name: 'm' };
const messages = [{ role: 'user', content: 'hi' }];

describe('/metrics', () => {
  it('exposes vLLM-named series with a model_name label', async () => {
    const res = await fetch(`${sim.baseUrl}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const [name, type] of [
      ['vllm:num_requests_running', 'gauge'],
      ['vllm:num_requests_waiting', 'gauge'],
      ['vllm:time_to_first_token_seconds', 'histogram'],
      ['vllm:inter_token_latency_seconds', 'histogram'],
      ['vllm:e2e_request_latency_seconds', 'histogram'],
      ['vllm:request_success_total', 'counter'],
      ['sim_faults_injected_total', 'counter'],
      ['sim_rejections_total', 'counter'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}`);
    }
    expect(metricValue(text, 'vllm:num_requests_running', labels)).toBe(0);
    expect(metricValue(text, 'vllm:request_success_total', { ...labels, finished_reason: 'stop' })).toBe(0);
  });

  it('counts finished requests by reason and observes every latency', async () => {
    await postJson(sim.baseUrl, '/v1/chat/completions', { model: 'm', messages });
    await postJson(sim.baseUrl, '/v1/chat/completions', { model: 'm', messages, max_tokens: 2 });
    await postJson(sim.baseUrl, '/v1/completions', { model: 'm', prompt: 'x', max_tokens: 3, stream: true });

    const text = await readMetrics(sim.baseUrl);
    expect(metricValue(text, 'vllm:request_success_total', { ...labels, finished_reason: 'stop' })).toBe(1);
    expect(metricValue(text, 'vllm:request_success_total', { ...labels, finished_reason: 'length' })).toBe(2);
    expect(metricValue(text, 'vllm:time_to_first_token_seconds_count', labels)).toBe(3);
    expect(metricValue(text, 'vllm:e2e_request_latency_seconds_count', labels)).toBe(3);
    // 5 + 2 + 3 tokens, one gap fewer than tokens per request.
    expect(metricValue(text, 'vllm:inter_token_latency_seconds_count', labels)).toBe(7);
    expect(metricValue(text, 'vllm:generation_tokens_total', labels)).toBe(10);
    expect(metricValue(text, 'vllm:time_to_first_token_seconds_sum', labels)).toBeGreaterThan(0);
  });

  it('reports running and waiting requests live, and aborted requests when clients leave', async () => {
    const long = { model_name: 'long' };
    const controllers = [new AbortController(), new AbortController()];
    const bodies = controllers.map((c) =>
      fetch(`${sim.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'long', stream: true, messages }),
        signal: c.signal,
      }),
    );
    await until(async () => {
      const text = await readMetrics(sim.baseUrl);
      return (
        metricValue(text, 'vllm:num_requests_running', long) === 1 &&
        metricValue(text, 'vllm:num_requests_waiting', long) === 1
      );
    });
    for (const c of controllers) c.abort();
    await Promise.allSettled(bodies);
    await until(async () => {
      const text = await readMetrics(sim.baseUrl);
      return (
        metricValue(text, 'vllm:num_requests_running', long) === 0 &&
        metricValue(text, 'vllm:num_requests_waiting', long) === 0 &&
        metricValue(text, 'vllm:request_success_total', { ...long, finished_reason: 'abort' }) === 2
      );
    });
  });
});
