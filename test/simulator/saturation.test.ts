import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import { getJson, metricValue, postJson, readMetrics, streamChat, writeModels } from './support.js';

/**
 * Saturation and runtime capacity control through the real HTTP interface. Each model has a slow,
 * steady decode so requests stay running or queued long enough to observe; nothing asserts on
 * timing except that refusals come while the admitted work is still in progress.
 */
function slowModel(name: string, maxNumSeqs: number, maxWaiting: number, decodeMs = 20): string {
  return `name = "${name}"
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = ${decodeMs}
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = ${maxNumSeqs}
max_waiting = ${maxWaiting}
`;
}

let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'sat.toml': slowModel('sat', 1, 2),
    'cap.toml': slowModel('cap', 2, 0, 40),
    'live.toml': slowModel('live', 4, 0),
  });
  sim = await startSim(files.flatMap((f) => ['--model', f]));
});

afterAll(async () => {
  await sim?.stop();
});

interface OpenStream {
  status: number;
  contentType: string;
  /** Resolves with the whole body once the stream ends. */
  body: Promise<string>;
  finished: () => boolean;
}

async function stream(model: string, maxTokens: number): Promise<OpenStream> {
  const res = await streamChat(sim.baseUrl, model, maxTokens);
  let done = false;
  const body = res.text().then((text) => {
    done = true;
    return text;
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body,
    finished: () => done,
  };
}

type Capacity = {
  model: string;
  max_waiting: number;
  max_num_seqs: number;
  waiting: number;
  running: number;
};

async function capacity(model: string): Promise<Capacity> {
  const records = (await getJson(sim.baseUrl, '/control/capacity')) as Capacity[];
  return records.find((r) => r.model === model)!;
}

async function setCapacity(body: Record<string, unknown>) {
  return postJson(sim.baseUrl, '/control/capacity', body);
}

describe('bounded waiting queue', () => {
  it('refuses arrivals beyond max_waiting at once with the exact 529 body, before any stream starts', async () => {
    const admitted = await Promise.all([stream('sat', 40), stream('sat', 40), stream('sat', 40)]);
    for (const s of admitted) expect(s.status).toBe(200);
    expect(await capacity('sat')).toMatchObject({ running: 1, waiting: 2 });

    for (const streaming of [true, false]) {
      const refused = await postJson(sim.baseUrl, '/v1/chat/completions', {
        model: 'sat',
        stream: streaming,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(refused.status).toBe(529);
      expect(refused.contentType).toBe('application/json');
      expect(refused.text).toBe(
        '{"error":{"message":"Server is at capacity, 2 requests waiting, max_waiting = 2, retry with reduced concurrency","type":"overloaded_error","code":"queue_saturated"}}',
      );
    }
    const completions = await postJson(sim.baseUrl, '/v1/completions', {
      model: 'sat',
      prompt: 'x',
      stream: true,
    });
    expect(completions.status).toBe(529);

    // The refusals came while the admitted work was still in progress (the last one needs ~2.4 s).
    expect(admitted[2]!.finished()).toBe(false);
    const bodies = await Promise.all(admitted.map((s) => s.body));
    for (const body of bodies) expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);

    const metrics = await readMetrics(sim.baseUrl);
    expect(metricValue(metrics, 'sim_rejections_total', { model_name: 'sat', code: 'queue_saturated' })).toBe(
      3,
    );
  });

  it('admits again once the queue has drained', async () => {
    await until(async () => (await capacity('sat')).waiting === 0);
    const ok = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'sat',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(ok.status).toBe(200);
  });
});

describe('runtime capacity control', () => {
  it('rejects invalid changes with clear messages and changes nothing', async () => {
    const before = await capacity('cap');
    for (const bad of [0, -1, 1.5, '2', null]) {
      const res = await setCapacity({ model: 'cap', max_num_seqs: bad });
      expect(res.status).toBe(400);
      expect((res.json as { error: { message: string; param: string } }).error).toMatchObject({
        param: 'max_num_seqs',
        message: expect.stringMatching(/max_num_seqs must be an integer of at least 1/),
      });
    }
    expect((await setCapacity({ model: 'cap', max_waiting: -1 })).status).toBe(400);
    // Atomic: a valid max_waiting next to an invalid max_num_seqs is not applied either.
    expect((await setCapacity({ model: 'cap', max_waiting: 5, max_num_seqs: 0 })).status).toBe(400);
    expect((await setCapacity({ model: 'cap', colour: 'red' })).status).toBe(400);
    expect((await setCapacity({ model: 'nope', max_waiting: 1 })).status).toBe(404);
    expect(await capacity('cap')).toEqual(before);
  });

  it('lowering max_waiting affects later arrivals only; 0 means unbounded', async () => {
    const streams = await Promise.all([1, 2, 3, 4, 5].map(() => stream('cap', 30)));
    // Arrivals during a step are admitted at the next step boundary.
    await until(async () => (await capacity('cap')).running === 2);
    expect(await capacity('cap')).toMatchObject({ running: 2, waiting: 3 });

    const res = await setCapacity({ model: 'cap', max_waiting: 1 });
    expect(res.status).toBe(200);
    expect((res.json as Capacity[]).find((r) => r.model === 'cap')).toMatchObject({
      max_waiting: 1,
      waiting: 3,
    });

    const refused = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'cap',
      stream: true,
      messages: [],
    });
    expect(refused.status).toBe(400); // an invalid request is refused before admission
    const late = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'cap',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(late.status).toBe(529);
    expect((late.json as { error: { message: string } }).error.message).toBe(
      'Server is at capacity, 3 requests waiting, max_waiting = 1, retry with reduced concurrency',
    );
    // The queued requests kept their place and complete normally.
    expect((await capacity('cap')).waiting).toBe(3);

    await setCapacity({ model: 'cap', max_waiting: 0 });
    const more = await stream('cap', 1);
    expect(more.status).toBe(200);
    for (const s of [...streams, more]) expect((await s.body).trimEnd().endsWith('[DONE]')).toBe(true);
  });

  it('raising max_num_seqs admits queued work; lowering it drains running work without cutting it', async () => {
    const streams = await Promise.all([1, 2, 3, 4].map(() => stream('cap', 25)));
    await until(async () => (await capacity('cap')).running === 2);
    expect(await capacity('cap')).toMatchObject({ running: 2, waiting: 2 });

    await setCapacity({ model: 'cap', max_num_seqs: 4 });
    await until(async () => (await capacity('cap')).running === 4);
    expect((await capacity('cap')).waiting).toBe(0);

    await setCapacity({ model: 'cap', max_num_seqs: 1 });
    const late = await stream('cap', 1);
    // Four keep running above the new cap; the newcomer waits for the drain.
    expect(await capacity('cap')).toMatchObject({ running: 4, waiting: 1, max_num_seqs: 1 });
    for (const s of streams) expect((await s.body).trimEnd().endsWith('[DONE]')).toBe(true);
    expect((await late.body).trimEnd().endsWith('[DONE]')).toBe(true);
    await setCapacity({ model: 'cap', max_num_seqs: 2 });
  });

  it('applies to every model when no model is named', async () => {
    const res = await setCapacity({ max_waiting: 50 });
    expect(res.status).toBe(200);
    expect((res.json as Capacity[]).map((r) => r.max_waiting)).toEqual([50, 50, 50]);
    await setCapacity({ model: 'sat', max_waiting: 2 });
  });
});

