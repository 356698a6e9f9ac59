import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { streamChat, writeModels } from './support.js';

/**
 * Latency through the real server. Simulated time never runs ahead of the wall clock and a client
 * receives a token only after it is emitted, so the time from sending a request to receiving a
 * token is bounded below by the simulated schedule. These tests assert such lower bounds only, which
 * a slow or busy machine cannot break.
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
  const res = await streamChat(sim.baseUrl, model, tokens);
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
    const origin = Math.min(first!.start, second!.start);
    const firstTokens = [first!, second!].map((r) => r.start + r.times[0]! - origin).sort((x, y) => x - y);
    // One slot: the later request waits for the other to finish (100 + 9 x 20 ms), then for its own
    // prefill (100 ms). Simulated time never runs ahead of the wall clock, so this is a lower bound.
    expect(firstTokens[0]!).toBeGreaterThanOrEqual(99);
    expect(firstTokens[1]!).toBeGreaterThanOrEqual(379);
  });

  it('inter-token latency grows with the batch', async () => {
    const alone = await tokenTimes('batch', 12);
    // Alone: 11 decode steps of 5 + 10 ms.
    expect(alone.times[11]!).toBeGreaterThanOrEqual(164);

    const batch = await Promise.all(Array.from({ length: 8 }, () => tokenTimes('batch', 12)));
    const origin = Math.min(...batch.map((r) => r.start));
    const span = Math.max(...batch.map((r) => r.start + r.times[11]! - origin));
    // Each decode step costs 10 ms per running sequence, so the 8 x 11 decoded tokens need at least
    // 880 ms of simulated time, whatever the arrival order; without the per-sequence cost they
    // would need about 55 ms.
    expect(span).toBeGreaterThanOrEqual(879);
  });
});
