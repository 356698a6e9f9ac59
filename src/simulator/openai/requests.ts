import { z } from 'zod';
import { estimateTokens, textTokens } from '../text/count.js';
import type { EndpointKind } from './frames.js';

/** The fields of a completion request the simulator acts on; everything else is accepted and ignored. */
export interface CompletionRequest {
  model: string | undefined;
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number | undefined;
  priority: number;
  promptTokens: number;
  /**
   * The prompt's `promptTokens` tokens, built only when asked (for the prefix cache): a chat
   * message's template tokens, then its text; a text prompt's text, or its token ids.
   */
  promptTokenList: () => string[];
  /** Where echo directives are looked for: the last chat message, or a text prompt. */
  directiveText: string | undefined;
}

export type RequestParse =
  { ok: true; request: CompletionRequest } | { ok: false; message: string; param: string | null };

const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const message = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
});
const streamOptions = z.looseObject({ include_usage: z.boolean().nullish() }).nullish();
const tokenLimit = z.int().min(1).nullish();

// Loose objects: clients send many sampling fields the simulator has no use for.
const chatSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(message).min(1),
  stream: z.boolean().nullish(),
  stream_options: streamOptions,
  max_tokens: tokenLimit,
  max_completion_tokens: tokenLimit,
  priority: z.int().nullish(),
});

const tokenIds = z.array(z.int().min(0));
const completionSchema = z.looseObject({
  model: z.string().nullish(),
  prompt: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
  stream: z.boolean().nullish(),
  stream_options: streamOptions,
  max_tokens: tokenLimit,
  priority: z.int().nullish(),
});

/** Chat template overhead per message (role markers), roughly what real templates add. */
const MESSAGE_OVERHEAD_TOKENS = 4;

export function parseCompletionRequest(kind: EndpointKind, body: unknown): RequestParse {
  return kind === 'chat' ? parseChat(body) : parseText(body);
}

function parseChat(body: unknown): RequestParse {
  const parsed = chatSchema.safeParse(body);
  if (!parsed.success) return invalid(parsed.error.issues);
  const data = parsed.data;
  let promptTokens = 0;
  let last = '';
  for (const msg of data.messages) {
    last = messageText(msg.content);
    promptTokens += estimateTokens(last) + MESSAGE_OVERHEAD_TOKENS;
  }
  return {
    ok: true,
    request: {
      model: data.model ?? undefined,
      stream: data.stream === true,
      includeUsage: data.stream_options?.include_usage === true,
      maxTokens: data.max_completion_tokens ?? data.max_tokens ?? undefined,
      priority: data.priority ?? 0,
      promptTokens,
      promptTokenList: () => {
        const tokens: string[] = [];
        for (const msg of data.messages) {
          for (let i = 0; i < MESSAGE_OVERHEAD_TOKENS; i++) tokens.push(`<|${msg.role}|${i}>`);
          textTokens(messageText(msg.content), tokens);
        }
        return tokens;
      },
      directiveText: last,
    },
  };
}

function parseText(body: unknown): RequestParse {
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) return invalid(parsed.error.issues);
  const data = parsed.data;
  // One prompt per request: a batch of prompts would need several choices per frame.
  let prompt: string | number[];
  if (typeof data.prompt === 'string') prompt = data.prompt;
  else if (data.prompt.length === 0)
    return { ok: false, message: 'prompt must not be empty', param: 'prompt' };
  else if (typeof data.prompt[0] === 'number') prompt = data.prompt as number[];
  else if (data.prompt.length > 1) {
    return { ok: false, message: 'only one prompt per request is supported', param: 'prompt' };
  } else prompt = data.prompt[0] as string | number[];
  if (Array.isArray(prompt) && prompt.length === 0) {
    return { ok: false, message: 'prompt must not be empty', param: 'prompt' };
  }
  return {
    ok: true,
    request: {
      model: data.model ?? undefined,
      stream: data.stream === true,
      includeUsage: data.stream_options?.include_usage === true,
      maxTokens: data.max_tokens ?? undefined,
      priority: data.priority ?? 0,
      promptTokens: typeof prompt === 'string' ? estimateTokens(prompt) : prompt.length,
      promptTokenList: () => (typeof prompt === 'string' ? textTokens(prompt) : prompt.map(String)),
      directiveText: typeof prompt === 'string' ? prompt : undefined,
    },
  };
}

function messageText(content: z.infer<typeof message>['content']): string {
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => (part.type === 'text' && part.text !== undefined ? part.text : '')).join('\n');
}

function invalid(issues: z.core.$ZodIssue[]): RequestParse {
  const issue = issues[0];
  const path = issue ? issue.path.map(String) : [];
  const at = path.length > 0 ? `${path.join('.')}: ` : '';
  return { ok: false, message: `${at}${issue?.message ?? 'invalid request'}`, param: path[0] ?? null };
}
