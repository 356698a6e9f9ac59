import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type StartedSim } from '../helpers/sim.js';
import {
  metricValue,
  postJson,
  rawRequest,
  readMetrics,
  sseFrames,
  writeModels,
  zeroLatencyModel,
} from './support.js';

/**
 * A server without --enable-directives, with a per-model [fault] table and the newer `reasoning`
 * delta field: the table needs no directives, applies to streaming chat only, and headers and
 * echo directives are not honored.
 */
let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'plain.toml': zeroLatencyModel('plain', '', 'output_tokens = 3'),
    'faulty.toml': zeroLatencyModel(
      'faulty',
      '[fault]\nmode = "mid_reasoning"\nafter_chunks = 2\ndelay_ms = 0\n',
      'output_tokens = 3',
    ),
  });
  sim = await startSim(['--reasoning-field', 'reasoning', '--model', files[0]!, '--model', files[1]!]);
});

afterAll(async () => {
  await sim?.stop();
});

const messages = [{ role: 'user', content: 'hi' }];

describe('per-model [fault] table', () => {
  it('applies to every streaming chat completion without --enable-directives', async () => {
    for (let round = 0; round < 2; round++) {
      const res = await rawRequest(sim.port, {
        path: '/v1/chat/completions',
        body: { model: 'faulty', stream: true, messages },
      });
      expect(res.status).toBe(200);
      expect(res.ending).toBe('fin');
      expect(res.terminated).toBe(false);
      const { data, rest } = sseFrames(res.payload);
      expect(rest.length).toBe(0);
      expect(data).toHaveLength(3);
      const deltas = data.map(
        (d) => (JSON.parse(d) as { choices: { delta: Record<string, unknown> }[] }).choices[0]!.delta,
      );
      expect(deltas[0]).toEqual({ role: 'assistant', content: '' });
      for (const delta of deltas.slice(1)) {
        expect(Object.keys(delta)).toEqual(['reasoning']);
      }
    }
    const metrics = await readMetrics(sim.baseUrl);
    expect(
      metricValue(metrics, 'sim_faults_injected_total', { model_name: 'faulty', mode: 'mid_reasoning' }),
    ).toBe(2);
  });

  it('serves non-streaming requests normally', async () => {
    const res = await postJson(sim.baseUrl, '/v1/chat/completions', { model: 'faulty', messages });
    expect(res.status).toBe(200);
    expect((res.json as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(
      'Café déjà naïve ',
    );
  });

  it('leaves streaming text completions alone (the table covers chat completions)', async () => {
    const res = await rawRequest(sim.port, {
      path: '/v1/completions',
      body: { model: 'faulty', stream: true, prompt: 'x' },
    });
    expect(res.terminated).toBe(true);
    expect(sseFrames(res.payload).data.at(-1)).toBe('[DONE]');
  });

  it('does not touch other models', async () => {
    const res = await rawRequest(sim.port, {
      path: '/v1/chat/completions',
      body: { model: 'plain', stream: true, messages },
    });
    expect(res.terminated).toBe(true);
    expect(sseFrames(res.payload).data.at(-1)).toBe('[DONE]');
  });
});

describe('without --enable-directives', () => {
  it('refuses the fault header with 400 invalid_fault_directive, streaming or not', async () => {
    for (const stream of [true, false]) {
      const res = await postJson(
        sim.baseUrl,
        '/v1/chat/completions',
        { model: 'plain', stream, messages },
        { 'x-sim-fault': 'reset' },
      );
      expect(res.status).toBe(400);
      expect(res.contentType).toBe('application/json');
      const error = (res.json as { error: Record<string, unknown> }).error;
      expect(error.code).toBe('invalid_fault_directive');
      expect(error.message).toContain('--enable-directives');
      expect(error.message).toContain('cut_between_frames');
    }
  });

  it('treats an echo directive as ordinary prompt text', async () => {
    const res = await postJson(sim.baseUrl, '/v1/chat/completions', {
      model: 'plain',
      messages: [{ role: 'user', content: '@sim {"text":"scripted"}' }],
    });
    expect(res.status).toBe(200);
    expect((res.json as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(
      'Café déjà naïve ',
    );
  });
});
