import { generatedToolUseId, messageId } from './ids.js';
import { messagesUsage, stopOutcome } from './outcome.js';
import { isRecord, type JsonRecord } from './shape.js';
import { thinkingSignature } from './signature.js';

export type ChatToMessagesResult =
  | { readonly ok: true; readonly body: Record<string, unknown> }
  | { readonly ok: false; readonly message: string };

/**
 * A non-streamed chat completion as a Messages response.
 *
 * Content, in this order: a thinking block of the reasoning (`reasoning_content`, else vLLM's
 * `reasoning`) signed with `thinkingSignature`; a text block of the content (and of `refusal`,
 * which makes the stop reason `refusal`); a `tool_use` block per tool call (and for a legacy
 * `function_call`), whose `input` is the parsed arguments. Arguments that are not a JSON object
 * fail the translation, naming the call: an answer is never served with an input it did not have.
 * A body that is not a completion with a choice, or whose finish reason has no Messages
 * equivalent, fails too; the caller answers it as a bad upstream answer.
 */
export function chatToMessages(
  chat: unknown,
  model: string,
  stopSequences: readonly string[] | undefined,
): ChatToMessagesResult {
  if (!isRecord(chat)) return fail('the provider answer is not a JSON object');
  const choices = chat.choices;
  if (!Array.isArray(choices) || choices.length === 0) return fail('the provider answer has no choices');
  const choice: unknown = choices[0];
  if (!isRecord(choice) || !isRecord(choice.message))
    return fail('the provider answer has no choices[0].message');
  const message = choice.message;

  const content: JsonRecord[] = [];
  const reasoning = reasoningText(message);
  if (reasoning !== undefined) {
    content.push({ type: 'thinking', thinking: reasoning, signature: thinkingSignature(reasoning) });
  }
  const text = contentText(message.content);
  if (text === undefined)
    return fail('the provider answer has a choices[0].message.content that is not text');
  if (text.length > 0) content.push({ type: 'text', text });
  const refusal =
    typeof message.refusal === 'string' && message.refusal.length > 0 ? message.refusal : undefined;
  if (refusal !== undefined) content.push({ type: 'text', text: refusal });

  const toolCalls = message.tool_calls;
  if (toolCalls !== undefined && toolCalls !== null && !Array.isArray(toolCalls)) {
    return fail('the provider answer has a choices[0].message.tool_calls that is not an array');
  }
  const calls: readonly unknown[] = toolCalls ?? [];
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i];
    const block = toolUseBlock(
      isRecord(call) ? call.id : undefined,
      isRecord(call) ? call.function : undefined,
      `tool call ${i}`,
    );
    if (typeof block === 'string') return fail(block);
    content.push(block);
  }
  if (isRecord(message.function_call)) {
    const block = toolUseBlock(undefined, message.function_call, 'the function call');
    if (typeof block === 'string') return fail(block);
    content.push(block);
  }

  const hasToolCalls = content.some((block) => block.type === 'tool_use');
  const stop = stopOutcome(choice.finish_reason, choice.stop_reason, stopSequences, hasToolCalls);
  if (stop === undefined) {
    return fail(
      `the provider ended the answer with finish_reason ${JSON.stringify(choice.finish_reason)}, which has no Messages API equivalent`,
    );
  }
  const stopReason = refusal !== undefined && stop.stopReason === 'end_turn' ? 'refusal' : stop.stopReason;
  const usage = messagesUsage(chat.usage);
  return {
    ok: true,
    body: {
      id: messageId(chat.id),
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: stop.stopSequence,
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      },
    },
  };
}

function fail(message: string): ChatToMessagesResult {
  return { ok: false, message };
}

/** The reasoning text of a message or a delta: `reasoning_content`, else `reasoning`. */
export function reasoningText(record: JsonRecord): string | undefined {
  const primary = record.reasoning_content;
  if (typeof primary === 'string' && primary.length > 0) return primary;
  const secondary = record.reasoning;
  return typeof secondary === 'string' && secondary.length > 0 ? secondary : undefined;
}

/** Message content as text: a string, nothing (''), or text parts joined; undefined otherwise. */
function contentText(content: unknown): string | undefined {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  let text = '';
  for (const part of content) {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') return undefined;
    text += part.text;
  }
  return text;
}

/** A tool call as a `tool_use` block, or the reason it cannot be one. */
function toolUseBlock(id: unknown, fn: unknown, label: string): JsonRecord | string {
  if (!isRecord(fn) || typeof fn.name !== 'string' || fn.name.length === 0) {
    return `the provider answer's ${label} has no function name`;
  }
  const name = fn.name;
  const idText = typeof id === 'string' && id.length > 0 ? id : undefined;
  const described = `${label} (${JSON.stringify(name)}${idText === undefined ? '' : `, id ${idText}`})`;
  const input = parseArguments(fn.arguments);
  if (input === undefined)
    return `the provider answer's ${described} has arguments that are not a JSON object`;
  return { type: 'tool_use', id: idText ?? generatedToolUseId(), name, input };
}

/** Arguments as the object they encode (a provider may also send the object itself). */
export function parseArguments(value: unknown): JsonRecord | undefined {
  if (isRecord(value)) return value;
  if (typeof value !== 'string') return undefined;
  // A call without arguments: some providers send nothing where vLLM sends `{}`.
  if (value.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}
