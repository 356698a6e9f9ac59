/**
 * The API a benchmark target is sent requests in: OpenAI's chat completions (every row but the
 * Messages rows) or Anthropic's Messages API. A row is compared with the direct and floor targets
 * that send the same requests, so each surface names its own.
 */
import {
  ALIAS,
  ANTHROPIC_VERSION,
  CHAT_PATH,
  MESSAGES_PATH,
  chatRequestBody,
  eventsPerStream,
  messagesEventsPerStream,
  messagesRequestBody,
} from './payloads.ts';

export interface RequestSurface {
  readonly name: 'chat' | 'messages';
  readonly path: string;
  /** Request headers every client of this API sends besides `content-type`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The non-streamed request body and the streamed one. */
  readonly body: string;
  readonly streamBody: string;
  /** SSE events a client receives per stream of `chunks` upstream chunks. */
  eventsPerStream(chunks: number): number;
  /** The answer's text in a response body of this API; undefined when it has none. */
  answerText(json: string): unknown;
  /** Names of the targets a row of this surface is compared with: the upstream alone, and the floor. */
  readonly direct: string;
  readonly floor: string;
}

function parsed(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

export const CHAT_SURFACE: RequestSurface = {
  name: 'chat',
  path: CHAT_PATH,
  headers: {},
  body: chatRequestBody(ALIAS, false),
  streamBody: chatRequestBody(ALIAS, true),
  eventsPerStream,
  answerText: (json) =>
    (parsed(json) as { choices?: { message?: { content?: unknown } }[] } | undefined)?.choices?.[0]?.message
      ?.content,
  direct: 'direct',
  floor: 'floor',
};

export const MESSAGES_SURFACE: RequestSurface = {
  name: 'messages',
  path: MESSAGES_PATH,
  headers: { 'anthropic-version': ANTHROPIC_VERSION },
  body: messagesRequestBody(ALIAS, false),
  streamBody: messagesRequestBody(ALIAS, true),
  eventsPerStream: messagesEventsPerStream,
  answerText: (json) => (parsed(json) as { content?: { text?: unknown }[] } | undefined)?.content?.[0]?.text,
  direct: 'direct messages',
  floor: 'floor messages',
};

/** Whether a target is one of its surface's references (direct or floor), not compared with itself. */
export function isReference(name: string, surface: RequestSurface): boolean {
  return name === surface.direct || name === surface.floor;
}
