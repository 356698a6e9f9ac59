import { z } from 'zod';
import { openUnion } from './open-union.js';
import { CacheControl, CitationsConfig, ModelName } from './request-schema-messages-common.js';
import { McpToolDefinition, Tool } from './request-schema-messages-tools.js';
import { JsonObject, opt } from './schema-helpers.js';

/**
 * Content blocks of a Messages request (`BetaContentBlockParam` of the reference SDK and the blocks
 * nested in them). Each position takes the block types the reference allows there, checked field by
 * field; a type the schema does not know passes (see `openUnion`), and a known type in a position
 * that does not take it (a `tool_use` inside a `tool_result`) is refused.
 *
 * Result blocks of server tools are the assistant's earlier output sent back unchanged; their
 * `error_code`s, tool names and file types are checked as strings, because the upstream adds values
 * to those lists without a new beta and a client echoes whatever it was sent.
 */

/** Every block type the schema knows, in any position. */
const MESSAGES_BLOCK_TYPES = [
  'text',
  'image',
  'document',
  'search_result',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'tool_result',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'advisor_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
  'compaction',
  'tool_addition',
  'tool_removal',
  'mcp_tool_listing',
  'fallback',
  'tool_reference',
  'browser_state',
] as const;

const cacheable = { cache_control: opt(CacheControl) };

/** Who made a tool call: `direct`, or a code-execution tool (by its id) that called it. */
const Caller = z.looseObject({ type: z.string(), tool_id: opt(z.string()) });

// --- text, images, documents ------------------------------------------------------------------

const citedDocument = {
  cited_text: z.string(),
  document_index: z.int(),
  document_title: z.string().nullable(),
};

const TextCitation = openUnion([
  z.looseObject({
    type: z.literal('char_location'),
    ...citedDocument,
    start_char_index: z.int(),
    end_char_index: z.int(),
  }),
  z.looseObject({
    type: z.literal('page_location'),
    ...citedDocument,
    start_page_number: z.int(),
    end_page_number: z.int(),
  }),
  z.looseObject({
    type: z.literal('content_block_location'),
    ...citedDocument,
    start_block_index: z.int(),
    end_block_index: z.int(),
  }),
  z.looseObject({
    type: z.literal('web_search_result_location'),
    cited_text: z.string(),
    encrypted_index: z.string(),
    title: z.string().nullable(),
    url: z.string(),
  }),
  z.looseObject({
    type: z.literal('search_result_location'),
    cited_text: z.string(),
    search_result_index: z.int(),
    source: z.string(),
    title: z.string().nullable(),
    start_block_index: z.int(),
    end_block_index: z.int(),
  }),
]);

const TextBlock = z.looseObject({
  type: z.literal('text'),
  text: z.string(),
  ...cacheable,
  citations: opt(z.array(TextCitation)),
});

const ImageSource = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('base64'),
    media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
    data: z.string(),
  }),
  z.looseObject({ type: z.literal('url'), url: z.string() }),
  z.looseObject({ type: z.literal('file'), file_id: z.string() }),
]);

const ImageBlock = z.looseObject({
  type: z.literal('image'),
  source: ImageSource,
  ...cacheable,
  transformations: opt(z.looseObject({ oversized_image: opt(z.enum(['downsize', 'error'])) })),
});

const DocumentSource = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string() }),
  z.looseObject({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }),
  z.looseObject({
    type: z.literal('content'),
    content: z.union([z.string(), z.array(openUnion([TextBlock, ImageBlock], MESSAGES_BLOCK_TYPES))]),
  }),
  z.looseObject({ type: z.literal('url'), url: z.string() }),
  z.looseObject({ type: z.literal('file'), file_id: z.string() }),
]);

const DocumentBlock = z.looseObject({
  type: z.literal('document'),
  source: DocumentSource,
  ...cacheable,
  citations: opt(CitationsConfig),
  context: opt(z.string()),
  title: opt(z.string()),
});

const SearchResultBlock = z.looseObject({
  type: z.literal('search_result'),
  content: z.array(openUnion([TextBlock], MESSAGES_BLOCK_TYPES)),
  source: z.string(),
  title: z.string(),
  ...cacheable,
  citations: opt(CitationsConfig),
});

// --- thinking ---------------------------------------------------------------------------------

const ThinkingBlock = z.looseObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string(),
});

