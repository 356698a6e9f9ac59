import { z } from 'zod';
import { RESPONSES } from '../api/surfaces.js';
import { ModerationParam, ReasoningEffort } from './request-schema-chat.js';
import { JsonObject, Metadata, PromptCacheBreakpoint, opt } from './schema-helpers.js';

/**
 * Strict-mode schema of `POST /v1/responses` (`ResponseCreateParams` of the reference SDK).
 *
 * Depth: every top-level parameter is checked, and the parameters the gateway itself reads or that
 * are small closed shapes (`reasoning`, `text`, `stream_options`, `prompt`, `conversation`,
 * `include`, `tool_choice`, ...) are checked field by field with unknown fields refused. Input items
 * and tools are a union of some thirty and sixteen large item shapes in the reference that grows
 * with every release; they are checked on their discriminator (`type`, or `role` for messages) and
 * message contents on their part types, and their bodies are left to the upstream. A request with
 * an unknown item or tool type is still a schema mismatch.
 */

// --- input ------------------------------------------------------------------------------------

const InputText = z.strictObject({
  type: z.literal('input_text'),
  text: z.string(),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const InputImage = z.strictObject({
  type: z.literal('input_image'),
  detail: z.enum(['low', 'high', 'auto', 'original']),
  file_id: opt(z.string()),
  image_url: opt(z.string()),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const InputFile = z.strictObject({
  type: z.literal('input_file'),
  detail: opt(z.enum(['auto', 'low', 'high'])),
  file_data: opt(z.string()),
  file_id: opt(z.string()),
  file_url: opt(z.string()),
  filename: opt(z.string()),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

/**
 * Message content parts: the input parts, plus the output parts (`output_text`, `refusal`) that an
 * assistant message replayed from an earlier response carries. Output parts are checked on their
 * type only (annotations and logprobs are response records the client echoes back).
 */
const MessageContentPart = z.discriminatedUnion('type', [
  InputText,
  InputImage,
  InputFile,
  z.looseObject({ type: z.literal('output_text'), text: z.string() }),
  z.looseObject({ type: z.literal('refusal'), refusal: z.string() }),
]);

const MessageItem = z.looseObject({
  type: opt(z.literal('message')),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(MessageContentPart)]),
});

/** Item types of `ResponseInputItem` other than messages and item references (SDK 7.57). */
export const RESPONSES_INPUT_ITEM_TYPES = [
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'web_search_call',
  'function_call',
  'function_call_output',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'configuration_update',
  'reasoning',
  'compaction',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'custom_tool_call_output',
  'custom_tool_call',
  'compaction_trigger',
  'program',
  'program_output',
] as const;

const OtherItem = z.looseObject({ type: z.enum(RESPONSES_INPUT_ITEM_TYPES) });

const ItemReference = z.strictObject({ type: opt(z.literal('item_reference')), id: z.string() });

const InputItem = z.union([MessageItem, ItemReference, OtherItem]);

// --- tools and tool choice --------------------------------------------------------------------

/** `Tool` types of the reference (SDK 7.57). */
export const RESPONSES_TOOL_TYPES = [
  'function',
  'file_search',
  'computer',
  'computer_use_preview',
  'web_search',
  'web_search_2025_08_26',
  'mcp',
  'code_interpreter',
  'programmatic_tool_calling',
  'image_generation',
  'local_shell',
  'shell',
  'custom',
  'namespace',
  'tool_search',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'apply_patch',
] as const;

const ResponsesTool = z.looseObject({ type: z.enum(RESPONSES_TOOL_TYPES) });

const ResponsesToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('allowed_tools'),
      mode: z.enum(['auto', 'required']),
      tools: z.array(JsonObject),
    }),
    z.strictObject({ type: z.literal('function'), name: z.string() }),
    z.strictObject({ type: z.literal('mcp'), server_label: z.string(), name: opt(z.string()) }),
    z.strictObject({ type: z.literal('custom'), name: z.string() }),
    z.strictObject({ type: z.literal('programmatic_tool_calling') }),
    z.strictObject({ type: z.literal('apply_patch') }),
    z.strictObject({ type: z.literal('shell') }),
    z.strictObject({
      type: z.enum([
        'file_search',
        'web_search_preview',
        'computer',
        'computer_use_preview',
        'computer_use',
        'web_search_preview_2025_03_11',
        'image_generation',
        'code_interpreter',
      ]),
    }),
  ]),
]);

