import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { writeModels } from './support.js';

/**
 * Latency through the real server. Pacing only ever delays (timers never fire early), so these
 * tests assert lower bounds, which cannot flake on a slow machine.
 */
let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'serial.toml': `name = "serial"
[latency]
prefill_ms = 100
prefill_per_token_ms = 0
decode_ms = 20
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = 1
`,
    'batch.toml': `name = "batch"
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = 5
decode_per_seq_ms = 10
`,
  });
  sim = await startSim(['--model', files[0]!, '--model', files[1]!]);
});

afterAll(async () => {
  await sim?.stop();
});

/** Wall-clock arrival time (ms since `start`) of every content token of a chat stream. */
async function tokenTimes(model: string, tokens: number): Promise<{ start: number; times: number[] }> {
  const start = performance.now();
  const res = await fetch(`${sim.baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: tokens,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });
  const times: number[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body!) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (frame.includes('"content":"') && !frame.includes('"role"')) times.push(performance.now() - start);
    }
  }
  return { start, times };
}

describe('latency model', () => {
  it('paces the first request after idle: no unpaced burst', async () => {
    const { times } = await tokenTimes('serial', 10);
    expect(times).toHaveLength(10);
    // Prefill 100 ms, then 9 decode steps of 20 ms (1 ms of slack for timer rounding).
    expect(times[0]!).toBeGreaterThanOrEqual(99);
    expect(times[9]!).toBeGreaterThanOrEqual(279);
  });

  it('time to first token grows with queueing', async () => {
    const [first, second] = await Promise.all([tokenTimes('serial', 10), tokenTimes('serial', 10)]);
    const [early, late] = first!.times[0]! < second!.times[0]! ? [first!, second!] : [second!, first!];
    // The second waits for the first to finish (about 280 ms), then for its own prefill (100 ms).
    expect(late.times[0]! + (late.start - early.start)).toBeGreaterThanOrEqual(early.times[9]! + 99);
  });

  it('inter-token latency grows with the batch', async () => {
    const mean = (times: number[]): number => (times.at(-1)! - times[0]!) / (times.length - 1);
    const alone = mean((await tokenTimes('batch', 12)).times);
    const batched = await Promise.all(Array.from({ length: 8 }, () => tokenTimes('batch', 12)));
    const batchedMean = Math.min(...batched.map((r) => mean(r.times)));
    // Alone: 5 + 10 = 15 ms per step. Eight running: 5 + 80 = 85 ms (less a bounded catch-up).
    expect(alone).toBeGreaterThanOrEqual(14);
    expect(batchedMean).toBeGreaterThanOrEqual(70);
    expect(batchedMean).toBeGreaterThan(alone);
  });
});
