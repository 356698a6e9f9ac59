import { z } from 'zod';
import { JsonObject, Metadata, opt } from './schema-helpers.js';

/**
 * Response schemas of strict mode and standalone sanitization (spec 4.5, 4.6), from the reference
 * SDK's response types. Objects are zod's default (strip): a field the reference does not define is
 * dropped, at every depth. That removes provider-specific fields, among them vLLM/DeepSeek
 * `reasoning_content` and `reasoning`, `stop_reason`, `prompt_logprobs`, `prompt_token_ids`,
 * `token_ids` and `kv_transfer_params`; nothing outside the reference survives.
 *
 * Leniency, on purpose, because these check an upstream the client chose to trust with its request:
 * - Required: what identifies the object and carries its payload (`id`, `object`, `choices`/`data`/
 *   `output` and their `index`, a message's `role`, a tool call's `id`). Everything else is optional
 *   and nullable: OpenAI-compatible engines omit fields the reference marks required (`refusal`,
 *   `logprobs`, `usage`) or send null for optional ones; absent stays absent, null stays null.
 * - Open strings where the reference lists values (`finish_reason`, `service_tier`, ...): engines
 *   add values (`abort`, `error`), and a value the reference has not listed yet must not turn a
 *   completed answer into a 502. `object` and roles stay literal: they say what the object is.
 * - `model` is optional: it is rewritten to the alias anyway.
 *
 * Schemas are module constants: zod compiles each object parser once, and the per-chunk path does no
 * schema construction.
 */

// --- chat completions -------------------------------------------------------------------------

const TopLogprob = z.object({
  token: z.string(),
  bytes: opt(z.array(z.number())),
  logprob: z.number(),
});

const TokenLogprob = z.object({
  token: z.string(),
  bytes: opt(z.array(z.number())),
  logprob: z.number(),
  top_logprobs: opt(z.array(TopLogprob)),
});

const ChoiceLogprobs = z.object({
  content: opt(z.array(TokenLogprob)),
  refusal: opt(z.array(TokenLogprob)),
});

const CompletionUsage = z.object({
  completion_tokens: z.number(),
  prompt_tokens: z.number(),
  total_tokens: z.number(),
  completion_tokens_details: opt(
    z.object({
      accepted_prediction_tokens: opt(z.number()),
      audio_tokens: opt(z.number()),
      reasoning_tokens: opt(z.number()),
      rejected_prediction_tokens: opt(z.number()),
      text_tokens: opt(z.number()),
    }),
  ),
  prompt_tokens_details: opt(
    z.object({
      audio_tokens: opt(z.number()),
      cache_write_tokens: opt(z.number()),
      cached_tokens: opt(z.number()),
      image_tokens: opt(z.number()),
      text_tokens: opt(z.number()),
    }),
  ),
});

const ModerationVerdict = z.union([
  z.object({
    type: z.literal('moderation_results'),
    model: z.string(),
    results: z.array(
      z.object({
        type: z.literal('moderation_result'),
        categories: z.record(z.string(), z.boolean()),
        category_applied_input_types: z.record(z.string(), z.array(z.string())),
        category_scores: z.record(z.string(), z.number()),
        flagged: z.boolean(),
        model: z.string(),
      }),
    ),
  }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
]);

const Moderation = z.object({ input: ModerationVerdict, output: ModerationVerdict });

const FunctionCall = z.object({ arguments: z.string(), name: z.string() });

const MessageToolCall = z.object({
  id: z.string(),
  type: z.string(),
  function: opt(FunctionCall),
  custom: opt(z.object({ input: z.string(), name: z.string() })),
});

const ChatCompletionMessage = z.object({
  role: z.literal('assistant'),
  content: opt(z.string()),
  refusal: opt(z.string()),
  annotations: opt(
    z.array(
      z.object({
        type: z.literal('url_citation'),
        url_citation: z.object({
          end_index: z.number(),
          start_index: z.number(),
          title: z.string(),
          url: z.string(),
        }),
      }),
    ),
  ),
  audio: opt(z.object({ id: z.string(), data: z.string(), expires_at: z.number(), transcript: z.string() })),
  function_call: opt(FunctionCall),
  tool_calls: opt(z.array(MessageToolCall)),
});

export const ChatCompletionSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number(),
  model: opt(z.string()),
  choices: z.array(
    z.object({
      index: z.number(),
      message: ChatCompletionMessage,
      finish_reason: opt(z.string()),
      logprobs: opt(ChoiceLogprobs),
    }),
  ),
  metadata: opt(Metadata),
  moderation: opt(Moderation),
  service_tier: opt(z.string()),
  system_fingerprint: opt(z.string()),
  usage: opt(CompletionUsage),
});