const RedactedThinkingBlock = z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() });

// --- client tools -----------------------------------------------------------------------------

const ToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string(),
  name: z.string(),
  input: JsonObject,
  ...cacheable,
  caller: opt(Caller),
  toolset_name: opt(z.string()),
});

const ToolReferenceBlock = z.looseObject({
  type: z.literal('tool_reference'),
  tool_name: z.string(),
  ...cacheable,
});

const BrowserStateBlock = z.looseObject({
  type: z.literal('browser_state'),
  tabs: z.array(
    z.looseObject({ tab_id: z.string(), title: z.string(), url: z.string(), active: opt(z.boolean()) }),
  ),
  ...cacheable,
  state_changes: opt(z.array(z.looseObject({ type: z.string() }))),
});

const ToolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: opt(
    z.union([
      z.string(),
      z.array(
        openUnion(
          [TextBlock, ImageBlock, SearchResultBlock, DocumentBlock, ToolReferenceBlock, BrowserStateBlock],
          MESSAGES_BLOCK_TYPES,
        ),
      ),
    ]),
  ),
  is_error: opt(z.boolean()),
  ...cacheable,
  toolset_name: opt(z.string()),
});

// --- server tools -----------------------------------------------------------------------------

const ServerToolUseBlock = z.looseObject({
  type: z.literal('server_tool_use'),
  id: z.string(),
  name: z.string(),
  input: JsonObject,
  ...cacheable,
  caller: opt(Caller),
});

/** The result of a server tool call, with one of the result or error shapes the tool returns. */
function serverToolResult<const Type extends string, const Content extends z.ZodType>(
  type: Type,
  content: Content,
) {
  return z.looseObject({
    type: z.literal(type),
    tool_use_id: z.string(),
    content,
    ...cacheable,
    caller: opt(Caller),
  });
}

function toolError<const Type extends string>(type: Type) {
  return z.looseObject({ type: z.literal(type), error_code: z.string(), error_message: opt(z.string()) });
}

function outputFiles<const Type extends string>(type: Type) {
  return z.array(z.looseObject({ type: z.literal(type), file_id: z.string() }));
}

const WebSearchResult = z.looseObject({
  type: z.literal('web_search_result'),
  encrypted_content: z.string(),
  title: z.string(),
  url: z.string(),
  page_age: opt(z.string()),
});

const SERVER_TOOL_RESULT_BLOCKS = [
  serverToolResult(
    'web_search_tool_result',
    // The error object first: for an object, both branches fail at the top, and the first is reported.
    z.union([openUnion([toolError('web_search_tool_result_error')]), z.array(openUnion([WebSearchResult]))]),
  ),
  serverToolResult(
    'web_fetch_tool_result',
    openUnion([
      toolError('web_fetch_tool_result_error'),
      z.looseObject({
        type: z.literal('web_fetch_result'),
        url: z.string(),
        content: DocumentBlock,
        retrieved_at: opt(z.string()),
      }),
    ]),
  ),
  serverToolResult(
    'advisor_tool_result',
    openUnion([
      toolError('advisor_tool_result_error'),
      z.looseObject({ type: z.literal('advisor_result'), text: z.string(), stop_reason: opt(z.string()) }),
      z.looseObject({
        type: z.literal('advisor_redacted_result'),
        encrypted_content: z.string(),
        stop_reason: opt(z.string()),
      }),
    ]),
  ),
  serverToolResult(
    'code_execution_tool_result',
    openUnion([
      toolError('code_execution_tool_result_error'),
      z.looseObject({
        type: z.literal('code_execution_result'),
        content: outputFiles('code_execution_output'),
        return_code: z.int(),
        stderr: z.string(),
        stdout: z.string(),
      }),
      z.looseObject({
        type: z.literal('encrypted_code_execution_result'),
        content: outputFiles('code_execution_output'),
        encrypted_stdout: z.string(),
        return_code: z.int(),
        stderr: z.string(),
      }),
    ]),
  ),
  serverToolResult(
    'bash_code_execution_tool_result',
    openUnion([
      toolError('bash_code_execution_tool_result_error'),
      z.looseObject({
        type: z.literal('bash_code_execution_result'),
        content: outputFiles('bash_code_execution_output'),
        return_code: z.int(),
        stderr: z.string(),
        stdout: z.string(),
      }),
    ]),
  ),
  serverToolResult(
    'text_editor_code_execution_tool_result',
    openUnion([
      toolError('text_editor_code_execution_tool_result_error'),
      z.looseObject({
        type: z.literal('text_editor_code_execution_view_result'),
        content: z.string(),
        file_type: z.string(),
        num_lines: opt(z.int()),
        start_line: opt(z.int()),
        total_lines: opt(z.int()),
      }),
      z.looseObject({
        type: z.literal('text_editor_code_execution_create_result'),
        is_file_update: z.boolean(),
      }),
      z.looseObject({
        type: z.literal('text_editor_code_execution_str_replace_result'),
        lines: opt(z.array(z.string())),
        new_lines: opt(z.int()),
        new_start: opt(z.int()),
        old_lines: opt(z.int()),
        old_start: opt(z.int()),
      }),
    ]),
  ),
  serverToolResult(
    'tool_search_tool_result',
    openUnion([
      toolError('tool_search_tool_result_error'),
      z.looseObject({
        type: z.literal('tool_search_tool_search_result'),
        tool_references: z.array(ToolReferenceBlock),
      }),
    ]),
  ),
] as const;

