import { isGatewaySignature } from './signature.js';
import {
  DroppedFields,
  Refusal,
  child,
  expectArray,
  expectBoolean,
  expectNonEmptyString,
  expectRecord,
  expectString,
  item,
  optional,
  type JsonRecord,
} from './shape.js';

/**
 * The `messages` of a Messages request (and its `system` prompt) as chat-completions messages.
 *
 * - A user turn's `tool_result` blocks become `role: "tool"` messages placed right after the
 *   assistant message that made the calls (before any in-conversation system message that came
 *   between), and its other blocks follow as one user message. Each result must answer a
 *   `tool_use` of the assistant message before it, and every such `tool_use` must get one:
 *   chat-completions providers reject either mismatch, so it is refused here with its path.
 * - `is_error: true` on a tool result: chat completions has no error flag on a tool message, so the
 *   content is carried with the prefix `Error: ` (what the model reads as the tool failing).
 * - An assistant turn's text blocks are concatenated without a separator (they are consecutive
 *   output of one turn), its `tool_use` blocks become `tool_calls`, and a thinking block is dropped
 *   when its signature is this gateway's (`thinking` in the dropped list); any other thinking
 *   block, and every `redacted_thinking`, is Anthropic's reasoning and is refused.
 * - The conversation must end with a user turn (in-conversation system messages may follow it): a
 *   final assistant message asks Anthropic to continue it (prefill), which chat completions cannot.
 * - `cache_control` is dropped wherever it occurs: chat providers cache prefixes by themselves.
 */

export interface EffortSource {
  /** The effort value as sent, checked by the reader of efforts. */
  readonly value: unknown;
  readonly path: string;
  /** The index-free path under which an effort left unused is reported. */
  readonly pattern: string;
}

export interface TranslatedMessages {
  readonly messages: JsonRecord[];
  /** `output_config.effort` of the in-conversation system messages, in order. */
  readonly efforts: EffortSource[];
}

const MESSAGE_KEYS: ReadonlySet<string> = new Set(['role', 'content']);
const SYSTEM_MESSAGE_KEYS: ReadonlySet<string> = new Set(['role', 'content', 'output_config']);
const MESSAGE_OUTPUT_CONFIG_KEYS: ReadonlySet<string> = new Set(['effort']);
const TEXT_KEYS: ReadonlySet<string> = new Set(['type', 'text']);
const IMAGE_KEYS: ReadonlySet<string> = new Set(['type', 'source']);
const BASE64_SOURCE_KEYS: ReadonlySet<string> = new Set(['type', 'media_type', 'data']);
const URL_SOURCE_KEYS: ReadonlySet<string> = new Set(['type', 'url']);
const TOOL_RESULT_KEYS: ReadonlySet<string> = new Set(['type', 'tool_use_id', 'content', 'is_error']);
const TOOL_USE_KEYS: ReadonlySet<string> = new Set(['type', 'id', 'name', 'input']);

const BLOCK_PATTERN = 'messages[].content[]';
const TOOL_RESULT_BLOCK_PATTERN = 'messages[].content[].content[]';

const TOOL_ERROR_PREFIX = 'Error: ';

/** The tool calls of the last assistant message, which the next user turn must answer. */
interface PendingToolCalls {
  readonly path: string;
  readonly ids: readonly string[];
  /** Where in the chat messages the tool messages go: right after that assistant message. */
  readonly insertAt: number;
}

