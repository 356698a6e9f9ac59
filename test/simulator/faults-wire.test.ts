import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAULT_MODES } from '../fixtures/fault-modes.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import {
  getJson,
  metricValue,
  rawRequest,
  readMetrics,
  sseFrames,
  writeModels,
  zeroLatencyModel,
  type RawResponse,
} from './support.js';

/**
 * Byte-level behaviour of every fault mode, observed over raw sockets: which bytes arrive, whether
 * the chunked terminator and [DONE] come, and whether the connection ends with FIN or RST.
 */
type Kind = 'chat' | 'completions';

let sim: StartedSim;

beforeAll(async () => {
  const { files } = writeModels({
    'zero.toml': zeroLatencyModel('zero'),
    'faulty.toml': zeroLatencyModel(
      'faulty',
      '[fault]\nmode = "cut_between_frames"\nafter_chunks = 1\ndelay_ms = 0\n',
    ),
  });
  sim = await startSim(['--enable-directives', '--model', files[0]!, '--model', files[1]!]);
});

afterAll(async () => {
  await sim?.stop();
});

function request(
  kind: Kind,
  fault: string | undefined,
  extra: Record<string, unknown> = {},
  model = 'zero',
  timeoutMs = 5_000,
) {
  const body =
    kind === 'chat'
      ? { model, messages: [{ role: 'user', content: 'hello' }], stream: true, ...extra }
      : { model, prompt: 'hello', stream: true, ...extra };
  return rawRequest(sim.port, {
    path: kind === 'chat' ? '/v1/chat/completions' : '/v1/completions',
    headers: fault === undefined ? {} : { 'x-sim-fault': fault },
    body,
    timeoutMs,
  });
}

interface Parsed {
  frames: Record<string, unknown>[];
  rest: Buffer;
  done: boolean;
}

/** Complete frames as JSON, whether `[DONE]` came, and the torn remainder. */
function parse(res: RawResponse): Parsed {
  const { data, rest } = sseFrames(res.payload);
  const done = data.includes('[DONE]');
  if (done) expect(data.at(-1)).toBe('[DONE]');
  return {
    frames: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Record<string, unknown>),
    rest,
    done,
  };
}

function choice(frame: Record<string, unknown>): Record<string, unknown> {
  return (frame.choices as Record<string, unknown>[])[0]!;
}

function delta(frame: Record<string, unknown>): Record<string, unknown> {
  return choice(frame).delta as Record<string, unknown>;
}

/** Checks the partial output every faulting stream starts with; returns the frames after it. */
function expectPrefix(kind: Kind, frames: Record<string, unknown>[], n: number, field = 'content') {
  let at = 0;
  if (kind === 'chat') {
    expect(delta(frames[0]!)).toEqual({ role: 'assistant', content: '' });
    at = 1;
  }
  const content = frames.slice(at, at + n);
  expect(content).toHaveLength(n);
  for (const frame of content) {
    if (kind === 'chat') {
      const text = delta(frame)[field];
      expect(typeof text === 'string' && text.length).toBeGreaterThan(1);
    } else {
      expect((choice(frame).text as string).length).toBeGreaterThan(1);
    }
    expect(choice(frame).finish_reason).toBeNull();
  }
  return frames.slice(at + n);
}

