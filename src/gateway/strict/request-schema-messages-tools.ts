import { z } from 'zod';
import { openUnion } from './open-union.js';
import { CacheControl, CitationsConfig, ModelName } from './request-schema-messages-common.js';
import { JsonObject, opt } from './schema-helpers.js';

/**
 * `tools` and `tool_choice` of a Messages request (`BetaToolUnion` and `BetaToolChoice` of the
 * reference SDK). A tool without a `type`, or with `type: "custom"`, is a client tool and is checked
 * field by field; the server tools the SDK defines are checked on their fixed `name` and their
 * fields; a server tool `type` the schema does not know passes (see `openUnion`).
 */

/** The JSON Schema of a client tool's input: the reference requires an object schema. */
const InputSchema = z.looseObject({
  type: z.literal('object'),
  properties: opt(JsonObject),
  required: opt(z.array(z.string())),
});

/** Who may call a tool: `direct` or a code-execution tool version, a list that grows with them. */
const AllowedCallers = z.array(z.string());

const CustomTool = z.looseObject({
  type: opt(z.literal('custom')),
  name: z.string(),
  description: opt(z.string()),
  input_schema: InputSchema,
  allowed_callers: opt(AllowedCallers),
  cache_control: opt(CacheControl),
  defer_loading: opt(z.boolean()),
  eager_input_streaming: opt(z.boolean()),
  input_examples: opt(z.array(JsonObject)),
  strict: opt(z.boolean()),
});

/** Fields every versioned server tool has. */
const serverToolFields = {
  allowed_callers: opt(AllowedCallers),
  cache_control: opt(CacheControl),
  defer_loading: opt(z.boolean()),
  strict: opt(z.boolean()),
};

/** A server tool of one or more versions (`types`), whose `name` the reference fixes. */
function serverTool<const Name extends string, const Shape extends z.ZodRawShape>(
  types: readonly [string, ...string[]],
  name: Name,
  shape: Shape,
) {
  return z.looseObject({ type: z.enum(types), name: z.literal(name), ...serverToolFields, ...shape });
}

const inputExamples = { input_examples: opt(z.array(JsonObject)) };

const UserLocation = z.looseObject({
  type: z.literal('approximate'),
  city: opt(z.string()),
  country: opt(z.string()),
  region: opt(z.string()),
  timezone: opt(z.string()),
});

const domainFilters = {
  allowed_domains: opt(z.array(z.string())),
  blocked_domains: opt(z.array(z.string())),
  max_uses: opt(z.int()),
  response_inclusion: opt(z.enum(['full', 'excluded'])),
};

/** Per-tool switches of a toolset (browser, computer, MCP). */
const ToolsetToolConfig = z.looseObject({ defer_loading: opt(z.boolean()), enabled: opt(z.boolean()) });

const ToolsetConfigs = z.record(z.string(), ToolsetToolConfig.nullable());

/** A tool an MCP server offers, as a toolset or a tool listing names it. */
export const McpToolDefinition = z.looseObject({
  name: z.string(),
  input_schema: JsonObject,
  description: opt(z.string()),
});

const SERVER_TOOLS = [
  serverTool(['bash_20241022', 'bash_20250124'], 'bash', inputExamples),
  serverTool(
    [
      'code_execution_20250522',
      'code_execution_20250825',
      'code_execution_20260120',
      'code_execution_20260521',
    ],
    'code_execution',
    {},
  ),
  serverTool(['computer_20241022', 'computer_20250124', 'computer_20251124'], 'computer', {
    display_height_px: z.int(),
    display_width_px: z.int(),
    display_number: opt(z.int()),
    enable_zoom: opt(z.boolean()),
    ...inputExamples,
  }),
  serverTool(['memory_20250818'], 'memory', inputExamples),
  serverTool(['text_editor_20241022', 'text_editor_20250124'], 'str_replace_editor', inputExamples),
  serverTool(['text_editor_20250429', 'text_editor_20250728'], 'str_replace_based_edit_tool', {
    max_characters: opt(z.int()),
    ...inputExamples,
  }),
  serverTool(['web_search_20250305', 'web_search_20260209', 'web_search_20260318'], 'web_search', {
    ...domainFilters,
    user_location: opt(UserLocation),
  }),
  serverTool(
    ['web_fetch_20250910', 'web_fetch_20260209', 'web_fetch_20260309', 'web_fetch_20260318'],
    'web_fetch',
    {
      ...domainFilters,
      citations: opt(CitationsConfig),
      max_content_tokens: opt(z.int()),
      url_sources: opt(JsonObject),
      use_cache: opt(z.boolean()),
    },
  ),
  serverTool(['advisor_20260301'], 'advisor', {
    model: ModelName,
    caching: opt(CacheControl),
    max_tokens: opt(z.int()),
    max_uses: opt(z.int()),
  }),
  serverTool(['tool_search_tool_bm25_20251119', 'tool_search_tool_bm25'], 'tool_search_tool_bm25', {}),
  serverTool(['tool_search_tool_regex_20251119', 'tool_search_tool_regex'], 'tool_search_tool_regex', {}),
  z.looseObject({
    type: z.enum(['browser_toolset_20260801', 'computer_toolset_20260801']),
    cache_control: opt(CacheControl),
    configs: opt(ToolsetConfigs),
  }),
  z.looseObject({
    type: z.literal('mcp_toolset'),
    mcp_server_name: z.string(),
    cache_control: opt(CacheControl),
    configs: opt(ToolsetConfigs),
    default_config: opt(ToolsetToolConfig),
    tools: opt(z.array(McpToolDefinition)),
  }),
] as const;

export const Tool = openUnion([CustomTool, ...SERVER_TOOLS]);

export const ToolChoice = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: opt(z.boolean()) }),
  z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: opt(z.boolean()) }),
  z.looseObject({ type: z.literal('tool'), name: z.string(), disable_parallel_tool_use: opt(z.boolean()) }),
  z.looseObject({ type: z.literal('none') }),
]);