export function translateMessages(value: unknown, dropped: DroppedFields): TranslatedMessages {
  const list = expectArray(value, 'messages');
  const messages: JsonRecord[] = [];
  const efforts: EffortSource[] = [];
  let pending: PendingToolCalls | undefined;
  let lastTurn: { readonly role: string; readonly path: string } | undefined;

  for (let i = 0; i < list.length; i++) {
    const path = item('messages', i);
    const message = expectRecord(list[i], path);
    const role = message.role;
    if (role === 'system') {
      messages.push(systemMessage(message, path, efforts, dropped));
      continue;
    }
    if (role === 'user') {
      userTurn(message, path, pending, messages, dropped);
      pending = undefined;
    } else if (role === 'assistant') {
      if (pending !== undefined) {
        throw new Refusal(
          child(path, 'role'),
          `${path} must be a user message with tool_result blocks for the tool_use blocks of ${pending.path}`,
        );
      }
      pending = assistantTurn(message, path, messages, dropped);
    } else {
      throw new Refusal(child(path, 'role'), `${path}.role must be "user", "assistant" or "system"`);
    }
    lastTurn = { role, path };
  }

  if (lastTurn === undefined) {
    throw new Refusal('messages', 'messages must contain at least one user message');
  }
  if (lastTurn.role === 'assistant') {
    throw new Refusal(
      child(lastTurn.path, 'role'),
      `${lastTurn.path} is a final assistant message (prefill), which a chat-completions provider cannot continue: the conversation must end with a user message`,
    );
  }
  return { messages, efforts };
}

/**
 * A system prompt (top-level `system`, or an in-conversation system message's content): a string,
 * or text blocks joined with a blank line.
 */
export function systemText(value: unknown, path: string, pattern: string, dropped: DroppedFields): string {
  if (typeof value === 'string') return value;
  const blocks = expectArray(value, path);
  const texts: string[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const blockPath = item(path, i);
    const block = expectRecord(blocks[i], blockPath);
    if (block.type !== 'text') {
      throw new Refusal(
        child(blockPath, 'type'),
        `${blockPath}.type must be "text": a system prompt holds text only`,
      );
    }
    texts.push(expectString(block.text, child(blockPath, 'text')));
    dropped.addUnknown(block, TEXT_KEYS, pattern);
  }
  return texts.join('\n\n');
}

function systemMessage(
  message: JsonRecord,
  path: string,
  efforts: EffortSource[],
  dropped: DroppedFields,
): JsonRecord {
  dropped.addUnknown(message, SYSTEM_MESSAGE_KEYS, 'messages[]');
  const config = optional(message, 'output_config');
  if (config !== undefined) {
    const configPath = child(path, 'output_config');
    const record = expectRecord(config, configPath);
    const effort = optional(record, 'effort');
    if (effort !== undefined) {
      efforts.push({
        value: effort,
        path: child(configPath, 'effort'),
        pattern: 'messages[].output_config.effort',
      });
    }
    dropped.addUnknown(record, MESSAGE_OUTPUT_CONFIG_KEYS, 'messages[].output_config');
  }
  return {
    role: 'system',
    content: systemText(message.content, child(path, 'content'), BLOCK_PATTERN, dropped),
  };
}

function userTurn(
  message: JsonRecord,
  path: string,
  pending: PendingToolCalls | undefined,
  out: JsonRecord[],
  dropped: DroppedFields,
): void {
  dropped.addUnknown(message, MESSAGE_KEYS, 'messages[]');
  const contentPath = child(path, 'content');
  const content = message.content;
  if (typeof content === 'string') {
    if (pending !== undefined) throw missingToolResult(pending, pending.ids[0]!, contentPath);
    out.push({ role: 'user', content });
    return;
  }
  const blocks = nonEmptyBlocks(content, contentPath);
  const parts: JsonRecord[] = [];
  const toolMessages: JsonRecord[] = [];
  const answered = new Set<string>();
  for (let j = 0; j < blocks.length; j++) {
    const blockPath = item(contentPath, j);
    const block = expectRecord(blocks[j], blockPath);
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: textOf(block, blockPath, BLOCK_PATTERN, dropped) });
        break;
      case 'image':
        parts.push(imagePart(block, blockPath, dropped));
        break;
      case 'tool_result': {
        const idPath = child(blockPath, 'tool_use_id');
        const id = expectNonEmptyString(block.tool_use_id, idPath);
        if (pending === undefined || !pending.ids.includes(id)) {
          throw new Refusal(
            idPath,
            `${idPath} does not answer a tool_use block of the assistant message before it`,
          );
        }
        if (answered.has(id)) throw new Refusal(idPath, `${idPath} answers tool_use ${id} a second time`);
        answered.add(id);
        toolMessages.push(toolMessage(block, blockPath, id, dropped));
        break;
      }
      default:
        throw unsupportedBlock(block.type, blockPath, 'user');
    }
  }
  if (pending !== undefined) {
    const missing = pending.ids.find((id) => !answered.has(id));
    if (missing !== undefined) throw missingToolResult(pending, missing, contentPath);
    out.splice(pending.insertAt, 0, ...toolMessages);
  }
  if (parts.length > 0) out.push({ role: 'user', content: parts });
}

