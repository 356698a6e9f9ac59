import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNTRUSTED_ERROR_ROWS } from '../fixtures/strict-errors.js';
import { chat, readBody } from '../helpers/client.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { until } from '../helpers/wait.js';
import { startUpstream, type RecordingUpstream, type UpstreamHandler } from '../helpers/upstream.js';
import { writeModels } from '../simulator/support.js';

/**
 * Strict streaming end to end (spec 4.5, 6, 8): the official SDK and raw byte readers against the
 * gateway in front of the simulator (fault modes through `x-sim-fault`) and a recording upstream
 * (exact upstream bytes in chosen chunkings, unfinished-event overflow).
 */

let sim: StartedSim;
let up: RecordingUpstream;
let strict: StartedGateway;
let limit64: StartedGateway;
let limit0: StartedGateway;
let client: OpenAI;

/** The simulator's placeholder text, token by token (deterministic). */
const WORDS = ['Café ', 'déjà ', 'naïve ', 'résumé ', 'señor ', 'über '];

beforeAll(async () => {
  // A few milliseconds per token, so frames reach the gateway as they are produced.
  const { files } = writeModels({
    'zero.toml':
      'name = "zero"\noutput_tokens = 6\n[latency]\nprefill_ms = 0\nprefill_per_token_ms = 0\ndecode_ms = 3\ndecode_per_seq_ms = 0\n',
  });
  [sim, up] = await Promise.all([startSim(['--enable-directives', '--model', files[0]!]), startUpstream()]);
  const targets = {
    sim: { url: `${sim.baseUrl}/v1`, gateway_model: 'zero' },
    'sim-trusted': { url: `${sim.baseUrl}/v1`, gateway_model: 'zero', trusted: true },
    rec: { url: up.url },
  };
  [strict, limit64, limit0] = await Promise.all([
    startGateway({ strict_mode: true, targets }),
    startGateway({ strict_mode: true, targets }, { args: ['--sse-buffer-limit', '64'] }),
    startGateway({ strict_mode: true, targets }, { args: ['--sse-buffer-limit', '0'] }),
  ]);
  client = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await Promise.all([strict?.stop(), limit64?.stop(), limit0?.stop()]);
  await Promise.all([sim?.stop(), up?.close()]);
});

beforeEach(() => {
  up.requests.length = 0;
});

// --- helpers -------------------------------------------------------------------------------------

interface StreamRead {
  status: number;
  contentType: string | null;
  bytes: Buffer;
  text: string;
  /**
   * The response ended with a transport error (cut, reset, destroyed) rather than a clean end: the
   * body failed, or the connection dropped before a response head (status 0).
   */
  failed: boolean;
}

async function stream(
  gateway: StartedGateway,
  model: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Promise<StreamRead> {
  let response: Response;
  try {
    response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(chat(model, { stream: true, ...extra })),
    });
  } catch {
    // The connection was dropped before a response head arrived.
    return { status: 0, contentType: null, bytes: Buffer.alloc(0), text: '', failed: true };
  }
  const { bytes, failed } = await readBody(response);
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    bytes,
    text: bytes.toString('utf8'),
    failed,
  };
}

type Event = Record<string, unknown> | '[DONE]';

/** The complete events of a re-emitted stream: every one `data: <one line>\n\n`, nothing else. */
function events(text: string): Event[] {
  const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
  const out: Event[] = [];
  for (const block of complete.split('\n\n')) {
    if (block.length === 0) continue;
    expect(block.startsWith('data: ')).toBe(true);
    expect(block.includes('\n')).toBe(false);
    const data = block.slice(6);
    out.push(data === '[DONE]' ? data : (JSON.parse(data) as Record<string, unknown>));
  }
  return out;
}

interface ChunkShape {
  model: string;
  choices: { delta: Record<string, unknown>; finish_reason: string | null }[];
}

const isChunk = (e: Event): e is Record<string, unknown> & ChunkShape =>
  e !== '[DONE]' && e.object === 'chat.completion.chunk';

function contentOf(list: Event[]): string {
  return list
    .filter(isChunk)
    .map((c) => (c.choices[0]?.delta.content as string | undefined) ?? '')
    .join('');
}

const fault = (mode: string, extra = ''): Record<string, string> => ({
  'x-sim-fault': `${mode};after_chunks=2;delay_ms=5${extra}`,
});