describe.each<Kind>(['chat', 'completions'])('fault modes on %s', (kind) => {
  it('cut_between_frames: N content frames, then FIN on a frame boundary without the chunked terminator', async () => {
    const res = await request(kind, 'cut_between_frames;after_chunks=2;delay_ms=0');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    const { frames, rest, done } = parse(res);
    expect(done).toBe(false);
    expect(rest.length).toBe(0);
    expect(expectPrefix(kind, frames, 2)).toEqual([]);
    // The last chunk on the wire is complete: the death falls between frames.
    expect(res.rawBody.subarray(-4).toString('latin1')).toBe('\n\n\r\n');
  });

  it('cut_mid_frame: half of the next frame (torn JSON, valid UTF-8), then FIN', async () => {
    const res = await request(kind, 'cut_mid_frame;after_chunks=2;delay_ms=0');
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    const { frames, rest } = parse(res);
    expect(expectPrefix(kind, frames, 2)).toEqual([]);
    const torn = rest.toString('utf8');
    expect(torn.startsWith('data: {"id":')).toBe(true);
    expect(() => JSON.parse(torn.slice(6))).toThrow();
    // Roughly half of a frame of the same shape as the previous one.
    const previous = Buffer.byteLength(`data: ${JSON.stringify(frames.at(-1))}\n\n`);
    expect(rest.length).toBeGreaterThan(previous * 0.4);
    expect(rest.length).toBeLessThan(previous * 0.6);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(rest)).not.toThrow();
  });

  it('cut_mid_frame;utf8=true: the cut falls one byte into a two-byte character of the delta text', async () => {
    const res = await request(kind, 'cut_mid_frame;after_chunks=1;delay_ms=0;utf8=true');
    expect(res.ending).toBe('fin');
    const { frames, rest } = parse(res);
    expect(expectPrefix(kind, frames, 1)).toEqual([]);
    const last = rest[rest.length - 1]!;
    // A two-byte sequence's lead byte is 110xxxxx; its continuation byte never arrives.
    expect(last & 0xe0).toBe(0xc0);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(rest)).toThrow();
    const textKey = kind === 'chat' ? '"content":"' : '"text":"';
    expect(rest.toString('latin1').lastIndexOf(textKey)).toBeGreaterThan(0);
    expect(rest.toString('latin1').lastIndexOf(textKey)).toBeGreaterThan(
      rest.toString('latin1').lastIndexOf('"model"'),
    );
  });

  it('reset: N content frames, then a TCP RST (ECONNRESET), not a FIN', async () => {
    const res = await request(kind, 'reset;after_chunks=2;delay_ms=0');
    expect(res.ending).toBe('reset');
    expect(res.errorCode).toBe('ECONNRESET');
    expect(res.terminated).toBe(false);
    const { frames, rest } = parse(res);
    expect(expectPrefix(kind, frames, 2)).toEqual([]);
    expect(rest.length).toBe(0);
  });

  it('stall: N content frames, then nothing while the connection stays open; the slot is freed when the client leaves', async () => {
    // The client gives up after 1.5 s; nothing arrives after the partial output until then.
    const res = await request(kind, 'stall;after_chunks=2;delay_ms=0', {}, 'zero', 1_500);
    expect(res.ending).toBe('open');
    const { frames, rest, done } = parse(res);
    expect(done).toBe(false);
    expect(rest.length).toBe(0);
    expect(expectPrefix(kind, frames, 2)).toEqual([]);
    await until(async () => {
      const records = (await getJson(sim.baseUrl, '/control/capacity')) as {
        model: string;
        running: number;
      }[];
      return records.find((r) => r.model === 'zero')?.running === 0;
    });
  });

  it('error_envelope_200: an error envelope with code 502 and metadata as a data frame, then [DONE], clean end', async () => {
    const res = await request(kind, 'error_envelope_200;after_chunks=1;delay_ms=0');
    expect(res.status).toBe(200);
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(true);
    const [envelope, ...more] = expectPrefix(kind, frames, 1);
    expect(more).toEqual([]);
    const error = (envelope as { error: Record<string, unknown> }).error;
    expect(error.code).toBe(502);
    expect(typeof error.message).toBe('string');
    expect(typeof error.metadata).toBe('object');
  });

  it('error_400_in_sse: an in-stream error object with code 400, then a clean end without [DONE]', async () => {
    const res = await request(kind, 'error_400_in_sse;after_chunks=1;delay_ms=0');
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(false);
    const [error, ...more] = expectPrefix(kind, frames, 1);
    expect(more).toEqual([]);
    expect(error).toMatchObject({ object: 'error', type: 'BadRequestError', param: null, code: 400 });
  });

  it('no_done: finish_reason frame and the usage frame (empty choices), then a clean end without [DONE]', async () => {
    const res = await request(kind, 'no_done;after_chunks=2;delay_ms=0', {
      stream_options: { include_usage: true },
    });
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(false);
    const [finish, usage, ...more] = expectPrefix(kind, frames, 2);
    expect(more).toEqual([]);
    expect(choice(finish!).finish_reason).toBe('stop');
    expect(usage!.choices).toEqual([]);
    expect(usage!.usage).toMatchObject({ completion_tokens: 2 });
  });

  it('no_done without include_usage: only the finish_reason frame, then a clean end', async () => {
    const res = await request(kind, 'no_done;after_chunks=1;delay_ms=0');
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(false);
    const tail = expectPrefix(kind, frames, 1);
    expect(tail).toHaveLength(1);
    expect(choice(tail[0]!).finish_reason).toBe('stop');
  });

  it('no_usage: finish_reason frame then [DONE], and no usage frame although include_usage was set', async () => {
    const res = await request(kind, 'no_usage;after_chunks=2;delay_ms=0', {
      stream_options: { include_usage: true },
    });
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(true);
    const tail = expectPrefix(kind, frames, 2);
    expect(tail).toHaveLength(1);
    expect(choice(tail[0]!).finish_reason).toBe('stop');
    expect(frames.some((f) => 'usage' in f)).toBe(false);
  });

  it('cancelled_499: the exact CancelledError body as a data frame, then a clean end', async () => {
    const res = await request(kind, 'cancelled_499;after_chunks=1;delay_ms=0');
    expect(res.terminated).toBe(true);
    const text = res.payload.toString('utf8');
    expect(
      text.endsWith(
        'data: {"error":{"message":"CancelledError: ","type":"request_cancelled","code":499}}\n\n',
      ),
    ).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(false);
    expect(expectPrefix(kind, frames, 1)).toHaveLength(1);
  });

  it('mid_reasoning: reasoning output that dies like cut_between_frames', async () => {
    const res = await request(kind, 'mid_reasoning;after_chunks=3;delay_ms=0');
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    const { frames, rest } = parse(res);
    expect(rest.length).toBe(0);
    if (kind === 'chat') {
      expect(expectPrefix(kind, frames, 3, 'reasoning_content')).toEqual([]);
      for (const frame of frames.slice(1)) expect(delta(frame).content).toBeUndefined();
    } else {
      expect(expectPrefix(kind, frames, 3)).toEqual([]);
      const text = frames.map((f) => choice(f).text as string).join('');
      expect(text.startsWith('<think>')).toBe(true);
      expect(text).not.toContain('</think>');
    }
  });

  it('mid_tool_call: a tool call announced with id and name, argument fragments that never end, then FIN', async () => {
    const res = await request(kind, 'mid_tool_call;after_chunks=4;delay_ms=0');
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    const { frames } = parse(res);
    if (kind === 'chat') {
      expect(frames).toHaveLength(5);
      const calls = frames.slice(1).map((f) => (delta(f).tool_calls as Record<string, unknown>[])[0]!);
      expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: expect.any(String) } });
      expect(typeof calls[0]!.id).toBe('string');
      for (const later of calls.slice(1)) {
        expect(Object.keys(later).sort()).toEqual(['function', 'index']);
        expect(Object.keys(later.function as object)).toEqual(['arguments']);
      }
      const args = calls
        .slice(1)
        .map((c) => (c.function as { arguments: string }).arguments)
        .join('');
      expect(args.startsWith('{')).toBe(true);
      expect(() => JSON.parse(args)).toThrow();
    } else {
      expect(frames).toHaveLength(4);
      const text = frames.map((f) => choice(f).text as string).join('');
      expect(text.startsWith('<tool_call>{"name": ')).toBe(true);
      expect(text).not.toContain('</tool_call>');
    }
  });

  it('after_chunks defaults to 3 content frames', async () => {
    const res = await request(kind, 'cut_between_frames');
    const { frames } = parse(res);
    expect(expectPrefix(kind, frames, 3)).toEqual([]);
  });

  it('after_chunks=0: only the role frame (chat) or nothing (completions) before the death', async () => {
    const res = await request(kind, 'cut_between_frames;after_chunks=0;delay_ms=0');
    expect(res.ending).toBe('fin');
    const { frames } = parse(res);
    expect(frames).toHaveLength(kind === 'chat' ? 1 : 0);
  });
});