const ChunkDelta = z.object({
  role: opt(z.enum(['developer', 'system', 'user', 'assistant', 'tool'])),
  content: opt(z.string()),
  refusal: opt(z.string()),
  audio: opt(
    z.object({
      id: opt(z.string()),
      data: opt(z.string()),
      expires_at: opt(z.number()),
      transcript: opt(z.string()),
    }),
  ),
  function_call: opt(z.object({ arguments: opt(z.string()), name: opt(z.string()) })),
  tool_calls: opt(
    z.array(
      z.object({
        index: z.number(),
        id: opt(z.string()),
        type: opt(z.string()),
        function: opt(z.object({ arguments: opt(z.string()), name: opt(z.string()) })),
        custom: opt(z.object({ input: opt(z.string()), name: opt(z.string()) })),
      }),
    ),
  ),
});

export const ChatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number(),
  model: opt(z.string()),
  choices: z.array(
    z.object({
      index: z.number(),
      delta: ChunkDelta,
      finish_reason: opt(z.string()),
      logprobs: opt(ChoiceLogprobs),
    }),
  ),
  moderation: opt(Moderation),
  obfuscation: opt(z.string()),
  service_tier: opt(z.string()),
  system_fingerprint: opt(z.string()),
  usage: opt(CompletionUsage),
});

// --- embeddings -------------------------------------------------------------------------------

export const EmbeddingsResponseSchema = z.object({
  object: z.literal('list'),
  model: opt(z.string()),
  data: z.array(
    z.object({
      object: z.literal('embedding'),
      index: z.number(),
      // Floats, or a base64 string with `encoding_format: "base64"`.
      embedding: z.union([z.array(z.number()), z.string()]),
    }),
  ),
  usage: opt(z.object({ prompt_tokens: z.number(), total_tokens: z.number() })),
});

// --- responses --------------------------------------------------------------------------------

const ResponsesLogprob = z.object({
  token: z.string(),
  bytes: opt(z.array(z.number())),
  logprob: z.number(),
  top_logprobs: opt(
    z.array(z.object({ token: z.string(), bytes: opt(z.array(z.number())), logprob: z.number() })),
  ),
});

const OutputTextAnnotation = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('file_citation'),
    file_id: z.string(),
    filename: z.string(),
    index: z.number(),
  }),
  z.object({
    type: z.literal('url_citation'),
    end_index: z.number(),
    start_index: z.number(),
    title: z.string(),
    url: z.string(),
  }),
  z.object({
    type: z.literal('container_file_citation'),
    container_id: z.string(),
    end_index: z.number(),
    file_id: z.string(),
    filename: z.string(),
    start_index: z.number(),
  }),
  z.object({ type: z.literal('file_path'), file_id: z.string(), index: z.number() }),
]);

const OutputMessage = z.object({
  type: z.literal('message'),
  id: z.string(),
  role: z.literal('assistant'),
  status: opt(z.string()),
  phase: opt(z.string()),
  content: z.array(
    z.discriminatedUnion('type', [
      z.object({
        type: z.literal('output_text'),
        text: z.string(),
        annotations: opt(z.array(OutputTextAnnotation)),
        logprobs: opt(z.array(ResponsesLogprob)),
      }),
      z.object({ type: z.literal('refusal'), refusal: z.string() }),
    ]),
  ),
});

const ReasoningItem = z.object({
  type: z.literal('reasoning'),
  id: z.string(),
  summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() })),
  content: opt(z.array(z.object({ type: z.literal('reasoning_text'), text: z.string() }))),
  encrypted_content: opt(z.string()),
  status: opt(z.string()),
});

const ToolCaller = z.discriminatedUnion('type', [
  z.object({ type: z.literal('direct') }),
  z.object({ type: z.literal('program'), caller_id: z.string() }),
]);

const FunctionCallItem = z.object({
  type: z.literal('function_call'),
  arguments: z.string(),
  call_id: z.string(),
  name: z.string(),
  id: opt(z.string()),
  async: opt(z.boolean()),
  caller: opt(ToolCaller),
  namespace: opt(z.string()),
  status: opt(z.string()),
});

const CustomToolCallItem = z.object({
  type: z.literal('custom_tool_call'),
  call_id: z.string(),
  input: z.string(),
  name: z.string(),
  id: opt(z.string()),
  async: opt(z.boolean()),
  caller: opt(ToolCaller),
  namespace: opt(z.string()),
});