function missingToolResult(pending: PendingToolCalls, id: string, contentPath: string): Refusal {
  return new Refusal(
    contentPath,
    `${contentPath} has no tool_result block for tool_use ${id} of ${pending.path}`,
  );
}

function toolMessage(block: JsonRecord, path: string, id: string, dropped: DroppedFields): JsonRecord {
  dropped.addUnknown(block, TOOL_RESULT_KEYS, BLOCK_PATTERN);
  const isErrorValue = optional(block, 'is_error');
  const isError = isErrorValue !== undefined && expectBoolean(isErrorValue, child(path, 'is_error'));
  const text = toolResultText(optional(block, 'content'), child(path, 'content'), dropped);
  return { role: 'tool', tool_call_id: id, content: isError ? TOOL_ERROR_PREFIX + text : text };
}

/** A tool result's content: absent, a string, or text blocks joined with a blank line. */
function toolResultText(content: unknown, path: string, dropped: DroppedFields): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  const blocks = expectArray(content, path);
  const texts: string[] = [];
  for (let k = 0; k < blocks.length; k++) {
    const blockPath = item(path, k);
    const block = expectRecord(blocks[k], blockPath);
    if (block.type === 'text') {
      texts.push(textOf(block, blockPath, TOOL_RESULT_BLOCK_PATTERN, dropped));
    } else if (block.type === 'image') {
      throw new Refusal(
        child(blockPath, 'type'),
        `${blockPath} is an image inside a tool_result: a chat-completions tool message carries text only`,
      );
    } else {
      throw unsupportedBlock(block.type, blockPath, 'tool_result');
    }
  }
  return texts.join('\n\n');
}

function assistantTurn(
  message: JsonRecord,
  path: string,
  out: JsonRecord[],
  dropped: DroppedFields,
): PendingToolCalls | undefined {
  dropped.addUnknown(message, MESSAGE_KEYS, 'messages[]');
  const contentPath = child(path, 'content');
  const content = message.content;
  if (typeof content === 'string') {
    out.push({ role: 'assistant', content });
    return undefined;
  }
  const blocks = nonEmptyBlocks(content, contentPath);
  let text = '';
  const toolCalls: JsonRecord[] = [];
  const ids: string[] = [];
  for (let j = 0; j < blocks.length; j++) {
    const blockPath = item(contentPath, j);
    const block = expectRecord(blocks[j], blockPath);
    switch (block.type) {
      case 'text':
        text += textOf(block, blockPath, BLOCK_PATTERN, dropped);
        break;
      case 'tool_use': {
        const idPath = child(blockPath, 'id');
        const id = expectNonEmptyString(block.id, idPath);
        if (ids.includes(id)) throw new Refusal(idPath, `${idPath} repeats the tool_use id ${id}`);
        ids.push(id);
        const name = expectNonEmptyString(block.name, child(blockPath, 'name'));
        const input = expectRecord(block.input, child(blockPath, 'input'));
        dropped.addUnknown(block, TOOL_USE_KEYS, BLOCK_PATTERN);
        toolCalls.push({ id, type: 'function', function: { name, arguments: JSON.stringify(input) } });
        break;
      }
      case 'thinking':
        checkGatewayThinking(block, blockPath);
        dropped.add('thinking');
        break;
      case 'redacted_thinking':
        throw new Refusal(
          child(blockPath, 'type'),
          `${blockPath} is a redacted_thinking block: Anthropic's encrypted reasoning cannot be sent to a chat-completions provider`,
        );
      default:
        throw unsupportedBlock(block.type, blockPath, 'assistant');
    }
  }
  const chat: JsonRecord = {
    role: 'assistant',
    content: text.length > 0 ? text : toolCalls.length > 0 ? null : '',
  };
  if (toolCalls.length > 0) chat.tool_calls = toolCalls;
  out.push(chat);
  return toolCalls.length > 0 ? { path, ids, insertAt: out.length } : undefined;
}

