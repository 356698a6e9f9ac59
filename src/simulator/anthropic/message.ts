import type { OutputPlan, Piece } from '../openai/plan.js';
import {
  MESSAGE_STOP_EVENT,
  PING_EVENT,
  blockStop,
  inputJsonDelta,
  inputUsage,
  messageDelta,
  messageStart,
  signatureDelta,
  stopReason,
  textBlockStart,
  textDelta,
  thinkingBlockStart,
  thinkingDelta,
  toolUseBlockStart,
  type BlockType,
  type MessageIdentity,
} from './events.js';
import { thinkingSignature } from './signature.js';

/** One Messages answer: the plan the engine paces, and what Anthropic's framing adds to it. */
export interface MessageAnswer {
  identity: MessageIdentity;
  plan: OutputPlan;
  /** The stop sequence the plan was cut at, or null. */
  stopSequence: string | null;
  promptTokens: number;
}

/**
 * The block a piece belongs to: undefined when it continues the open block, else the type of the
 * block it opens. Runs of text form one text block and runs of reasoning one thinking block; every
 * tool call is its own tool_use block, opened by its start and continued by its arguments.
 */
function opens(piece: Piece, open: BlockType | undefined): BlockType | undefined {
  switch (piece.kind) {
    case 'content':
      return open === 'text' ? undefined : 'text';
    case 'reasoning':
      return open === 'thinking' ? undefined : 'thinking';
    case 'tool_start':
      return 'tool_use';
    case 'tool_args':
      // Plans always start a call before its arguments.
      return undefined;
  }
}

/** The events of one stream, built token by token; one instance per response. */
export interface MessageStream {
  /** The events for engine token `index` (the first also opens the message). */
  token: (index: number, cachedTokens: number) => string;
  /** The events after the last token: the open block's end, message_delta, message_stop. */
  finish: () => string;
}

export function messageStream(answer: MessageAnswer): MessageStream {
  const { plan } = answer;
  let block = -1;
  let open: BlockType | undefined;
  // The open thinking block's text: its signature_delta signs all of it.
  let thinking = '';

  const close = (): string => {
    if (open === undefined) return '';
    let out = '';
    if (open === 'thinking') out += signatureDelta(block, thinkingSignature(thinking));
    out += blockStop(block);
    open = undefined;
    thinking = '';
    return out;
  };

  return {
    token: (index, cachedTokens) => {
      let out =
        index === 0
          ? messageStart(answer.identity, inputUsage(answer.promptTokens, cachedTokens)) + PING_EVENT
          : '';
      const piece = plan.pieceAt(index);
      const next = opens(piece, open);
      if (next !== undefined) {
        out += close();
        block++;
        open = next;
        if (piece.kind === 'tool_start') out += toolUseBlockStart(block, piece.id, piece.name);
        else out += next === 'text' ? textBlockStart(block) : thinkingBlockStart(block);
      }
      switch (piece.kind) {
        case 'content':
          return out + textDelta(block, piece.text);
        case 'reasoning':
          thinking += piece.text;
          return out + thinkingDelta(block, piece.text);
        case 'tool_start':
          return out;
        case 'tool_args':
          return out + inputJsonDelta(block, piece.text);
      }
    },
    finish: () =>
      close() +
      messageDelta(stopReason(plan.finishReason, answer.stopSequence), answer.stopSequence, plan.length) +
      MESSAGE_STOP_EVENT,
  };
}

type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

/** The non-streaming body of a finished answer. */
export function messageBody(answer: MessageAnswer, cachedTokens: number): Record<string, unknown> {
  const { plan } = answer;
  const content: ContentBlock[] = [];
  let open: BlockType | undefined;
  let text = '';
  let args = '';
  let tool: { id: string; name: string } = { id: '', name: '' };

  const close = (): void => {
    if (open === 'text') content.push({ type: 'text', text });
    else if (open === 'thinking')
      content.push({ type: 'thinking', thinking: text, signature: thinkingSignature(text) });
    else if (open === 'tool_use') content.push({ type: 'tool_use', ...tool, input: toolInput(args) });
    text = '';
    args = '';
  };

  for (let i = 0; i < plan.length; i++) {
    const piece = plan.pieceAt(i);
    const next = opens(piece, open);
    if (next !== undefined) {
      close();
      open = next;
      tool = piece.kind === 'tool_start' ? { id: piece.id, name: piece.name } : { id: '', name: '' };
    }
    if (piece.kind === 'content' || piece.kind === 'reasoning') text += piece.text;
    else if (piece.kind === 'tool_args') args += piece.text;
  }
  close();

  return {
    id: answer.identity.id,
    type: 'message',
    role: 'assistant',
    model: answer.identity.model,
    content,
    stop_reason: stopReason(plan.finishReason, answer.stopSequence),
    stop_sequence: answer.stopSequence,
    usage: { ...inputUsage(answer.promptTokens, cachedTokens), output_tokens: plan.length },
  };
}

/** A tool call's input: its arguments as JSON, or the raw string when a script sent one that is not. */
function toolInput(args: string): unknown {
  if (args === '') return {};
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}