describe('engine liveness', () => {
  it('answers 503 (not 529) while the engine is stopped and aborts its streams; restart recovers', async () => {
    const running = await stream('live', 200);
    expect(running.status).toBe(200);
    expect((await getJson(sim.baseUrl, '/control/capacity')) as Capacity[]).toContainEqual(
      expect.objectContaining({ model: 'live', running: 1 }),
    );

    const stop = await postJson(sim.baseUrl, '/control/engine', { model: 'live', state: 'stopped' });
    expect(stop.status).toBe(200);
    const aborted = await running.body;
    expect(aborted).toContain('"code":"engine_unavailable"');
    expect(aborted).not.toContain('[DONE]');

    const refused = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'live',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(refused.status).toBe(503);
    expect((refused.json as { error: { code: string } }).error.code).toBe('engine_unavailable');
    expect((await fetch(`${sim.baseUrl}/health`)).status).toBe(503);
    // Other models are unaffected.
    const other = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'sat',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(other.status).toBe(200);

    expect((await postJson(sim.baseUrl, '/control/engine', { model: 'live', state: 'running' })).status).toBe(
      200,
    );
    expect((await fetch(`${sim.baseUrl}/health`)).status).toBe(200);
    const ok = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'live',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(ok.status).toBe(200);
    const metrics = await readMetrics(sim.baseUrl);
    expect(
      metricValue(metrics, 'sim_rejections_total', { model_name: 'live', code: 'engine_unavailable' }),
    ).toBe(1);
  });
});