function checkGatewayThinking(block: JsonRecord, path: string): void {
  const thinking = expectString(block.thinking, child(path, 'thinking'));
  const signaturePath = child(path, 'signature');
  const signature = block.signature;
  if (typeof signature !== 'string' || !isGatewaySignature(thinking, signature)) {
    throw new Refusal(
      signaturePath,
      `${signaturePath}: the thinking block was not produced by this gateway's translation (or was altered) and cannot be sent to a chat-completions provider`,
    );
  }
}

/** Content that is not a string: an array of at least one block. */
function nonEmptyBlocks(content: unknown, path: string): readonly unknown[] {
  if (!Array.isArray(content)) {
    throw new Refusal(path, `${path} must be a string or an array of content blocks`);
  }
  if (content.length === 0) throw new Refusal(path, `${path} must not be empty`);
  return content;
}

function textOf(block: JsonRecord, path: string, pattern: string, dropped: DroppedFields): string {
  dropped.addUnknown(block, TEXT_KEYS, pattern);
  return expectString(block.text, child(path, 'text'));
}

function imagePart(block: JsonRecord, path: string, dropped: DroppedFields): JsonRecord {
  dropped.addUnknown(block, IMAGE_KEYS, BLOCK_PATTERN);
  const sourcePath = child(path, 'source');
  const source = expectRecord(block.source, sourcePath);
  let url: string;
  if (source.type === 'base64') {
    const mediaType = expectNonEmptyString(source.media_type, child(sourcePath, 'media_type'));
    const data = expectNonEmptyString(source.data, child(sourcePath, 'data'));
    dropped.addUnknown(source, BASE64_SOURCE_KEYS, `${BLOCK_PATTERN}.source`);
    url = `data:${mediaType};base64,${data}`;
  } else if (source.type === 'url') {
    url = expectNonEmptyString(source.url, child(sourcePath, 'url'));
    dropped.addUnknown(source, URL_SOURCE_KEYS, `${BLOCK_PATTERN}.source`);
  } else {
    const typePath = child(sourcePath, 'type');
    throw new Refusal(
      typePath,
      `${typePath} ${JSON.stringify(source.type)} cannot be sent to a chat-completions provider: only base64 and url images can`,
    );
  }
  return { type: 'image_url', image_url: { url } };
}

const BLOCK_ROLES: ReadonlyMap<string, string> = new Map([
  ['tool_use', 'an assistant message'],
  ['thinking', 'an assistant message'],
  ['redacted_thinking', 'an assistant message'],
  ['tool_result', 'a user message'],
  ['image', 'a user message'],
]);

/** The refusal of a block type that cannot stand where it is, or cannot be translated at all. */
function unsupportedBlock(type: unknown, path: string, where: 'user' | 'assistant' | 'tool_result'): Refusal {
  const typePath = child(path, 'type');
  if (typeof type !== 'string') return new Refusal(typePath, `${typePath} must be a string`);
  if (where === 'tool_result') {
    return new Refusal(
      typePath,
      `${typePath}: a tool_result sent to a chat-completions provider may hold only text blocks, not ${JSON.stringify(type)}`,
    );
  }
  const home = BLOCK_ROLES.get(type);
  if (home !== undefined) {
    return new Refusal(typePath, `${typePath}: a ${type} block may only appear in ${home}`);
  }
  return new Refusal(
    typePath,
    `${typePath}: content blocks of type ${JSON.stringify(type)} cannot be translated to a chat-completions request`,
  );
}
