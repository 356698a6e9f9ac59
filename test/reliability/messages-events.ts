/**
 * Anthropic Messages event streams as the fault matrix describes them: each event is an `event:`
 * line naming its type and a `data:` line with JSON (a provider may also send a `data:` line alone).
 */

export interface NamedEvent {
  /** The `event:` line's value, or undefined when the event had none. */
  name: string | undefined;
  /** The `data:` payload, parsed when it is JSON. */
  data: Record<string, unknown> | string;
}

export interface ParsedMessagesStream {
  events: NamedEvent[];
  /** Bytes after the last complete event (a torn frame), as text. */
  trailing: string;
}

export function parseMessagesSse(text: string): ParsedMessagesStream {
  const normalized = text.replace(/\r\n/g, '\n');
  const cut = normalized.lastIndexOf('\n\n');
  const complete = cut < 0 ? '' : normalized.slice(0, cut + 2);
  const trailing = cut < 0 ? normalized : normalized.slice(cut + 2);
  const events: NamedEvent[] = [];
  for (const block of complete.split('\n\n')) {
    const lines = block.split('\n');
    const nameLine = lines.find((line) => line.startsWith('event:'));
    const data = lines
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (nameLine === undefined && data.length === 0) continue;
    const name = nameLine?.slice(6).trim();
    try {
      const parsed: unknown = JSON.parse(data);
      events.push({
        name,
        data: parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : data,
      });
    } catch {
      events.push({ name, data });
    }
  }
  return { events, trailing };
}

/** The message of an error event or frame, Anthropic's shape or OpenAI's. */
export function errorMessage(event: NamedEvent): string | undefined {
  if (typeof event.data === 'string') return undefined;
  const error = event.data.error as { message?: unknown } | undefined;
  return typeof error?.message === 'string' ? error.message : undefined;
}

/**
 * One event in a few words: `text delta`, `thinking block`, `message_delta (end_turn)`,
 * `error api_error`; a `data:` line alone that holds an error is an `unnamed error frame`; an event
 * whose data does not parse (a torn frame run into the next event) says so.
 */
export function eventLabel(event: NamedEvent): string {
  if (typeof event.data === 'string') return `${event.name ?? 'unnamed frame'} (data not JSON)`;
  const data = event.data;
  if (event.name === undefined)
    return 'error' in data
      ? 'unnamed error frame'
      : `unnamed frame ${typeof data.type === 'string' ? data.type : ''}`.trim();
  switch (event.name) {
    case 'content_block_start': {
      const block = data.content_block as { type?: unknown } | undefined;
      return `${String(block?.type)} block`;
    }
    case 'content_block_delta': {
      const delta = data.delta as { type?: unknown } | undefined;
      const kinds: Record<string, string> = {
        text_delta: 'text delta',
        thinking_delta: 'thinking delta',
        input_json_delta: 'json delta',
        signature_delta: 'signature',
      };
      return kinds[String(delta?.type)] ?? `${String(delta?.type)} delta`;
    }
    case 'content_block_stop':
      return 'block stop';
    case 'message_delta': {
      const delta = data.delta as { stop_reason?: unknown } | undefined;
      return `message_delta (${String(delta?.stop_reason)})`;
    }
    case 'error': {
      const error = data.error as { type?: unknown } | undefined;
      return `error ${String(error?.type)}`;
    }
    default:
      return event.name;
  }
}
