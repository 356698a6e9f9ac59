import { z } from 'zod';
import { openUnion } from './open-union.js';
import { MessageContentBlock, SystemPromptBlock } from './request-schema-messages-blocks.js';
import { CacheControl, Effort, ModelName } from './request-schema-messages-common.js';
import { Tool, ToolChoice } from './request-schema-messages-tools.js';
import { JsonObject, opt } from './schema-helpers.js';

/**
 * Strict-mode schema of `POST /v1/messages`: `MessageCreateParams` of the reference SDK, with the
 * fields of its beta namespace, which a client selects with the `anthropic-beta` header.
 *
 * How strict, and why it differs from the chat and Responses schemas (which refuse unknown fields):
 * - Every field the schema names is checked: its type, its enumerated values, whether it is
 *   required. A wrong one is a schema mismatch at its path (`messages[2].content[0].source.type`).
 * - Objects are loose: a field the schema does not name passes unchanged. The Messages API adds
 *   request fields with each `anthropic-beta` value, and clients speak the beta namespace (Claude
 *   Code sends five to eight beta values with every request). A schema refusing unknown fields
 *   would break such a client on its next release, over fields the upstream accepts and the
 *   gateway never reads.
 * - The unions that grow with the betas are open (`openUnion`): content blocks, tools, citations,
 *   context-management edits and server-tool results. A known member is checked field by field, a
 *   member with an unknown string `type` passes, and a known member where the reference does not
 *   allow it is refused.
 * - Enumerations on known fields stay closed (roles, media types, cache TTLs, thinking modes,
 *   effort, `tool_choice`, service tier). A new value there is rarer than a new field or block, and
 *   an unknown one is most often a typo, which a client is better told here, with its path, than
 *   by whichever upstream the request was routed to. The price is one line here when the reference
 *   adds a value.
 * This keeps what strict mode owes a client (a malformed request refused with the path of its
 * fault) without making the gateway the last component to learn of each beta.
 *
 * Versions: the fields of SDK 0.137 (the last for API version 2023-06-01, which Claude Code sends)
 * and of SDK 1.10. So `temperature`, `top_p` and `top_k`, dropped from the 1.x request type for a
 * later API version, are still accepted, and a `system` message takes the same blocks as any other
 * (1.10 narrows it to text and tool changes). Optional fields accept `null` as "not set" (`opt`).
 * `max_tokens` may be 0: the reference defines that as a request that only warms the prompt cache.
 * Sampling ranges (temperature 0-1, ...) are not checked: the upstream enforces its own.
 */

// --- messages ---------------------------------------------------------------------------------

const MessageContent = z.union([z.string(), z.array(MessageContentBlock)]);

const Message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('user'), content: MessageContent }),
  z.looseObject({ role: z.literal('assistant'), content: MessageContent }),
  // Instructions inside the conversation, which Claude Code sends after the first user turn, with
  // the effort of the turns that follow.
  z.looseObject({
    role: z.literal('system'),
    content: opt(MessageContent),
    clear_at: opt(z.enum(['next_user_message', 'never'])),
    output_config: opt(z.looseObject({ effort: opt(Effort) })),
  }),
]);

// --- thinking and output ----------------------------------------------------------------------

const thinkingOutput = {
  display: opt(z.enum(['summarized', 'omitted', 'updates'])),
  block_binding: opt(z.looseObject({ prefix_mismatch_behavior: opt(z.enum(['error', 'drop_block'])) })),
};

const Thinking = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('enabled'), budget_tokens: z.int().min(1024), ...thinkingOutput }),
  z.looseObject({ type: z.literal('disabled') }),
  z.looseObject({ type: z.literal('adaptive'), ...thinkingOutput }),
  z.looseObject({ type: z.literal('between_tools') }),
]);

const JsonOutputFormat = z.looseObject({ type: z.literal('json_schema'), schema: JsonObject });

const OutputConfig = z.looseObject({
  effort: opt(Effort),
  format: opt(JsonOutputFormat),
  task_budget: opt(z.looseObject({ type: z.literal('tokens'), total: z.int(), remaining: opt(z.int()) })),
});

const SPEEDS = ['standard', 'fast'] as const;