describe('determinism', () => {
  /** The body bytes exclude the header block, whose Date header changes every second. */
  it.each([
    ['chat', 'cut_mid_frame;after_chunks=3;delay_ms=0;utf8=true'],
    ['completions', 'cut_mid_frame;after_chunks=2;delay_ms=1'],
    ['chat', 'reset; after_chunks = 2 ;delay_ms=0'],
    ['chat', 'mid_tool_call;after_chunks=5;delay_ms=0'],
    ['completions', 'no_done;after_chunks=2;delay_ms=0'],
  ] as const)('%s %s: the same trigger gives the same bytes and the same death', async (kind, fault) => {
    const first = await request(kind, fault, { stream_options: { include_usage: true } });
    const second = await request(kind, fault, { stream_options: { include_usage: true } });
    expect(second.rawBody.equals(first.rawBody)).toBe(true);
    expect(second.ending).toBe(first.ending);
    expect(first.rawBody.length).toBeGreaterThan(0);
  });
});

describe('directive validation', () => {
  it.each([
    ['unknown mode', 'explode'],
    ['unknown key', 'reset;after=2'],
    ['malformed after_chunks', 'reset;after_chunks=-1'],
    ['after_chunks beyond u32', 'reset;after_chunks=4294967296'],
    ['malformed utf8', 'cut_mid_frame;utf8=yes'],
    ['missing mode', ';after_chunks=1'],
  ])('%s: 400 invalid_fault_directive listing the valid modes', async (_name, fault) => {
    for (const kind of ['chat', 'completions'] as const) {
      const res = await request(kind, fault);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toBe('application/json');
      const body = JSON.parse(res.rawBody.toString('utf8')) as { error: Record<string, unknown> };
      expect(body.error.code).toBe('invalid_fault_directive');
      for (const mode of FAULT_MODES) expect(body.error.message).toContain(mode);
    }
  });

  it('a fault header on a non-streaming request is a 400 invalid_fault_directive', async () => {
    for (const kind of ['chat', 'completions'] as const) {
      const res = await request(kind, 'reset', { stream: false });
      expect(res.status).toBe(400);
      const body = JSON.parse(res.rawBody.toString('utf8')) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ code: 'invalid_fault_directive', type: 'invalid_request_error' });
      expect(body.error.message).toMatch(/stream/);
    }
  });

  it('counts injected faults and refused directives in /metrics', async () => {
    const text = await readMetrics(sim.baseUrl);
    expect(
      metricValue(text, 'sim_faults_injected_total', { model_name: 'zero', mode: 'reset' }),
    ).toBeGreaterThan(0);
    expect(metricValue(text, 'sim_rejections_total', { code: 'invalid_fault_directive' })).toBeGreaterThan(0);
  });
});

describe('precedence', () => {
  it('the header wins over the model [fault] table', async () => {
    const res = await request('chat', 'no_usage;after_chunks=2;delay_ms=0', {}, 'faulty');
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(true);
    expect(expectPrefix('chat', frames, 2)).toHaveLength(1);
  });

  it('the model [fault] table wins over an echo directive', async () => {
    const res = await rawRequest(sim.port, {
      path: '/v1/chat/completions',
      body: {
        model: 'faulty',
        stream: true,
        messages: [{ role: 'user', content: '@sim {"text":"scripted"}' }],
      },
    });
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    const { frames } = parse(res);
    expect(expectPrefix('chat', frames, 1)).toEqual([]);
    expect(res.payload.toString('utf8')).not.toContain('scripted');
  });

  it('without any trigger the stream is normal: finish frame and [DONE]', async () => {
    const res = await request('chat', undefined, { max_tokens: 3 });
    expect(res.terminated).toBe(true);
    const { frames, done } = parse(res);
    expect(done).toBe(true);
    expect(frames).toHaveLength(4);
    expect(choice(frames[3]!).finish_reason).toBe('length');
  });
});
