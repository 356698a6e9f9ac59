/**
 * Every fault mode in Anthropic's Messages framing, observed over raw sockets: which events arrive,
 * whether the chunked terminator comes, and whether the connection ends with FIN or RST. The same
 * triggers and parameters as on chat completions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAULT_MODES, FAULT_TERMINAL } from '../fixtures/fault-modes.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import { accumulate, parseSse, typedEvents, type Json, type SseEvent } from './anthropic-client.js';
import {
  getJson,
  metricValue,
  rawRequest,
  readMetrics,
  writeModels,
  zeroLatencyModel,
  type RawResponse,
} from './support.js';

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
  fault: string | undefined,
  extra: Json = {},
  model = 'zero',
  timeoutMs = 5_000,
): Promise<RawResponse> {
  return rawRequest(sim.port, {
    path: '/v1/messages',
    headers: fault === undefined ? {} : { 'x-sim-fault': fault },
    body: { model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hello' }], ...extra },
    timeoutMs,
  });
}

interface Parsed {
  /** Complete events, raw. */
  raw: SseEvent[];
  /** The bytes after the last complete event (a torn frame). */
  rest: Buffer;
}

function parse(res: RawResponse): Parsed {
  const end = res.payload.lastIndexOf('\n\n');
  const complete = end < 0 ? '' : res.payload.subarray(0, end + 2).toString('utf8');
  const { events, rest } = parseSse(complete);
  expect(rest).toBe('');
  return { raw: events, rest: res.payload.subarray(end < 0 ? 0 : end + 2) };
}

/**
 * The partial output every faulting stream starts with: message_start, ping, the first block's
 * start, then `n` content frames (content_block_delta events). Returns what follows them.
 */
function expectPrefix(
  events: Json[],
  n: number,
  block: Json = { type: 'text', text: '' },
  deltaType = 'text_delta',
): Json[] {
  expect(events[0]).toMatchObject({
    type: 'message_start',
    message: { id: 'msg_sim_fault', model: 'zero', content: [] },
  });
  expect(events[1]).toEqual({ type: 'ping' });
  expect(events[2]).toEqual({ type: 'content_block_start', index: 0, content_block: block });
  const deltas = events.slice(3, 3 + n);
  expect(deltas).toHaveLength(n);
  for (const ev of deltas) {
    expect(ev).toMatchObject({ type: 'content_block_delta', index: 0, delta: { type: deltaType } });
    const delta = ev.delta as Json;
    const text = delta.text ?? delta.thinking ?? delta.partial_json;
    expect(typeof text === 'string' && text.length).toBeGreaterThan(1);
  }
  return events.slice(3 + n);
}

const ENDINGS = {
  close: { ending: 'fin', terminated: false },
  tear: { ending: 'fin', terminated: false },
  reset: { ending: 'reset', terminated: false },
  stall: { ending: 'open', terminated: false },
  end: { ending: 'fin', terminated: true },
} as const;