const ContainerUploadBlock = z.looseObject({
  type: z.literal('container_upload'),
  file_id: z.string(),
  ...cacheable,
});

// --- MCP --------------------------------------------------------------------------------------

const McpToolUseBlock = z.looseObject({
  type: z.literal('mcp_tool_use'),
  id: z.string(),
  name: z.string(),
  server_name: z.string(),
  input: JsonObject,
  ...cacheable,
});

const McpToolResultBlock = z.looseObject({
  type: z.literal('mcp_tool_result'),
  tool_use_id: z.string(),
  content: opt(z.union([z.string(), z.array(openUnion([TextBlock], MESSAGES_BLOCK_TYPES))])),
  is_error: opt(z.boolean()),
  ...cacheable,
});

const McpToolListingBlock = z.looseObject({
  type: z.literal('mcp_tool_listing'),
  mcp_server_name: z.string(),
  tools: z.array(McpToolDefinition),
});

// --- tool changes and compaction --------------------------------------------------------------

const toolReferences = [
  z.looseObject({ type: z.literal('tool_reference'), name: z.string() }),
  z.looseObject({ type: z.literal('mcp_tool_reference'), name: z.string(), server_name: z.string() }),
  z.looseObject({ type: z.literal('mcp_toolset_reference'), server_name: z.string() }),
] as const;

const ToolDefinitionChange = z.looseObject({ type: z.literal('tool_definition'), definition: Tool });

const ToolAdditionBlock = z.looseObject({
  type: z.literal('tool_addition'),
  tool: openUnion([...toolReferences, ToolDefinitionChange]),
  ...cacheable,
});

const ToolRemovalBlock = z.looseObject({
  type: z.literal('tool_removal'),
  // A removal names a tool; it cannot carry a definition.
  tool: openUnion(toolReferences, ['tool_definition']),
  ...cacheable,
});

const CompactionBlock = z.looseObject({
  type: z.literal('compaction'),
  content: opt(z.string()),
  encrypted_content: opt(z.string()),
  signature: opt(z.string()),
  tool_changes: opt(z.array(openUnion([ToolAdditionBlock, ToolRemovalBlock], MESSAGES_BLOCK_TYPES))),
  ...cacheable,
});

const FallbackBlock = z.looseObject({
  type: z.literal('fallback'),
  from: z.looseObject({ model: ModelName }),
  to: z.looseObject({ model: ModelName }),
});

// --- positions --------------------------------------------------------------------------------

/** A block of a message's `content`. */
export const MessageContentBlock = openUnion(
  [
    TextBlock,
    ImageBlock,
    DocumentBlock,
    SearchResultBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    ToolUseBlock,
    ToolResultBlock,
    ServerToolUseBlock,
    ...SERVER_TOOL_RESULT_BLOCKS,
    McpToolUseBlock,
    McpToolResultBlock,
    ContainerUploadBlock,
    CompactionBlock,
    ToolAdditionBlock,
    ToolRemovalBlock,
    McpToolListingBlock,
    FallbackBlock,
  ],
  MESSAGES_BLOCK_TYPES,
);

/** A block of the top-level `system` prompt: text only. */
export const SystemPromptBlock = openUnion([TextBlock], MESSAGES_BLOCK_TYPES);
