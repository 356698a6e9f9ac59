import { z } from 'zod';
import { UNSUPPORTED_PARAM_NAMES, type UnsupportedParamName } from './unsupported-params-catalog.js';
import { REFUSED_CHAT_PARAMS, type RefusedChatParam } from './refused-params.js';
import { JsonObject, Metadata, PromptCacheBreakpoint, opt } from './schema-helpers.js';

/**
 * Strict-mode schema of `POST /v1/chat/completions` (`ChatCompletionCreateParams` of the reference
 * SDK, field for field). Objects are strict: a field the reference does not define is a schema
 * mismatch wherever it appears, except the top-level extension names listed at the bottom (see
 * `ChatCompletionRequestSchema`). Numeric ranges (temperature 0-2, ...) are not checked: they are
 * documentation of the reference server, engines differ, and the upstream enforces its own.
 */

// --- content parts ----------------------------------------------------------------------------

const TextPart = z.strictObject({
  type: z.literal('text'),
  text: z.string(),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const ImagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({
    url: z.string(),
    detail: opt(z.enum(['auto', 'low', 'high', 'original'])),
  }),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const InputAudioPart = z.strictObject({
  type: z.literal('input_audio'),
  input_audio: z.strictObject({ data: z.string(), format: z.enum(['wav', 'mp3']) }),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const FilePart = z.strictObject({
  type: z.literal('file'),
  file: z.strictObject({
    file_data: opt(z.string()),
    file_id: opt(z.string()),
    filename: opt(z.string()),
  }),
  prompt_cache_breakpoint: opt(PromptCacheBreakpoint),
});

const RefusalPart = z.strictObject({ type: z.literal('refusal'), refusal: z.string() });

const UserContentPart = z.discriminatedUnion('type', [TextPart, ImagePart, InputAudioPart, FilePart]);
const AssistantContentPart = z.discriminatedUnion('type', [TextPart, RefusalPart]);

/** Developer, system, tool messages and predictions take text only. */
const TextContent = z.union([z.string(), z.array(TextPart)]);

// --- tool calls and tools ---------------------------------------------------------------------

const FunctionToolCall = z.strictObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({ arguments: z.string(), name: z.string() }),
});

const CustomToolCall = z.strictObject({
  id: z.string(),
  type: z.literal('custom'),
  custom: z.strictObject({ input: z.string(), name: z.string() }),
});

const MessageToolCall = z.discriminatedUnion('type', [FunctionToolCall, CustomToolCall]);

export const FunctionDefinition = z.strictObject({
  name: z.string(),
  description: opt(z.string()),
  parameters: opt(JsonObject),
  strict: opt(z.boolean()),
});

const FunctionTool = z.strictObject({ type: z.literal('function'), function: FunctionDefinition });

const CustomTool = z.strictObject({
  type: z.literal('custom'),
  custom: z.strictObject({
    name: z.string(),
    description: opt(z.string()),
    format: opt(
      z.discriminatedUnion('type', [
        z.strictObject({ type: z.literal('text') }),
        z.strictObject({
          type: z.literal('grammar'),
          grammar: z.strictObject({ definition: z.string(), syntax: z.enum(['lark', 'regex']) }),
        }),
      ]),
    ),
  }),
});

const Tool = z.discriminatedUnion('type', [FunctionTool, CustomTool]);

const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('allowed_tools'),
      allowed_tools: z.strictObject({ mode: z.enum(['auto', 'required']), tools: z.array(JsonObject) }),
    }),
    z.strictObject({ type: z.literal('function'), function: z.strictObject({ name: z.string() }) }),
    z.strictObject({ type: z.literal('custom'), custom: z.strictObject({ name: z.string() }) }),
  ]),
]);

// --- messages ---------------------------------------------------------------------------------

const DeveloperMessage = z.strictObject({
  role: z.literal('developer'),
  content: TextContent,
  name: opt(z.string()),
});

const SystemMessage = z.strictObject({
  role: z.literal('system'),
  content: TextContent,
  name: opt(z.string()),
});

const UserMessage = z.strictObject({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(UserContentPart)]),
  name: opt(z.string()),
});

const AssistantMessage = z.strictObject({
  role: z.literal('assistant'),
  audio: opt(z.strictObject({ id: z.string() })),
  content: opt(z.union([z.string(), z.array(AssistantContentPart)])),
  function_call: opt(z.strictObject({ arguments: z.string(), name: z.string() })),
  name: opt(z.string()),
  refusal: opt(z.string()),
  tool_calls: opt(z.array(MessageToolCall)),
});

const ToolMessage = z.strictObject({
  role: z.literal('tool'),
  content: TextContent,
  tool_call_id: z.string(),
});

/** Deprecated in the reference but still accepted by it. */
const FunctionMessage = z.strictObject({
  role: z.literal('function'),
  content: z.string().nullable(),
  name: z.string(),
});

export const ChatMessage = z.discriminatedUnion('role', [
  DeveloperMessage,
  SystemMessage,
  UserMessage,
  AssistantMessage,
  ToolMessage,
  FunctionMessage,
]);

// --- other parameters -------------------------------------------------------------------------

export const ReasoningEffort = z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);

