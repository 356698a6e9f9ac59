import { expect } from 'vitest';
import { SseParser } from '../../src/lib/sse.js';

/**
 * A reader of Messages API SSE output as a client would read it: the events parsed by the
 * project's SSE parser, then accumulated into a message the way the Anthropic SDK's stream helper
 * does, failing on every sequence a client would reject (a delta for a block that was never
 * started, a block started out of order, an event after `message_stop`, ...).
 */

export interface MessagesEvent {
  readonly event: string;
  readonly data: Record<string, unknown>;
}

export function parseMessagesEvents(output: string): MessagesEvent[] {
  const events: MessagesEvent[] = [];
  const parser = new SseParser(
    {
      onEvent(event) {
        const data = JSON.parse(event.data) as Record<string, unknown>;
        expect(event.event).toBe(data.type);
        events.push({ event: event.event!, data });
      },
    },
    { maxPendingBytes: Number.MAX_SAFE_INTEGER },
  );
  parser.push(Buffer.from(output, 'utf8'));
  expect(parser.end().kind).toBe('clean');
  return events;
}

export type AssembledBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown; partialJson: string };

export interface AssembledMessage {
  readonly message: Record<string, unknown> | undefined;
  readonly content: AssembledBlock[];
  readonly stopReason: unknown;
  readonly stopSequence: unknown;
  readonly usage: Record<string, unknown> | undefined;
  /** `message_stop` was received. */
  readonly complete: boolean;
  readonly error: Record<string, unknown> | undefined;
}

export function assembleMessage(events: readonly MessagesEvent[]): AssembledMessage {
  let message: Record<string, unknown> | undefined;
  const content: AssembledBlock[] = [];
  let open: number | undefined;
  let stopReason: unknown;
  let stopSequence: unknown;
  let usage: Record<string, unknown> | undefined;
  let complete = false;
  let error: Record<string, unknown> | undefined;

  for (const { event, data } of events) {
    if (complete || error !== undefined) throw new Error(`${event} after the end of the stream`);
    switch (event) {
      case 'message_start':
        if (message !== undefined) throw new Error('second message_start');
        message = data.message as Record<string, unknown>;
        break;
      case 'content_block_start': {
        if (message === undefined) throw new Error('content_block_start before message_start');
        if (open !== undefined) throw new Error(`content_block_start while block ${open} is open`);
        if (data.index !== content.length) throw new Error(`block index ${String(data.index)} out of order`);
        const block = data.content_block as Record<string, unknown>;
        if (block.type === 'text') content.push({ type: 'text', text: block.text as string });
        else if (block.type === 'thinking') {
          content.push({
            type: 'thinking',
            thinking: block.thinking as string,
            signature: block.signature as string,
          });
        } else if (block.type === 'tool_use') {
          expect(block.input).toEqual({});
          content.push({
            type: 'tool_use',
            id: block.id as string,
            name: block.name as string,
            input: undefined,
            partialJson: '',
          });
        } else throw new Error(`unknown block type ${String(block.type)}`);
        open = data.index;
        break;
      }
      case 'content_block_delta': {
        if (open === undefined || data.index !== open) throw new Error('Content block not found');
        const block = content[open]!;
        const delta = data.delta as Record<string, unknown>;
        if (delta.type === 'text_delta' && block.type === 'text') block.text += delta.text as string;
        else if (delta.type === 'thinking_delta' && block.type === 'thinking')
          block.thinking += delta.thinking as string;
        else if (delta.type === 'signature_delta' && block.type === 'thinking')
          block.signature = delta.signature as string;
        else if (delta.type === 'input_json_delta' && block.type === 'tool_use') {
          block.partialJson += delta.partial_json as string;
        } else throw new Error(`${String(delta.type)} for a ${block.type} block`);
        break;
      }
      case 'content_block_stop': {
        if (open === undefined || data.index !== open) {
          throw new Error('content_block_stop for a block that is not open');
        }
        const block = content[open]!;
        if (block.type === 'tool_use') block.input = parseInput(block.partialJson);
        open = undefined;
        break;
      }
      case 'message_delta': {
        if (open !== undefined) throw new Error('message_delta while a block is open');
        const delta = data.delta as Record<string, unknown>;
        stopReason = delta.stop_reason;
        stopSequence = delta.stop_sequence;
        usage = data.usage as Record<string, unknown>;
        break;
      }
      case 'message_stop':
        if (stopReason === undefined) throw new Error('message_stop without message_delta');
        complete = true;
        break;
      case 'error':
        error = data;
        break;
      default:
        throw new Error(`unknown event ${event}`);
    }
  }
  return { message, content, stopReason, stopSequence, usage, complete, error };
}

/** The input a client reads from a tool_use block's fragments: `{}` for none, undefined if not JSON. */
function parseInput(partialJson: string): unknown {
  if (partialJson === '') return {};
  try {
    return JSON.parse(partialJson);
  } catch {
    return undefined;
  }
}