/** A chat chunk as the recording upstream sends it, and as the client gets it back under `alias`. */
const chunkValue = (content: string, alias = 'up') => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: alias,
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

const chunkEvent = (content: string, extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ ...chunkValue(content), ...extra })}\n\n`;

/** Writes `parts` as separate writes, `gapMs` apart, then ends (with `[DONE]` when asked). */
function writes(parts: readonly (string | Buffer)[], gapMs: number, done: boolean): UpstreamHandler {
  return async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const part of parts) {
      if (res.destroyed) return;
      res.write(part);
      if (gapMs > 0) await sleep(gapMs);
    }
    res.end(done ? 'data: [DONE]\n\n' : undefined);
  };
}

// --- the SDK against strict streams --------------------------------------------------------------

describe('the openai SDK through a strict gateway (simulator upstream)', () => {
  it('consumes a stream without error; every chunk carries the alias and only reference fields', async () => {
    const chunks = [];
    const response = await client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of response) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) expect(chunk.model).toBe('sim');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(WORDS.join(''));
    const finished = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finished).toHaveLength(1);
    expect(finished[0]!.choices[0]).not.toHaveProperty('stop_reason');
    expect(chunks.at(-1)!.usage).toMatchObject({ completion_tokens: 6 });
  });

  it('consumes a non-streaming answer; model is the alias, Content-Length exact', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.model).toBe('sim');
    expect(data.choices[0]!.message.content).toBe(WORDS.join(''));
    expect(data.choices[0]).not.toHaveProperty('stop_reason');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(data))));
  });

  it('surfaces a masked embedded error as an APIError carrying the standard error', async () => {
    const response = await client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { headers: fault('error_envelope_200') },
    );
    const seen: string[] = [];
    let caught: unknown;
    try {
      for await (const chunk of response) seen.push(chunk.choices[0]?.delta.content ?? '');
    } catch (error) {
      caught = error;
    }
    expect(seen.join('')).toBe('Café déjà ');
    expect(caught).toBeInstanceOf(OpenAI.APIError);
    const error = caught as InstanceType<typeof OpenAI.APIError>;
    expect(error.error).toEqual({ message: 'Bad gateway', type: 'api_error', param: null, code: 502 });
    expect(error.message).not.toContain('simulated');
  });
});

// --- fault modes ---------------------------------------------------------------------------------

const PARTIAL = 'Café déjà ';

describe('simulator fault modes through strict mode', () => {
  /** Stand-alone error events (spec 6): the data is an object with only `error`. */
  const errorEvent = (list: Event[]): Record<string, unknown> => {
    const last = list.at(-1);
    expect(last).not.toBe('[DONE]');
    expect(Object.keys(last as object)).toEqual(['error']);
    return (last as { error: Record<string, unknown> }).error;
  };

  it.each([
    ['error_envelope_200', { message: 'Bad gateway', type: 'api_error', param: null, code: 502 }],
    [
      'error_400_in_sse',
      { message: 'Invalid request', type: 'invalid_request_error', param: null, code: 400 },
    ],
    // 499 is outside the masking table: the module surfaces other 4xx as 502 (errors.ts).
    ['cancelled_499', { message: 'Bad gateway', type: 'api_error', param: null, code: 502 }],
  ])('%s, untrusted: masked stand-alone error event, no [DONE], clean end', async (mode, expected) => {
    const read = await stream(strict, 'sim', fault(mode));
    expect(read.status).toBe(200);
    expect(read.contentType).toBe('text/event-stream; charset=utf-8');
    expect(read.failed).toBe(false);
    const list = events(read.text);
    expect(read.text.endsWith('\n\n')).toBe(true);
    expect(list).not.toContain('[DONE]');
    expect(contentOf(list)).toBe(PARTIAL);
    for (const chunk of list.filter(isChunk)) expect(chunk.model).toBe('sim');
    expect(errorEvent(list)).toEqual(expected);
    // Nothing of the provider's own error reaches the client.
    for (const leaked of ['simulated', 'Simulated', 'metadata', 'CancelledError', 'BadRequestError'])
      expect(read.text).not.toContain(leaked);
  });

  it.each([
    [
      'error_envelope_200',
      {
        message: 'Upstream error: the provider returned an error mid-stream (simulated)',
        code: 502,
        metadata: { provider_name: 'sim', fault: 'error_envelope_200', model: 'zero' },
      },
    ],
    [
      'error_400_in_sse',
      {
        object: 'error',
        message: 'Simulated in-stream error after partial output',
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    ],
    ['cancelled_499', { message: 'CancelledError: ', type: 'request_cancelled', code: 499 }],
  ])('%s, trusted: the provider error verbatim, no [DONE]', async (mode, expected) => {
    const read = await stream(strict, 'sim-trusted', fault(mode));
    expect(read.failed).toBe(false);
    const list = events(read.text);
    expect(list).not.toContain('[DONE]');
    expect(contentOf(list)).toBe(PARTIAL);
    expect(errorEvent(list)).toEqual(expected);
  });

  it.each([
    ['cut_between_frames', ''],
    ['cut_mid_frame', ''],
    ['cut_mid_frame', ';utf8=true'],
    ['reset', ''],
  ])('%s%s: the client sees an error, never [DONE], never a torn frame', async (mode, extra) => {
    for (const model of ['sim', 'sim-trusted']) {
      const read = await stream(strict, model, fault(mode, extra));
      expect(read.status).toBe(200);
      // Every byte the client got is whole events (the torn upstream frame is never forwarded).
      const list = events(read.text);
      expect(read.text.endsWith('\n\n')).toBe(true);
      expect(list).not.toContain('[DONE]');
      expect(contentOf(list)).toBe(PARTIAL);
      const last = list.at(-1)!;
      const sawErrorEvent = last !== '[DONE]' && Object.keys(last).join() === 'error';
      expect(sawErrorEvent || read.failed).toBe(true);
      if (sawErrorEvent) expect((last as { error: { code: number } }).error.code).toBe(502);
    }
  });

  it('no_done: the stream ends after the last frame and no [DONE] is fabricated', async () => {
    const read = await stream(strict, 'sim', fault('no_done'), { stream_options: { include_usage: true } });
    expect(read.failed).toBe(false);
    const list = events(read.text);
    expect(list).not.toContain('[DONE]');
    expect(read.text).not.toContain('[DONE]');
    expect(contentOf(list)).toBe(PARTIAL);
    const chunks = list.filter(isChunk);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    // The separate usage frame (empty choices) is a reference chunk and survives.
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 2 }, model: 'sim' });
  });

  it('no_usage: [DONE] passes through when the provider sends it', async () => {
    const read = await stream(strict, 'sim', fault('no_usage'), { stream_options: { include_usage: true } });
    expect(read.failed).toBe(false);
    expect(read.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(
      events(read.text)
        .filter(isChunk)
        .some((c) => c.choices.length === 0),
    ).toBe(false);
  });

  it('mid_reasoning: reasoning_content is not a reference field and is removed; the cut is an error', async () => {
    const read = await stream(strict, 'sim', fault('mid_reasoning'));
    expect(read.text).not.toContain('reasoning_content');
    expect(read.text).not.toContain('Café');
    const list = events(read.text);
    const chunks = list.filter(isChunk);
    // Role frame, then the two reasoning frames with their (only) delta field dropped.
    expect(chunks.map((c) => c.choices[0]!.delta)).toEqual([{ role: 'assistant', content: '' }, {}, {}]);
    expect(list).not.toContain('[DONE]');
    const last = list.at(-1)!;
    expect((last !== '[DONE]' && 'error' in last) || read.failed).toBe(true);
  });

  it('mid_tool_call: tool-call deltas are reference fields and survive until the cut', async () => {
    const read = await stream(strict, 'sim', fault('mid_tool_call'));
    const chunks = events(read.text).filter(isChunk);
    expect(chunks[1]!.choices[0]!.delta).toMatchObject({
      tool_calls: [{ index: 0, id: 'call_sim_fault_0', function: { name: 'get_weather' } }],
    });
    expect(read.text).not.toContain('[DONE]');
  });
});

// --- errors before the first frame --------------------------------------------------------------

describe('errors in a 200 stream before any data frame (recording upstream)', () => {
  const errorFirst = (error: unknown): UpstreamHandler =>
    writes([': ping\n\n', `data: ${JSON.stringify({ error })}\n\n`, 'data: [DONE]\n\n'], 10, false);

  it('untrusted: the only event is the masked error event; no [DONE]', async () => {
    up.respondWith(errorFirst({ message: 'RAW over quota', type: 'tokens', code: 'rate_limit_exceeded' }));
    const read = await stream(strict, 'rec');
    expect(read.status).toBe(200);
    expect(read.failed).toBe(false);
    expect(read.text).toBe(
      `data: ${JSON.stringify({ error: { message: 'Rate limit exceeded', type: 'rate_limit_error', param: null, code: 429 } })}\n\n`,
    );
  });

  it('a chunk that is not a chat completion chunk becomes a 502 error event; the raw data never shows', async () => {
    up.respondWith(writes(['data: {"vendor":"RAW-DATA"}\n\n', 'data: [DONE]\n\n'], 10, false));
    const read = await stream(strict, 'rec');
    expect(read.text).toBe(
      `data: ${JSON.stringify({ error: { message: 'Bad gateway', type: 'api_error', param: null, code: 502 } })}\n\n`,
    );
  });
});

describe('a provider answer that arrives in one piece with its end', () => {
  const whole = (body: string): UpstreamHandler => {
    return (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    };
  };

  it.each([
    [
      'with [DONE]: the client response ends cleanly',
      chunkEvent('a') + chunkEvent('b') + 'data: [DONE]\n\n',
      'data: [DONE]\n\n',
    ],
    [
      // Cut short, whatever its last frame said: the error event tells the client, no [DONE] follows.
      'without [DONE]: the 502 error event ends it',
      chunkEvent('a') + chunkEvent('b'),
      `data: ${JSON.stringify(chunkValue('b', 'rec'))}\n\ndata: ${JSON.stringify({ error: { message: 'Bad gateway', type: 'api_error', param: null, code: 502 } })}\n\n`,
    ],
  ])('%s', async (_name, body, tail) => {
    up.respondWith(whole(body));
    const read = await stream(strict, 'rec');
    expect(read.failed).toBe(false);
    expect(contentOf(events(read.text))).toBe('ab');
    expect(read.text.endsWith(tail)).toBe(true);
  });

  it('a first frame and an embedded error in one piece: the error event ends the stream', async () => {
    up.respondWith(whole(chunkEvent('a') + chunkEvent('b', { error: { message: 'RAW', code: 503 } })));
    const read = await stream(strict, 'rec');
    expect(read.failed).toBe(false);
    expect(events(read.text)).toEqual([
      chunkValue('a', 'rec'),
      { error: { message: 'Service unavailable', type: 'api_error', param: null, code: 503 } },
    ]);
  });
});

// --- embedded code masking ----------------------------------------------------------------------

describe('embedded error codes in a stream, masked for an untrusted provider (spec 7.2)', () => {
  /** The spec's numeric rows, then codes given as numeric strings and as names (spec 7.2). */
  const TABLE: (readonly [code: unknown, status: number, type: string, message: string])[] = [
    ...UNTRUSTED_ERROR_ROWS,
    ['403', 502, 'api_error', 'Bad gateway'],
    ['429', 429, 'rate_limit_error', 'Rate limit exceeded'],
    ['rate_limit', 429, 'rate_limit_error', 'Rate limit exceeded'],
    ['rate_limit_error', 429, 'rate_limit_error', 'Rate limit exceeded'],
    ['rate_limit_exceeded', 429, 'rate_limit_error', 'Rate limit exceeded'],
    ['context_length_exceeded', 500, 'api_error', 'Internal server error'],
  ];

  it.each(TABLE)('code %j -> %i %s', async (code, status, type, message) => {
    const error = { message: 'RAW provider detail', type: 'vendor', param: 'x', code };
    up.respondWith(
      // The error rides on a chunk that also has completion fields (spec 6: with or without them).
      writes([chunkEvent('a'), chunkEvent('b', { error })], 10, true),
    );
    const untrusted = await stream(strict, 'rec');
    expect(untrusted.failed).toBe(false);
    expect(events(untrusted.text)).toEqual([
      chunkValue('a', 'rec'),
      { error: { message, type, param: null, code: status } },
    ]);
    expect(untrusted.text).not.toContain('RAW provider detail');
  });
});

// --- unfinished-event limit ----------------------------------------------------------------------

describe('--sse-buffer-limit (spec 8)', () => {
  it('64: an event larger than the limit arriving in pieces ends the stream with a body error', async () => {
    const large = chunkEvent('x'.repeat(400));
    up.respondWith(writes([chunkEvent('first'), large.slice(0, 200), large.slice(200)], 60, true));
    const read = await stream(limit64, 'rec');
    expect(read.status).toBe(200);
    expect(read.failed).toBe(true);
    // What was complete before the overflow was delivered, sanitized; nothing after it.
    expect(events(read.text)).toEqual([chunkValue('first', 'rec')]);
    expect(read.text).not.toContain('xxxx');
    expect(read.text).not.toContain('[DONE]');
    await limit64.program.waitForLog(
      (l) => typeof l.msg === 'string' && l.msg.includes('--sse-buffer-limit'),
    );
  });

  it('64: the first frame and an oversized unfinished event in one piece: the frame, then a body error', async () => {
    const large = chunkEvent('x'.repeat(400));
    up.respondWith(writes([chunkEvent('first') + large.slice(0, 200), large.slice(200)], 60, true));
    const read = await stream(limit64, 'rec');
    expect(read.status).toBe(200);
    expect(read.failed).toBe(true);
    expect(events(read.text)).toEqual([chunkValue('first', 'rec')]);
  });

  it('64: an overflow before the first frame is a stream error too, never a clean (empty) end', async () => {
    const large = chunkEvent('y'.repeat(400));
    up.respondWith(writes([large.slice(0, 150), large.slice(150)], 60, true));
    const before = limit64.program.logs.length;
    const read = await stream(limit64, 'rec');
    // Spec 7.1: an unsent overflow has no status of its own; the client sees the connection fail.
    expect(read.failed).toBe(true);
    expect(read.status === 0 || read.status === 200).toBe(true);
    expect(read.text).toBe('');
    // Logged like an overflow after the first frame.
    await until(() =>
      limit64.program.logs
        .slice(before)
        .some((l) => typeof l.msg === 'string' && l.msg.includes('--sse-buffer-limit')),
    );
  });

  it('64: complete events larger than the limit, each in one write, are not an overflow', async () => {
    up.respondWith(writes([chunkEvent('a'.repeat(300)), chunkEvent('b'.repeat(300))], 20, true));
    const read = await stream(limit64, 'rec');
    expect(read.failed).toBe(false);
    expect(contentOf(events(read.text))).toBe('a'.repeat(300) + 'b'.repeat(300));
    expect(read.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('0: whole events pass; any event split across writes is a body error', async () => {
    up.respondWith(writes([chunkEvent('one'), chunkEvent('two')], 20, true));
    const whole = await stream(limit0, 'rec');
    expect(whole.failed).toBe(false);
    expect(contentOf(events(whole.text))).toBe('onetwo');
    expect(whole.text.endsWith('data: [DONE]\n\n')).toBe(true);

    const event = chunkEvent('three');
    up.respondWith(writes([chunkEvent('one'), event.slice(0, 10), event.slice(10)], 60, true));
    const split = await stream(limit0, 'rec');
    expect(split.failed).toBe(true);
    expect(contentOf(events(split.text))).toBe('one');
    expect(split.text).not.toContain('[DONE]');
  });

  it('simulator: whole frames pass both limits; the torn frame of cut_mid_frame overflows 64 bytes', async () => {
    for (const gateway of [limit64, limit0]) {
      const read = await stream(gateway, 'sim');
      expect(read.failed).toBe(false);
      expect(contentOf(events(read.text))).toBe(WORDS.join(''));
      expect(read.text.endsWith('data: [DONE]\n\n')).toBe(true);
    }
    // About 90 bytes of a frame arrive, then the connection closes: over the limit before the close,
    // so the stream ends with a body error rather than the error event a plain cut gets. (Frames
    // 40 ms apart, so each arrives on its own read.)
    const torn = await stream(limit64, 'sim', { 'x-sim-fault': 'cut_mid_frame;after_chunks=2;delay_ms=40' });
    expect(torn.status).toBe(200);
    expect(torn.failed).toBe(true);
    const list = events(torn.text);
    // Complete frames written just before the cut may or may not be flushed before the connection is
    // dropped; what arrives is a prefix of the partial answer, and never an error event or [DONE].
    expect(PARTIAL.startsWith(contentOf(list))).toBe(true);
    expect(list.every((e) => e !== '[DONE]' && !('error' in e))).toBe(true);
    await limit64.program.waitForLog(
      (l) => l.msg === 'unfinished SSE event exceeded --sse-buffer-limit; stream cut' && l.limit === 64,
    );
  });

  it('an upstream that ends cleanly inside an event is a body error, not a clean end', async () => {
    up.respondWith(writes([chunkEvent('whole'), 'data: {"id":"c1","object":"chat.comp'], 20, false));
    const read = await stream(strict, 'rec');
    expect(read.failed).toBe(true);
    expect(contentOf(events(read.text))).toBe('whole');
    expect(read.text).not.toContain('chat.comp"');
  });
});

// --- chunking does not change the output ---------------------------------------------------------

describe('end-to-end chunking: the same upstream bytes in any chunking give byte-identical output', () => {
  const chunk = (content: string, extra: Record<string, unknown> = {}) => ({
    id: 'chatcmpl-9',
    object: 'chat.completion.chunk',
    created: 7,
    model: 'vendor/model',
    choices: [{ index: 0, delta: { content }, finish_reason: null, ...extra }],
  });
  // CRLF line ends, comments, provider framing fields, multi-line data, 2-, 3- and 4-byte UTF-8.
  const upstreamText =
    ': keep-alive\r\n\r\n' +
    `event: message\r\nid: 1\r\ndata: ${JSON.stringify({ ...chunk('Héllo '), kv_transfer_params: { a: 1 } })}\r\n\r\n` +
    ': ping\r\n' +
    JSON.stringify(chunk('中文 😀 ', { stop_reason: null }), null, 2)
      .split('\n')
      .map((line) => `data: ${line}\r\n`)
      .join('') +
    '\r\n' +
    `data: ${JSON.stringify({ ...chunk('€nd'), choices: [{ index: 0, delta: { content: '€nd', reasoning_content: 'hidden' }, finish_reason: 'stop' }] })}\r\n\r\n` +
    'data: [DONE]\r\n\r\n';
  const bytes = Buffer.from(upstreamText, 'utf8');

  /** Cut points: after the first byte of every multi-byte character, and between every CR and LF. */
  const utf8Cuts: number[] = [];
  const crlfCuts: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i]! >= 0xc0) utf8Cuts.push(i + 1);
    if (bytes[i] === 0x0d && bytes[i + 1] === 0x0a) crlfCuts.push(i + 1);
  }
  const split = (cuts: readonly number[]): Buffer[] => {
    const out: Buffer[] = [];
    let last = 0;
    for (const cut of [...cuts].sort((a, b) => a - b)) {
      out.push(bytes.subarray(last, cut));
      last = cut;
    }
    out.push(bytes.subarray(last));
    return out.filter((b) => b.length > 0);
  };
  // A fixed pseudo-random chunking (deterministic, so a failure is reproducible).
  const randomCuts: number[] = [];
  for (let x = 7, i = 0; i < 40; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    randomCuts.push(x % bytes.length);
  }

  const chunkings: [string, Buffer[]][] = [
    ['one write', [bytes]],
    ['1-byte writes', [...bytes].map((b) => Buffer.from([b]))],
    ['UTF-8 characters split', split(utf8Cuts)],
    ['CR and LF split', split(crlfCuts)],
    ['pseudo-random cuts', split([...new Set(randomCuts)])],
  ];

  it('one write, 1-byte writes, split UTF-8, split CRLF, random cuts', async () => {
    const outputs: Buffer[] = [];
    for (const [, parts] of chunkings) {
      up.respondWith(async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const part of parts) {
          res.write(part);
          // A pause after each write, so the gateway reads the parts one by one rather than as
          // one coalesced buffer.
          await sleep(1);
        }
        // The end of the body is sent on its own, after the data, in every chunking.
        await sleep(20);
        res.end();
      });
      const read = await stream(strict, 'rec');
      expect(read.failed).toBe(false);
      outputs.push(read.bytes);
    }
    for (let i = 1; i < outputs.length; i++) {
      expect(outputs[i]!.equals(outputs[0]!), `${chunkings[i]![0]} differs from one write`).toBe(true);
    }
    const expected = [
      chunk('Héllo '),
      chunk('中文 😀 '),
      { ...chunk('€nd'), choices: [{ index: 0, delta: { content: '€nd' }, finish_reason: 'stop' }] },
    ].map((c) => ({ ...c, model: 'rec' }));
    expect(events(outputs[0]!.toString('utf8'))).toEqual([...expected, '[DONE]']);
    const text = outputs[0]!.toString('utf8');
    for (const dropped of [
      'keep-alive',
      'ping',
      'event:',
      'id: 1',
      '\r',
      'kv_transfer_params',
      'stop_reason',
      'hidden',
    ])
      expect(text).not.toContain(dropped);
  });
});