// --- other parameters -------------------------------------------------------------------------

export const ResponsesReasoning = z.strictObject({
  context: opt(z.enum(['auto', 'current_turn', 'all_turns'])),
  effort: opt(ReasoningEffort),
  generate_summary: opt(z.enum(['auto', 'concise', 'detailed'])),
  mode: opt(z.string()),
  summary: opt(z.enum(['auto', 'concise', 'detailed'])),
});

const TextFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    name: z.string(),
    schema: JsonObject,
    description: opt(z.string()),
    strict: opt(z.boolean()),
  }),
]);

export const ResponsesTextConfig = z.strictObject({
  format: opt(TextFormat),
  verbosity: opt(z.enum(['low', 'medium', 'high'])),
});

export const ResponsesServiceTier = z.enum([
  'auto',
  'default',
  'flex',
  'scale',
  'priority',
  'fast',
  'ultrafast',
]);

const Includable = z.enum([
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
]);

const PromptVariable = z.union([z.string(), InputText, InputImage, InputFile]);

export const ResponsesRequestSchema = z.strictObject({
  access_programs: opt(z.strictObject({ cyber: opt(z.enum(['standard', 'daybreak_blue', 'daybreak_red'])) })),
  background: opt(z.boolean()),
  context_management: opt(z.array(z.strictObject({ type: z.string(), compact_threshold: opt(z.number()) }))),
  conversation: opt(z.union([z.string(), z.strictObject({ id: z.string() })])),
  image: opt(z.strictObject({ context_compression: opt(z.enum(['auto', 'enabled', 'disabled'])) })),
  include: opt(z.array(Includable)),
  input: opt(z.union([z.string(), z.array(InputItem)])),
  instructions: opt(z.string()),
  max_output_tokens: opt(z.int()),
  max_tool_calls: opt(z.int()),
  metadata: opt(Metadata),
  model: opt(z.string()),
  moderation: opt(ModerationParam),
  parallel_tool_calls: opt(z.boolean()),
  previous_response_id: opt(z.string()),
  prompt: opt(
    z.strictObject({
      id: z.string(),
      variables: opt(z.record(z.string(), PromptVariable)),
      version: opt(z.string()),
    }),
  ),
  prompt_cache_key: opt(z.string()),
  prompt_cache_options: opt(
    z.strictObject({
      comparison_response_id: opt(z.string()),
      mode: opt(z.enum(['implicit', 'explicit'])),
      prewarm: opt(z.boolean()),
      ttl: opt(z.enum(['30m', '12h'])),
    }),
  ),
  prompt_cache_retention: opt(z.enum(['in_memory', '24h'])),
  reasoning: opt(ResponsesReasoning),
  safety_identifier: opt(z.string()),
  service_tier: opt(ResponsesServiceTier),
  store: opt(z.boolean()),
  // Strict mode serves `/v1/responses` without streaming (spec 4.5): there is no strict sanitizer
  // for Responses event streams, so a streaming request is refused rather than passed through raw.
  stream: opt(z.literal(false, { error: `Streaming is not supported on ${RESPONSES.path} in strict mode` })),
  stream_options: opt(z.strictObject({ include_obfuscation: opt(z.boolean()) })),
  temperature: opt(z.number()),
  text: opt(ResponsesTextConfig),
  tool_choice: opt(ResponsesToolChoice),
  tools: opt(z.array(ResponsesTool)),
  top_logprobs: opt(z.int()),
  top_p: opt(z.number()),
  truncation: opt(z.enum(['auto', 'disabled'])),
  user: opt(z.string()),
});

export type ResponsesRequest = z.output<typeof ResponsesRequestSchema>;