/** A model the upstream may retry on when the requested one declines. */
const Fallback = z.looseObject({
  model: ModelName,
  max_tokens: opt(z.int()),
  output_config: opt(OutputConfig),
  speed: opt(z.enum(SPEEDS)),
  thinking: opt(Thinking),
});

// --- context management -----------------------------------------------------------------------

function counter<const Type extends string>(type: Type) {
  return z.looseObject({ type: z.literal(type), value: z.int() });
}

const ContextEdit = openUnion([
  z.looseObject({
    type: z.literal('clear_tool_uses_20250919'),
    clear_at_least: opt(counter('input_tokens')),
    clear_tool_inputs: opt(z.union([z.boolean(), z.array(z.string())])),
    exclude_tools: opt(z.array(z.string())),
    keep: opt(counter('tool_uses')),
    trigger: opt(z.discriminatedUnion('type', [counter('input_tokens'), counter('tool_uses')])),
  }),
  z.looseObject({
    type: z.literal('clear_thinking_20251015'),
    keep: opt(
      z.union([
        z.literal('all'),
        z.discriminatedUnion('type', [counter('thinking_turns'), z.looseObject({ type: z.literal('all') })]),
      ]),
    ),
  }),
  z.looseObject({
    type: z.literal('compact_20260112'),
    instructions: opt(z.string()),
    pause_after_compaction: opt(z.boolean()),
    trigger: opt(counter('input_tokens')),
  }),
]);

// --- containers and MCP servers ---------------------------------------------------------------

const Container = z.looseObject({
  id: opt(z.string()),
  skills: opt(
    z.array(
      z.looseObject({
        skill_id: z.string(),
        type: z.enum(['anthropic', 'custom']),
        version: opt(z.string()),
      }),
    ),
  ),
});

const McpServer = z.looseObject({
  type: z.literal('url'),
  name: z.string(),
  url: z.string(),
  authorization_token: opt(z.string()),
  tool_configuration: opt(
    z.looseObject({ allowed_tools: opt(z.array(z.string())), enabled: opt(z.boolean()) }),
  ),
});

// --- the request ------------------------------------------------------------------------------

export const MessagesRequestSchema = z.looseObject({
  model: ModelName,
  max_tokens: z.int().nonnegative(),
  messages: z.array(Message).min(1),
  billing_policy: opt(
    z.looseObject({ type: z.literal('billing_policy'), bill_to: opt(z.enum(['self', 'user_profile'])) }),
  ),
  cache_control: opt(CacheControl),
  compaction: opt(z.looseObject({ type: z.literal('summarize'), instructions: opt(z.string()) })),
  container: opt(z.union([z.string(), Container])),
  context_management: opt(z.looseObject({ edits: opt(z.array(ContextEdit)) })),
  diagnostics: opt(z.looseObject({ previous_message_id: opt(z.string()) })),
  fallback_credit_token: opt(
    z.union([z.string(), z.looseObject({ token: z.string(), mode: opt(z.enum(['strict', 'best_effort'])) })]),
  ),
  fallbacks: opt(z.union([z.literal('default'), z.array(Fallback)])),
  inference_geo: opt(z.string()),
  mcp_servers: opt(z.array(McpServer)),
  metadata: opt(z.looseObject({ user_id: opt(z.string()) })),
  output_config: opt(OutputConfig),
  output_format: opt(JsonOutputFormat),
  service_tier: opt(z.enum(['auto', 'standard_only'])),
  speed: opt(z.enum(SPEEDS)),
  stop_sequences: opt(z.array(z.string())),
  stream: opt(z.boolean()),
  system: opt(z.union([z.string(), z.array(SystemPromptBlock)])),
  temperature: opt(z.number()),
  thinking: opt(Thinking),
  thread: opt(
    z.discriminatedUnion('type', [
      z.looseObject({ type: z.literal('create') }),
      z.looseObject({ type: z.literal('continue'), previous_message_id: z.string() }),
    ]),
  ),
  tool_choice: opt(ToolChoice),
  tools: opt(z.array(Tool)),
  top_k: opt(z.int()),
  top_p: opt(z.number()),
});

export type MessagesRequest = z.output<typeof MessagesRequestSchema>;
