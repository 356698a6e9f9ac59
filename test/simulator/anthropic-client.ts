import { expect } from 'vitest';

/**
 * A minimal Anthropic Messages client for tests: an SSE parser and the accumulation Anthropic's
 * SDK does over a stream, checking the framing as it goes (event names match their data's type,
 * blocks open, grow and close in order, tool input is reassembled from its JSON fragments).
 */

export interface SseEvent {
  /** The `event:` line's value; undefined for a data-only frame. */
  event: string | undefined;
  data: string;
}

/** Complete events (blank-line terminated) and whatever trails the last one. */
export function parseSse(text: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  let offset = 0;
  for (;;) {
    const end = text.indexOf('\n\n', offset);
    if (end < 0) break;
    let name: string | undefined;
    const data: string[] = [];
    for (const line of text.slice(offset, end).split('\n')) {
      if (line.startsWith('event: ')) name = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    events.push({ event: name, data: data.join('\n') });
    offset = end + 2;
  }
  return { events, rest: text.slice(offset) };
}

export type Json = Record<string, unknown>;

/** The events' data as JSON, each checked to carry the type its `event:` line names. */
export function typedEvents(events: SseEvent[]): Json[] {
  return events.map((e) => {
    const data = JSON.parse(e.data) as Json;
    expect(data.type, e.data).toBe(e.event);
    return data;
  });
}

export interface Accumulated {
  /** The message of message_start with the content, stop reason and usage the stream added. */
  message: Json;
  content: Json[];
  /** Every content_block_delta's delta, in order. */
  deltas: Json[];
  /** Whether each stage was reached. */
  sawMessageDelta: boolean;
  sawMessageStop: boolean;
  /** Index of a block still open when the events ran out. */
  openBlock: number | undefined;
}

/** Rebuilds the message as a client does; stops at an `error` event (returned as `error`). */
export function accumulate(events: Json[]): Accumulated & { error: Json | undefined } {
  const [start, ...rest] = events;
  expect(start?.type).toBe('message_start');
  const message = { ...(start!.message as Json) };
  expect(message.content).toEqual([]);
  const content: Json[] = [];
  const deltas: Json[] = [];
  const partialJson: string[] = [];
  let open: number | undefined;
  let sawMessageDelta = false;
  let sawMessageStop = false;
  for (const ev of rest) {
    expect(sawMessageStop, 'nothing after message_stop').toBe(false);
    switch (ev.type) {
      case 'ping':
        break;
      case 'content_block_start': {
        expect(open, 'a block starts only after the previous one stopped').toBeUndefined();
        expect(ev.index).toBe(content.length);
        open = ev.index as number;
        content.push({ ...(ev.content_block as Json) });
        partialJson[open] = '';
        break;
      }
      case 'content_block_delta': {
        expect(ev.index).toBe(open);
        const block = content[open!]!;
        const delta = ev.delta as Json;
        deltas.push(delta);
        if (delta.type === 'text_delta') {
          expect(block.type).toBe('text');
          block.text = (block.text as string) + (delta.text as string);
        } else if (delta.type === 'thinking_delta') {
          expect(block.type).toBe('thinking');
          block.thinking = (block.thinking as string) + (delta.thinking as string);
        } else if (delta.type === 'signature_delta') {
          expect(block.type).toBe('thinking');
          block.signature = delta.signature;
        } else if (delta.type === 'input_json_delta') {
          expect(block.type).toBe('tool_use');
          partialJson[open!] += delta.partial_json as string;
        } else {
          throw new Error(`unknown delta ${JSON.stringify(delta)}`);
        }
        break;
      }
      case 'content_block_stop': {
        expect(ev.index).toBe(open);
        const block = content[open!]!;
        if (block.type === 'tool_use' && partialJson[open!] !== '')
          block.input = JSON.parse(partialJson[open!]!);
        open = undefined;
        break;
      }
      case 'message_delta': {
        expect(open).toBeUndefined();
        sawMessageDelta = true;
        Object.assign(message, ev.delta as Json);
        if (ev.usage !== undefined) message.usage = { ...(message.usage as Json), ...(ev.usage as Json) };
        break;
      }
      case 'message_stop':
        expect(sawMessageDelta).toBe(true);
        sawMessageStop = true;
        break;
      case 'error':
        return { message, content, deltas, sawMessageDelta, sawMessageStop, openBlock: open, error: ev };
      default:
        throw new Error(`unknown event ${JSON.stringify(ev)}`);
    }
  }
  message.content = content;
  return { message, content, deltas, sawMessageDelta, sawMessageStop, openBlock: open, error: undefined };
}

/** POSTs a Messages request with fetch and reads the whole answer. */
export async function postMessages(
  baseUrl: string,
  body: unknown,
  options: { path?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; text: string; json: Json | undefined }> {
  const res = await fetch(`${baseUrl}${options.path ?? '/v1/messages'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...options.headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: Json | undefined;
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A streamed Messages request, parsed and accumulated as a client would. */
export async function streamMessages(
  baseUrl: string,
  body: Json,
): Promise<Accumulated & { status: number; contentType: string; events: Json[] }> {
  const res = await postMessages(baseUrl, { ...body, stream: true });
  expect(res.status, res.text).toBe(200);
  const { events: raw, rest } = parseSse(res.text);
  expect(rest).toBe('');
  const events = typedEvents(raw);
  const accumulated = accumulate(events);
  expect(accumulated.error).toBeUndefined();
  return { ...accumulated, status: res.status, contentType: res.headers.get('content-type') ?? '', events };
}