export const ServiceTier = z.enum(['auto', 'default', 'flex', 'scale', 'priority', 'fast']);

export const ModerationParam = z.strictObject({
  model: z.string(),
  policy: opt(
    z.strictObject({
      input: opt(z.strictObject({ mode: z.enum(['score', 'block']) })),
      output: opt(z.strictObject({ mode: z.enum(['score', 'block']) })),
    }),
  ),
});

const ResponseFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    json_schema: z.strictObject({
      name: z.string(),
      description: opt(z.string()),
      schema: opt(JsonObject),
      strict: opt(z.boolean()),
    }),
  }),
]);

const AudioParam = z.strictObject({
  format: z.enum(['wav', 'aac', 'mp3', 'flac', 'opus', 'pcm16']),
  // Voice names are open-ended in the reference (`string | 'alloy' | ...`), or a custom voice id.
  voice: z.union([z.string(), z.strictObject({ id: z.string() })]),
});

const WebSearchOptions = z.strictObject({
  search_context_size: opt(z.enum(['low', 'medium', 'high'])),
  user_location: opt(
    z.strictObject({
      type: z.literal('approximate'),
      approximate: z.strictObject({
        city: opt(z.string()),
        country: opt(z.string()),
        region: opt(z.string()),
        timezone: opt(z.string()),
      }),
    }),
  ),
});

/** The reference request, without the extension names the later strict stages inspect. */
export const ChatCompletionReferenceShape = {
  messages: z.array(ChatMessage),
  model: z.string(),
  audio: opt(AudioParam),
  frequency_penalty: opt(z.number()),
  function_call: opt(z.union([z.enum(['none', 'auto']), z.strictObject({ name: z.string() })])),
  functions: opt(
    z.array(z.strictObject({ name: z.string(), description: opt(z.string()), parameters: opt(JsonObject) })),
  ),
  logit_bias: opt(z.record(z.string(), z.number())),
  logprobs: opt(z.boolean()),
  max_completion_tokens: opt(z.int()),
  max_tokens: opt(z.int()),
  metadata: opt(Metadata),
  modalities: opt(z.array(z.enum(['text', 'audio']))),
  moderation: opt(ModerationParam),
  n: opt(z.int()),
  parallel_tool_calls: opt(z.boolean()),
  prediction: opt(z.strictObject({ type: z.literal('content'), content: TextContent })),
  presence_penalty: opt(z.number()),
  prompt_cache_key: opt(z.string()),
  prompt_cache_options: opt(
    z.strictObject({ mode: opt(z.enum(['implicit', 'explicit'])), ttl: opt(z.literal('30m')) }),
  ),
  prompt_cache_retention: opt(z.enum(['in_memory', '24h'])),
  reasoning_effort: opt(ReasoningEffort),
  response_format: opt(ResponseFormat),
  safety_identifier: opt(z.string()),
  seed: opt(z.int()),
  service_tier: opt(ServiceTier),
  stop: opt(z.union([z.string(), z.array(z.string())])),
  store: opt(z.boolean()),
  stream: opt(z.boolean()),
  stream_options: opt(
    z.strictObject({ include_obfuscation: opt(z.boolean()), include_usage: opt(z.boolean()) }),
  ),
  temperature: opt(z.number()),
  tool_choice: opt(ToolChoice),
  tools: opt(z.array(Tool)),
  top_logprobs: opt(z.int()),
  top_p: opt(z.number()),
  user: opt(z.string()),
  verbosity: opt(z.enum(['low', 'medium', 'high'])),
  web_search_options: opt(WebSearchOptions),
};

/**
 * Unknown top-level fields. Strict mode's promise is that what reaches a provider is the reference
 * request, so a field that is neither reference nor known extension (a typo such as `temprature`, a
 * vendor field nobody reviewed) is a schema mismatch: forwarding it would let unreviewed controls
 * past strict mode unobserved, and dropping it would silently change the request. Two groups of
 * extension names are admitted here, with any value, because later stages own them (spec 4.4 rule
 * 6): the unsupported-parameter catalog (4.7: counted, and rejected when configured) and the
 * provider-native reasoning controls that strict mode always refuses (2.6 rules 6-7). Reference
 * fields that are also catalog entries (`n`, `logprobs`, `top_logprobs`) keep their reference type.
 */
const extensionNames: readonly string[] = [...UNSUPPORTED_PARAM_NAMES, ...REFUSED_CHAT_PARAMS].filter(
  (name) => !Object.hasOwn(ChatCompletionReferenceShape, name),
);
const extensionShape: Record<string, z.ZodOptional<z.ZodUnknown>> = Object.fromEntries(
  extensionNames.map((name) => [name, z.unknown().optional()]),
);

export const ChatCompletionRequestSchema = z.strictObject({
  ...extensionShape,
  ...ChatCompletionReferenceShape,
});

export const ChatCompletionReferenceSchema = z.strictObject(ChatCompletionReferenceShape);

/** A request that passed the strict schema: the reference fields plus the admitted extension names. */
export type ChatCompletionRequest = z.output<typeof ChatCompletionReferenceSchema> &
  Partial<Record<UnsupportedParamName | RefusedChatParam, unknown>>;