describe('fault modes on /v1/messages', () => {
  it.each(FAULT_MODES)('%s ends the connection as it does on chat', async (mode) => {
    const res = await request(
      `${mode};after_chunks=2;delay_ms=0`,
      {},
      'zero',
      mode === 'stall' ? 1_000 : 5_000,
    );
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['request-id']).toMatch(/^req_/);
    expect({ ending: res.ending, terminated: res.terminated }).toEqual(ENDINGS[FAULT_TERMINAL[mode]]);
  });

  it('cut_between_frames: N text deltas, then FIN on a frame boundary without the chunked terminator', async () => {
    const res = await request('cut_between_frames;after_chunks=2;delay_ms=0');
    const { raw, rest } = parse(res);
    expect(rest.length).toBe(0);
    expect(expectPrefix(typedEvents(raw), 2)).toEqual([]);
    expect(res.rawBody.subarray(-4).toString('latin1')).toBe('\n\n\r\n');
  });

  it('cut_mid_frame: half of the next content_block_delta event (valid UTF-8), then FIN', async () => {
    const res = await request('cut_mid_frame;after_chunks=2;delay_ms=0');
    const { raw, rest } = parse(res);
    const events = typedEvents(raw);
    expect(expectPrefix(events, 2)).toEqual([]);
    const torn = rest.toString('utf8');
    expect(torn.startsWith('event: content_block_delta\ndata: {"type":"content_b')).toBe(true);
    expect(() => JSON.parse(torn.slice(torn.indexOf('data: ') + 6))).toThrow();
    const previous = Buffer.byteLength(`event: content_block_delta\ndata: ${raw.at(-1)!.data}\n\n`);
    expect(rest.length).toBeGreaterThan(previous * 0.4);
    expect(rest.length).toBeLessThan(previous * 0.6);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(rest)).not.toThrow();
  });

  it('cut_mid_frame;utf8=true: the cut falls one byte into a two-byte character of the text delta', async () => {
    const res = await request('cut_mid_frame;after_chunks=1;delay_ms=0;utf8=true');
    const { raw, rest } = parse(res);
    expect(expectPrefix(typedEvents(raw), 1)).toEqual([]);
    expect(rest[rest.length - 1]! & 0xe0).toBe(0xc0);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(rest)).toThrow();
    expect(rest.toString('latin1')).toMatch(/"type":"text_delta","text":"[^"]*$/);
  });

  it('reset: N text deltas, then a TCP RST', async () => {
    const res = await request('reset;after_chunks=2;delay_ms=0');
    expect(res.errorCode).toBe('ECONNRESET');
    const { raw, rest } = parse(res);
    expect(rest.length).toBe(0);
    expect(expectPrefix(typedEvents(raw), 2)).toEqual([]);
  });

  it('stall: N text deltas, then nothing while open; the slot is freed when the client leaves', async () => {
    const res = await request('stall;after_chunks=2;delay_ms=0', {}, 'zero', 1_000);
    expect(res.ending).toBe('open');
    const { raw, rest } = parse(res);
    expect(rest.length).toBe(0);
    expect(expectPrefix(typedEvents(raw), 2)).toEqual([]);
    await until(async () => {
      const records = (await getJson(sim.baseUrl, '/control/capacity')) as {
        model: string;
        running: number;
      }[];
      return records.find((r) => r.model === 'zero')?.running === 0;
    });
  });

  it('error_envelope_200: an overloaded_error event after the deltas, in a 200 that ends cleanly', async () => {
    const res = await request('error_envelope_200;after_chunks=1;delay_ms=0');
    const { raw } = parse(res);
    expect(raw.at(-1)!.event).toBe('error');
    const [error, ...more] = expectPrefix(typedEvents(raw), 1);
    expect(more).toEqual([]);
    expect(error).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.any(String) },
    });
    expect(accumulate(typedEvents(raw)).error).toEqual(error);
  });

  it('error_400_in_sse: an invalid_request_error event in the 200 stream, then a clean end', async () => {
    const res = await request('error_400_in_sse;after_chunks=1;delay_ms=0');
    const { raw } = parse(res);
    const [error, ...more] = expectPrefix(typedEvents(raw), 1);
    expect(more).toEqual([]);
    expect(error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.any(String) },
    });
  });

  it('no_done: the block stop and message_delta with usage, then a clean end without message_stop', async () => {
    const res = await request('no_done;after_chunks=2;delay_ms=0');
    const events = typedEvents(parse(res).raw);
    const tail = expectPrefix(events, 2);
    expect(tail).toEqual([
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 2 },
      },
    ]);
    const client = accumulate(events);
    expect(client.sawMessageDelta).toBe(true);
    expect(client.sawMessageStop).toBe(false);
  });

  it('no_usage: message_start and message_delta without usage, then message_stop and a clean end', async () => {
    const res = await request('no_usage;after_chunks=2;delay_ms=0');
    const events = typedEvents(parse(res).raw);
    expect(events[0]!.message).not.toHaveProperty('usage');
    const tail = expectPrefix(events, 2);
    expect(tail).toEqual([
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } },
      { type: 'message_stop' },
    ]);
    expect(events.some((e) => 'usage' in e)).toBe(false);
  });

  it('cancelled_499: the same CancelledError frame as chat, then a clean end', async () => {
    const res = await request('cancelled_499;after_chunks=1;delay_ms=0');
    const text = res.payload.toString('utf8');
    expect(
      text.endsWith(
        'data: {"error":{"message":"CancelledError: ","type":"request_cancelled","code":499}}\n\n',
      ),
    ).toBe(true);
    const { raw } = parse(res);
    expect(raw.at(-1)!.event).toBeUndefined();
    expect(expectPrefix(typedEvents(raw.slice(0, -1)), 1)).toEqual([]);
  });

  it('mid_reasoning: thinking deltas in a thinking block that never gets its signature or its stop, then FIN', async () => {
    const res = await request('mid_reasoning;after_chunks=3;delay_ms=0');
    const events = typedEvents(parse(res).raw);
    expect(
      expectPrefix(events, 3, { type: 'thinking', thinking: '', signature: '' }, 'thinking_delta'),
    ).toEqual([]);
    const client = accumulate(events);
    expect(client.openBlock).toBe(0);
    expect(client.deltas.some((d) => d.type === 'signature_delta')).toBe(false);
  });

  it('mid_tool_call: a get_weather tool_use block whose input_json_delta fragments never close, then FIN', async () => {
    const res = await request('mid_tool_call;after_chunks=4;delay_ms=0');
    const events = typedEvents(parse(res).raw);
    const block = { type: 'tool_use', id: 'toolu_sim_fault_0', name: 'get_weather', input: {} };
    expect(expectPrefix(events, 4, block, 'input_json_delta')).toEqual([]);
    const json = events
      .slice(3)
      .map((e) => (e.delta as Json).partial_json as string)
      .join('');
    expect(json.startsWith('{"location": "')).toBe(true);
    expect(() => JSON.parse(json)).toThrow();
    expect(accumulate(events).openBlock).toBe(0);
  });

  it('after_chunks defaults to 3; after_chunks=0 sends only message_start, ping and the block start', async () => {
    expect(expectPrefix(typedEvents(parse(await request('cut_between_frames')).raw), 3)).toEqual([]);
    expect(
      expectPrefix(typedEvents(parse(await request('cut_between_frames;after_chunks=0;delay_ms=0')).raw), 0),
    ).toEqual([]);
  });

  it.each([
    'cut_mid_frame;after_chunks=3;delay_ms=0;utf8=true',
    'mid_tool_call;after_chunks=5;delay_ms=0',
    'no_done;after_chunks=2;delay_ms=1',
  ])('%s: the same trigger gives the same bytes and the same death', async (fault) => {
    const first = await request(fault);
    const second = await request(fault);
    expect(second.rawBody.equals(first.rawBody)).toBe(true);
    expect(second.ending).toBe(first.ending);
    expect(first.rawBody.length).toBeGreaterThan(0);
  });
});

