import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamOnce } from '../../bench/drivers/streaming.ts';
import { ANSWER_TEXT, INTERVAL_HEADER, STREAM_HEADER } from '../../bench/support/payloads.ts';
import { startUpstream, type RunningUpstream } from '../../bench/support/services.ts';
import { CHAT_SURFACE, MESSAGES_SURFACE, type RequestSurface } from '../../bench/support/surfaces.ts';
import type { Target } from '../../bench/support/target.ts';

let upstream: RunningUpstream;
let pool: Pool;

beforeAll(async () => {
  upstream = await startUpstream(1);
  pool = new Pool(`http://127.0.0.1:${upstream.ports[0]}`);
});

afterAll(async () => {
  await pool?.close();
  await upstream?.service.stop();
});

const direct = (surface: RequestSurface): Target => ({
  name: surface.direct,
  origin: `http://127.0.0.1:${upstream.ports[0]}`,
  pid: undefined,
  headers: {},
  surface,
});

async function post(
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; text: string }> {
  const response = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return {
    status: response.statusCode,
    type: String(response.headers['content-type']),
    text: await response.body.text(),
  };
}

/** The SSE events of a body: each one's `event:` name and its data's `type`. */
function events(text: string): { event: string | undefined; type: unknown }[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length);
      const data = lines.find((l) => l.startsWith('data: '))!.slice('data: '.length);
      return { event, type: (JSON.parse(data) as { type?: unknown }).type };
    });
}

describe('the bench upstream on the Messages API', () => {
  it('answers a Messages request with a message', async () => {
    const answer = await post(MESSAGES_SURFACE.path, MESSAGES_SURFACE.body);
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/json');
    expect(JSON.parse(answer.text)).toEqual({
      id: 'msg_bench',
      type: 'message',
      role: 'assistant',
      model: expect.any(String),
      content: [{ type: 'text', text: ANSWER_TEXT }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
    });
    // The same size class as the chat answer.
    const chat = await post(CHAT_SURFACE.path, CHAT_SURFACE.body);
    expect(answer.text.length).toBeGreaterThan(chat.text.length / 3);
    expect(answer.text.length).toBeLessThan(chat.text.length * 3);
  });

  it('answers the Messages path with a query string, and chat completions as before', async () => {
    const beta = await post(`${MESSAGES_SURFACE.path}?beta=true`, MESSAGES_SURFACE.body);
    expect((JSON.parse(beta.text) as { type: string }).type).toBe('message');
    const chat = await post(CHAT_SURFACE.path, CHAT_SURFACE.body);
    expect((JSON.parse(chat.text) as { object: string }).object).toBe('chat.completion');
    expect(CHAT_SURFACE.answerText(chat.text)).toBe(ANSWER_TEXT);
    const counting = await post('/v1/messages/count_tokens', MESSAGES_SURFACE.body);
    expect((JSON.parse(counting.text) as { object: string }).object).toBe('chat.completion');
  });

  it('streams a Messages event stream from message_start to message_stop, each event named by its type', async () => {
    const answer = await post(MESSAGES_SURFACE.path, MESSAGES_SURFACE.streamBody, { [STREAM_HEADER]: '5' });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('text/event-stream');
    const seen = events(answer.text);
    expect(seen.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const e of seen) expect(e.event).toBe(e.type);
    expect(seen.length).toBe(MESSAGES_SURFACE.eventsPerStream(5));
  });

  it('paces a Messages stream like a chat stream: one write per tick, message_stop on its own', async () => {
    const answer = await post(MESSAGES_SURFACE.path, MESSAGES_SURFACE.streamBody, {
      [STREAM_HEADER]: '4',
      [INTERVAL_HEADER]: '50',
    });
    expect(events(answer.text).map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const outcome = await streamOnce(pool, direct(MESSAGES_SURFACE), {
      chunks: 4,
      intervalMs: 50,
      recordGaps: true,
    });
    expect(outcome.complete).toBe(true);
    // First write: two events; two token ticks; the closing tick's two events; message_stop.
    expect(outcome.gaps.filter((gap) => gap >= 25)).toHaveLength(4);
  });
});

describe("the drivers on a target's API", () => {
  it('send a Messages target Messages requests and count its stream complete', async () => {
    const outcome = await streamOnce(pool, direct(MESSAGES_SURFACE), {
      chunks: 50,
      intervalMs: 0,
      recordGaps: false,
    });
    expect(outcome).toMatchObject({
      status: 200,
      complete: true,
      events: MESSAGES_SURFACE.eventsPerStream(50),
    });
    const chat = await streamOnce(pool, direct(CHAT_SURFACE), {
      chunks: 50,
      intervalMs: 0,
      recordGaps: false,
    });
    expect(chat).toMatchObject({ status: 200, complete: true, events: CHAT_SURFACE.eventsPerStream(50) });
  });
});
