import { z } from 'zod';
import { estimateTokens, textTokens } from '../text/count.js';

/** A `thinking` block of an assistant turn, whose signature must be one the simulator made. */
export interface ThinkingBlock {
  /** `messages.<i>.content.<j>`, for the error message. */
  path: string;
  thinking: unknown;
  signature: unknown;
}

/** The fields of a Messages request the simulator acts on; everything else is accepted and ignored. */
export interface MessagesRequest {
  model: string | undefined;
  stream: boolean;
  maxTokens: number;
  priority: number;
  stopSequences: string[];
  promptTokens: number;
  /**
   * The prompt's `promptTokens` tokens, built only when asked (for the prefix cache), exactly as a
   * chat completion lists them: the system prompt as a leading `system` message, then per message
   * its template tokens and its text.
   */
  promptTokenList: () => string[];
  /** Where echo directives are looked for: the last user message's last text block (or string). */
  directiveText: string | undefined;
  thinkingBlocks: ThinkingBlock[];
}

export type MessagesParse =
  { ok: true; request: MessagesRequest } | { ok: false; message: string; param: string | null };

// Loose objects everywhere: clients send many fields (cache_control, citations, context_management,
// output_config, ...) the simulator has no use for.
const block = z.looseObject({ type: z.string() });
type Block = z.infer<typeof block>;
const message = z.looseObject({ role: z.string(), content: z.union([z.string(), z.array(block)]) });
const system = z.union([z.string(), z.array(block)]);

const countSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(message).min(1),
  system: system.nullish(),
});

const messagesSchema = countSchema.extend({
  max_tokens: z.int({ error: (issue) => (issue.input === undefined ? 'Field required' : undefined) }).min(1),
  stream: z.boolean().nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  priority: z.int().nullish(),
});

/** Chat template overhead per message (role markers): the same as chat completions count. */
const MESSAGE_OVERHEAD_TOKENS = 4;

interface Turn {
  role: string;
  text: string;
}

/** POST /v1/messages. */
export function parseMessagesRequest(body: unknown): MessagesParse {
  const parsed = messagesSchema.safeParse(body);
  if (!parsed.success) return invalid(parsed.error.issues);
  const data = parsed.data;
  const turns = conversation(data.system ?? undefined, data.messages);
  return {
    ok: true,
    request: {
      model: data.model ?? undefined,
      stream: data.stream === true,
      maxTokens: data.max_tokens,
      priority: data.priority ?? 0,
      stopSequences: (data.stop_sequences ?? []).filter((stop) => stop !== ''),
      promptTokens: promptTokens(turns),
      promptTokenList: () => {
        const tokens: string[] = [];
        for (const turn of turns) {
          for (let i = 0; i < MESSAGE_OVERHEAD_TOKENS; i++) tokens.push(`<|${turn.role}|${i}>`);
          textTokens(turn.text, tokens);
        }
        return tokens;
      },
      directiveText: lastUserText(data.messages),
      thinkingBlocks: thinkingBlocks(data.messages),
    },
  };
}

export type CountParse =
  | { ok: true; model: string | undefined; inputTokens: number }
  | { ok: false; message: string; param: string | null };

/** POST /v1/messages/count_tokens: the same body without `max_tokens`, counted as a prompt is. */
export function parseCountTokensRequest(body: unknown): CountParse {
  const parsed = countSchema.safeParse(body);
  if (!parsed.success) return invalid(parsed.error.issues);
  const data = parsed.data;
  return {
    ok: true,
    model: data.model ?? undefined,
    inputTokens: promptTokens(conversation(data.system ?? undefined, data.messages)),
  };
}

/** The prompt as chat would see it: the system prompt as a leading `system` message. */
function conversation(
  systemPrompt: z.infer<typeof system> | undefined,
  messages: z.infer<typeof message>[],
): Turn[] {
  const turns: Turn[] = [];
  if (systemPrompt !== undefined) turns.push({ role: 'system', text: contentText(systemPrompt) });
  for (const msg of messages) turns.push({ role: msg.role, text: contentText(msg.content) });
  return turns;
}

function promptTokens(turns: Turn[]): number {
  let tokens = 0;
  for (const turn of turns) tokens += estimateTokens(turn.text) + MESSAGE_OVERHEAD_TOKENS;
  return tokens;
}

/** The text of a content: a string, or its blocks' text joined by newlines (as chat joins parts). */
function contentText(content: string | Block[]): string {
  if (typeof content === 'string') return content;
  return content.map(blockText).join('\n');
}

/**
 * The text a block contributes to the prompt: what a model would read of it. Images and binary
 * documents contribute nothing (the simulator has no vision tokenizer).
 */
function blockText(item: Block): string {
  switch (item.type) {
    case 'text':
      return stringField(item.text);
    case 'thinking':
      return stringField(item.thinking);
    case 'redacted_thinking':
      return stringField(item.data);
    case 'tool_use':
    case 'server_tool_use':
      return `${stringField(item.name)} ${JSON.stringify(item.input ?? {})}`;
    case 'tool_result':
      return nestedText(item.content);
    case 'document':
      return documentText(item.source);
    default:
      return '';
  }
}

function documentText(source: unknown): string {
  if (typeof source !== 'object' || source === null) return '';
  const fields = source as Record<string, unknown>;
  if (fields.type === 'text') return stringField(fields.data);
  if (fields.type === 'content') return nestedText(fields.content);
  return '';
}

/** A tool result's or a document's content: a string, or blocks. */
function nestedText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parsed = z.array(block).safeParse(content);
  return parsed.success ? contentText(parsed.data) : '';
}

function stringField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The last user message's last text block, or its string content. */
function lastUserText(messages: z.infer<typeof message>[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const msg = messages[i]!;
    if (msg.role !== 'user') continue;
    if (typeof msg.content === 'string') return msg.content;
    for (let j = msg.content.length - 1; j >= 0; j--) {
      const item = msg.content[j]!;
      if (item.type === 'text' && typeof item.text === 'string') return item.text;
    }
    return undefined;
  }
  return undefined;
}

function thinkingBlocks(messages: z.infer<typeof message>[]): ThinkingBlock[] {
  const found: ThinkingBlock[] = [];
  messages.forEach((msg, i) => {
    if (msg.role !== 'assistant' || typeof msg.content === 'string') return;
    msg.content.forEach((item, j) => {
      if (item.type === 'thinking') {
        found.push({
          path: `messages.${i}.content.${j}`,
          thinking: item.thinking,
          signature: item.signature,
        });
      }
    });
  });
  return found;
}

function invalid(issues: z.core.$ZodIssue[]): { ok: false; message: string; param: string | null } {
  const issue = issues[0];
  const path = issue ? issue.path.map(String) : [];
  const at = path.length > 0 ? `${path.join('.')}: ` : '';
  return { ok: false, message: `${at}${issue?.message ?? 'invalid request'}`, param: path[0] ?? null };
}