/**
 * The other `ResponseOutputItem` types of the reference (SDK 7.57): hosted-tool call records (file
 * search, web search, computer, code interpreter, MCP, shell, apply-patch, ...). They are kept as
 * sent: each is a large record of a tool the provider ran, an engine that serves chat-completion
 * models does not produce them, and re-typing them all would tie the gateway to every SDK release.
 * An item whose `type` is not in the reference fails deserialization.
 */
export const RESPONSES_OTHER_OUTPUT_ITEM_TYPES = [
  'file_search_call',
  'function_call_output',
  'web_search_call',
  'computer_call',
  'computer_call_output',
  'program',
  'program_output',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'compaction',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_call',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'custom_tool_call_output',
] as const;

const OtherOutputItem = z.looseObject({ type: z.enum(RESPONSES_OTHER_OUTPUT_ITEM_TYPES) });

const OutputItem = z.union([
  OutputMessage,
  ReasoningItem,
  FunctionCallItem,
  CustomToolCallItem,
  OtherOutputItem,
]);

const ResponseUsage = z.object({
  input_tokens: z.number(),
  output_tokens: z.number(),
  total_tokens: z.number(),
  input_tokens_details: opt(
    z.object({
      cache_write_tokens: opt(z.number()),
      cached_tokens: opt(z.number()),
      cache_write_tokens_details: opt(z.object({ ttl_12h_tokens: z.number(), ttl_30m_tokens: z.number() })),
    }),
  ),
  output_tokens_details: opt(z.object({ reasoning_tokens: opt(z.number()) })),
});

/** Echoes of request parameters; checked on their discriminator, as the request schema does. */
const EchoedTool = z.looseObject({ type: z.string() });
const EchoedToolChoice = z.union([z.string(), z.looseObject({ type: z.string() })]);

export const ResponseObjectSchema = z.object({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number(),
  model: opt(z.string()),
  output: z.array(OutputItem),
  status: opt(z.string()),
  error: opt(
    z.object({
      code: z.string(),
      message: z.string(),
      param: opt(z.string()),
      type: opt(z.string()),
    }),
  ),
  incomplete_details: opt(z.object({ reason: opt(z.string()) })),
  instructions: opt(z.union([z.string(), z.array(JsonObject)])),
  metadata: opt(Metadata),
  parallel_tool_calls: opt(z.boolean()),
  temperature: opt(z.number()),
  top_p: opt(z.number()),
  top_logprobs: opt(z.number()),
  tool_choice: opt(EchoedToolChoice),
  tools: opt(z.array(EchoedTool)),
  background: opt(z.boolean()),
  completed_at: opt(z.number()),
  conversation: opt(z.object({ id: z.string() })),
  max_output_tokens: opt(z.number()),
  max_tool_calls: opt(z.number()),
  previous_response_id: opt(z.string()),
  prompt: opt(z.object({ id: z.string(), variables: opt(JsonObject), version: opt(z.string()) })),
  prompt_cache_key: opt(z.string()),
  prompt_cache_retention: opt(z.string()),
  reasoning: opt(
    z.object({
      context: opt(z.string()),
      effort: opt(z.string()),
      generate_summary: opt(z.string()),
      mode: opt(z.string()),
      summary: opt(z.string()),
    }),
  ),
  safety_identifier: opt(z.string()),
  service_tier: opt(z.string()),
  text: opt(
    z.object({
      format: opt(z.looseObject({ type: z.string() })),
      verbosity: opt(z.string()),
    }),
  ),
  truncation: opt(z.string()),
  usage: opt(ResponseUsage),
  user: opt(z.string()),
  // Newer reference fields an engine rarely sends; kept with their first level typed.
  access_programs: opt(z.object({ cyber: z.string() })),
  image: opt(z.object({ context_compression: z.string() })),
  input_transformations: opt(
    z.array(z.object({ id: z.string(), action: z.string(), reason: z.string(), type: z.string() })),
  ),
  moderation: opt(z.object({ input: JsonObject, output: JsonObject })),
  prompt_cache_diagnostics: opt(z.looseObject({ type: opt(z.string()) })),
  prompt_cache_options: opt(
    z.object({
      comparison_response_id: opt(z.string()),
      mode: opt(z.string()),
      prewarm: opt(z.boolean()),
      ttl: opt(z.string()),
    }),
  ),
  tool_usage: opt(JsonObject),
});