describe('fault triggers on /v1/messages', () => {
  it('refuses a malformed header, and the header on a non-streamed request, with 400 invalid_request_error', async () => {
    for (const [fault, extra] of [
      ['explode', {}],
      ['reset;after=2', {}],
      ['reset', { stream: false }],
    ] as const) {
      const res = await request(fault, extra);
      expect(res.status, fault).toBe(400);
      const body = JSON.parse(res.rawBody.toString('utf8')) as { type: string; error: Json };
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('invalid_request_error');
      for (const mode of FAULT_MODES) expect(body.error.message).toContain(mode);
    }
  });

  it("applies the model's [fault] table to streamed requests and serves non-streamed ones normally", async () => {
    const streamed = await request(undefined, {}, 'faulty');
    expect(streamed.ending).toBe('fin');
    expect(streamed.terminated).toBe(false);
    const events = typedEvents(parse(streamed).raw);
    expect(events[0]!.message).toMatchObject({ model: 'faulty' });
    expect(events.slice(3)).toHaveLength(1);

    const whole = await request(undefined, { stream: false }, 'faulty');
    expect(whole.status).toBe(200);
    expect(JSON.parse(whole.rawBody.toString('utf8'))).toMatchObject({
      type: 'message',
      stop_reason: 'end_turn',
    });
  });

  it('the header wins over an echo directive, and injected faults are counted', async () => {
    const before =
      metricValue(await readMetrics(sim.baseUrl), 'sim_faults_injected_total', {
        model_name: 'zero',
        mode: 'no_usage',
      }) ?? 0;
    const res = await request('no_usage;after_chunks=1;delay_ms=0', {
      messages: [{ role: 'user', content: '@sim {"text":"scripted"}' }],
    });
    expect(res.payload.toString('utf8')).not.toContain('scripted');
    const after = metricValue(await readMetrics(sim.baseUrl), 'sim_faults_injected_total', {
      model_name: 'zero',
      mode: 'no_usage',
    });
    expect(after).toBe(before + 1);
  });
});
