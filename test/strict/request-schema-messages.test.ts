import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { MessagesRequestSchema } from '../../src/gateway/strict/request-schema-messages.js';
import { formatPath } from '../../src/gateway/strict/validate-request.js';

type Body = Record<string, unknown>;

function accepts(body: Body): void {
  const result = MessagesRequestSchema.safeParse(body);
  if (!result.success) throw new Error(`rejected: ${JSON.stringify(result.error.issues)}`);
  // No transforms or defaults: the validator forwards the client's own object.
  expect(result.data).toEqual(body);
}

/**
 * The path a client is told, by the rule of validate-request.ts: through a union, follow the branch
 * whose first issue lies deepest in the value.
 */
function reportedPath(issues: readonly z.core.$ZodIssue[]): string {
  let issue = issues[0]!;
  let prefix: PropertyKey[] = [];
  while (issue.code === 'invalid_union' && issue.errors.length > 0) {
    let deepest: z.core.$ZodIssue | undefined;
    for (const branch of issue.errors) {
      const first = branch[0];
      if (first !== undefined && (deepest === undefined || first.path.length > deepest.path.length)) {
        deepest = first;
      }
    }
    if (deepest === undefined) break;
    prefix = [...prefix, ...issue.path];
    issue = deepest;
  }
  return formatPath([...prefix, ...issue.path]);
}

function rejectionPath(body: Body): string {
  const result = MessagesRequestSchema.safeParse(body);
  if (result.success) throw new Error(`accepted: ${JSON.stringify(body)}`);
  return reportedPath(result.error.issues);
}

const minimal = { model: 'claude-sonnet', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] };

/** A request whose one user message holds `blocks`. */
const withBlocks = (...blocks: unknown[]): Body => ({
  ...minimal,
  messages: [{ role: 'user', content: blocks }],
});

/** A request whose one tool is `tool`. */
const withTool = (tool: unknown): Body => ({ ...minimal, tools: [tool] });

const cache = { type: 'ephemeral', ttl: '1h' };
const pdf = { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' };
const text = { type: 'text', text: 'Hi' };
const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0=' } };
const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/a' } };
const inputSchema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };

// --- Claude Code ----------------------------------------------------------------------------------

/** A tool of the recorded requests: reduced to its name, its description's length and its fields. */
interface RecordedTool {
  name: string;
  desc_chars: number;
  input_schema_props: string[];
  other_keys: string[];
  [key: string]: unknown;
}

/** The smallest tool with the recorded name, fields and flags (`defer_loading`). */
function inflateTool({ name, desc_chars, input_schema_props, other_keys, ...recorded }: RecordedTool): Body {
  if (other_keys.length > 0)
    throw new Error(`${name}: fields without recorded values: ${other_keys.join(', ')}`);
  return {
    name,
    description: 'd'.repeat(desc_chars),
    input_schema: {
      type: 'object',
      properties: Object.fromEntries(input_schema_props.map((field) => [field, { type: 'string' }])),
    },
    ...recorded,
  };
}

const FIXTURES = new URL('../fixtures/claude-code-2.1.328/', import.meta.url);
const recorded = readdirSync(FIXTURES)
  .filter((file) => file.endsWith('.json'))
  .map((file) => [file, JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Body] as const);

function inflated(body: Body): Body {
  return { ...body, tools: (body.tools as RecordedTool[]).map(inflateTool) };
}

describe('requests Claude Code 2.1.328 sends', () => {
  it('are on file, including the in-conversation system message', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(6);
    const roles = recorded.flatMap(([, body]) => (body.messages as { role: string }[]).map((m) => m.role));
    expect(roles).toContain('system');
    expect(recorded.some(([, body]) => body.stream === false)).toBe(true);
  });

  it.each(recorded)('%s passes', (_file, body) => {
    accepts(inflated(body));
  });

  it.each(recorded)('%s as recorded lacks the tools’ input_schema and is refused there', (_file, body) => {
    expect(rejectionPath(body)).toBe('tools[0].input_schema');
  });
});

// --- valid shapes ---------------------------------------------------------------------------------

describe('valid requests pass', () => {
  it('the minimal request, and max_tokens 0 (a cache pre-warming request)', () => {
    accepts(minimal);
    accepts({ ...minimal, max_tokens: 0 });
  });

  it('every top-level parameter', () => {
    accepts({
      ...minimal,
      system: [{ type: 'text', text: 'Be brief.', cache_control: cache }],
      stop_sequences: ['END'],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stream: true,
      metadata: { user_id: 'u-1' },
      service_tier: 'standard_only',
      speed: 'fast',
      inference_geo: 'us',
      cache_control: { type: 'ephemeral' },
      output_config: {
        effort: 'max',
        format: { type: 'json_schema', schema: { type: 'object' } },
        task_budget: { type: 'tokens', total: 10000, remaining: 5000 },
      },
      output_format: { type: 'json_schema', schema: { type: 'object' } },
      thinking: { type: 'enabled', budget_tokens: 1024, display: 'summarized' },
      tool_choice: { type: 'tool', name: 'lookup', disable_parallel_tool_use: true },
      tools: [{ name: 'lookup', input_schema: inputSchema }],
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919',
            clear_at_least: { type: 'input_tokens', value: 1000 },
            clear_tool_inputs: ['Read'],
            exclude_tools: ['Bash'],
            keep: { type: 'tool_uses', value: 3 },
            trigger: { type: 'tool_uses', value: 10 },
          },
          { type: 'clear_thinking_20251015', keep: { type: 'thinking_turns', value: 2 } },
          {
            type: 'compact_20260112',
            instructions: 'Summarize.',
            trigger: { type: 'input_tokens', value: 9 },
          },
        ],
      },
      container: { id: 'container_1', skills: [{ skill_id: 'pptx', type: 'anthropic', version: 'latest' }] },
      mcp_servers: [
        {
          type: 'url',
          name: 'docs',
          url: 'https://mcp.example.test',
          authorization_token: null,
          tool_configuration: { allowed_tools: ['search'], enabled: true },
        },
      ],
      billing_policy: { type: 'billing_policy', bill_to: 'self' },
      compaction: { type: 'summarize', instructions: null },
      diagnostics: { previous_message_id: 'msg_1' },
      fallback_credit_token: { token: 'fct_1', mode: 'best_effort' },
      fallbacks: [
        { model: 'claude-haiku', max_tokens: 512, thinking: { type: 'disabled' }, speed: 'standard' },
      ],
      thread: { type: 'continue', previous_message_id: 'msg_1' },
    });
  });

  it('the other forms of the union-typed parameters', () => {
    accepts({ ...minimal, system: 'Be brief.', container: 'container_1', fallbacks: 'default' });
    accepts({ ...minimal, fallback_credit_token: 'fct_1', thread: { type: 'create' } });
    for (const thinking of [
      { type: 'disabled' },
      { type: 'adaptive', display: 'omitted' },
      { type: 'between_tools' },
    ]) {
      accepts({ ...minimal, thinking });
    }
    for (const tool_choice of [
      { type: 'auto' },
      { type: 'any', disable_parallel_tool_use: false },
      { type: 'none' },
    ]) {
      accepts({ ...minimal, tool_choice });
    }
    accepts({
      ...minimal,
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    });
  });

  it('null stands for an unset optional field', () => {
    accepts({ ...minimal, temperature: null, system: null, tools: null, metadata: { user_id: null } });
  });

  it('every content block of the reference in a message', () => {
    accepts({
      ...minimal,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'text',
              text: 'See the report.',
              cache_control: cache,
              citations: [
                {
                  type: 'char_location',
                  cited_text: 'a',
                  document_index: 0,
                  document_title: null,
                  start_char_index: 0,
                  end_char_index: 1,
                },
                {
                  type: 'page_location',
                  cited_text: 'a',
                  document_index: 0,
                  document_title: 'Report',
                  start_page_number: 1,
                  end_page_number: 2,
                },
                {
                  type: 'content_block_location',
                  cited_text: 'a',
                  document_index: 1,
                  document_title: null,
                  start_block_index: 0,
                  end_block_index: 1,
                },
                {
                  type: 'web_search_result_location',
                  cited_text: 'a',
                  encrypted_index: 'e',
                  title: null,
                  url: 'https://example.test',
                },
                {
                  type: 'search_result_location',
                  cited_text: 'a',
                  search_result_index: 0,
                  source: 'kb',
                  title: 'T',
                  start_block_index: 0,
                  end_block_index: 0,
                },
              ],
            },
            image,
            { type: 'image', source: { type: 'url', url: 'https://example.test/a.gif' } },
            {
              type: 'image',
              source: { type: 'file', file_id: 'file_1' },
              transformations: { oversized_image: 'downsize' },
            },
            { type: 'document', source: pdf, title: 'Report', context: 'Q3', citations: { enabled: true } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain' } },
            { type: 'document', source: { type: 'content', content: [text, image] } },
            {
              type: 'document',
              source: { type: 'url', url: 'https://example.test/a.pdf' },
              cache_control: cache,
            },
            { type: 'document', source: { type: 'file', file_id: 'file_2' } },
            {
              type: 'search_result',
              source: 'kb',
              title: 'T',
              content: [text],
              citations: { enabled: false },
            },
            { type: 'container_upload', file_id: 'file_3' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Let me see.', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque' },
            { ...toolUse, caller: { type: 'direct' }, cache_control: cache },
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
            {
              type: 'web_search_tool_result',
              tool_use_id: 'srvtoolu_1',
              content: [
                { type: 'web_search_result', encrypted_content: 'e', title: 'T', url: 'https://a.test' },
              ],
            },
            {
              type: 'web_search_tool_result',
              tool_use_id: 'srvtoolu_2',
              content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
            },
            {
              type: 'web_fetch_tool_result',
              tool_use_id: 'srvtoolu_3',
              content: {
                type: 'web_fetch_result',
                url: 'https://a.test',
                content: { type: 'document', source: pdf },
                retrieved_at: '2026-01-01T00:00:00Z',
              },
            },
            {
              type: 'advisor_tool_result',
              tool_use_id: 'srvtoolu_4',
              content: { type: 'advisor_result', text: 'Advice.' },
            },
            {
              type: 'code_execution_tool_result',
              tool_use_id: 'srvtoolu_5',
              content: {
                type: 'code_execution_result',
                content: [{ type: 'code_execution_output', file_id: 'file_4' }],
                return_code: 0,
                stderr: '',
                stdout: 'ok',
              },
            },
            {
              type: 'bash_code_execution_tool_result',
              tool_use_id: 'srvtoolu_6',
              content: { type: 'bash_code_execution_tool_result_error', error_code: 'unavailable' },
            },
            {
              type: 'text_editor_code_execution_tool_result',
              tool_use_id: 'srvtoolu_7',
              content: { type: 'text_editor_code_execution_view_result', content: 'x', file_type: 'text' },
            },
            {
              type: 'tool_search_tool_result',
              tool_use_id: 'srvtoolu_8',
              content: {
                type: 'tool_search_tool_search_result',
                tool_references: [{ type: 'tool_reference', tool_name: 'Read' }],
              },
            },
            { type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'search', server_name: 'docs', input: {} },
            {
              type: 'mcp_tool_listing',
              mcp_server_name: 'docs',
              tools: [{ name: 'search', input_schema: {} }],
            },
            { type: 'fallback', from: { model: 'claude-opus' }, to: { model: 'claude-sonnet' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: 'contents',
              is_error: false,
              cache_control: cache,
            },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: [
                text,
                image,
                { type: 'document', source: pdf },
                { type: 'search_result', source: 'kb', title: 'T', content: [text] },
                { type: 'tool_reference', tool_name: 'Read' },
                {
                  type: 'browser_state',
                  tabs: [{ tab_id: 't1', title: 'Home', url: 'https://a.test', active: true }],
                  state_changes: [{ type: 'tab_opened', tab_id: 't1' }],
                },
              ],
            },
            { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', content: [text], is_error: true },
            {
              type: 'compaction',
              content: 'Summary.',
              tool_changes: [
                {
                  type: 'tool_addition',
                  tool: { type: 'tool_definition', definition: { name: 'x', input_schema: inputSchema } },
                },
                { type: 'tool_removal', tool: { type: 'mcp_toolset_reference', server_name: 'docs' } },
              ],
            },
            {
              type: 'tool_addition',
              tool: { type: 'mcp_tool_reference', name: 'search', server_name: 'docs' },
            },
            { type: 'tool_removal', tool: { type: 'tool_reference', name: 'Read' } },
          ],
        },
      ],
    });
  });

  it('system messages inside the conversation: string, blocks, or only a turn setting', () => {
    const system = (message: Body): Body => ({
      ...minimal,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'system', ...message },
      ],
    });
    accepts(system({ content: 'Environment: linux', output_config: { effort: 'medium' } }));
    accepts(
      system({ content: [{ ...text, cache_control: { type: 'ephemeral' } }], clear_at: 'next_user_message' }),
    );
    accepts(system({ output_config: { effort: 'xhigh' } }));
  });

  it('client tools with every field, and each server tool of the reference', () => {
    accepts({
      ...minimal,
      tools: [
        {
          type: 'custom',
          name: 'lookup',
          description: 'Looks up',
          input_schema: inputSchema,
          cache_control: cache,
          defer_loading: true,
          strict: true,
          eager_input_streaming: null,
          input_examples: [{ q: 'a' }],
          allowed_callers: ['direct', 'code_execution_20250825'],
        },
        { type: 'bash_20250124', name: 'bash' },
        { type: 'code_execution_20250825', name: 'code_execution', defer_loading: false },
        {
          type: 'computer_20251124',
          name: 'computer',
          display_width_px: 1280,
          display_height_px: 800,
          enable_zoom: true,
        },
        { type: 'memory_20250818', name: 'memory' },
        { type: 'text_editor_20250124', name: 'str_replace_editor' },
        { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 10000 },
        {
          type: 'web_search_20250305',
          name: 'web_search',
          max_uses: 5,
          allowed_domains: ['example.test'],
          user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
        },
        { type: 'web_fetch_20260318', name: 'web_fetch', citations: { enabled: true }, use_cache: false },
        { type: 'advisor_20260301', name: 'advisor', model: 'claude-opus', max_uses: 2 },
        { type: 'tool_search_tool_bm25', name: 'tool_search_tool_bm25' },
        { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
        { type: 'browser_toolset_20260801', configs: { navigate: { enabled: true }, zoom: null } },
        { type: 'computer_toolset_20260801' },
        {
          type: 'mcp_toolset',
          mcp_server_name: 'docs',
          default_config: { defer_loading: true },
          configs: { search: { enabled: false } },
        },
      ],
    });
  });

  it('fields, blocks, tools and edits of later betas pass unchecked', () => {
    accepts({
      ...minimal,
      future_option: { anything: [1, 2] },
      messages: [
        {
          role: 'user',
          pinned: true,
          content: [
            { type: 'hologram', frames: 3 },
            { ...text, emphasis: 'strong' },
          ],
        },
      ],
      tools: [
        { type: 'teleport_20270101', name: 'teleport' },
        { name: 'x', input_schema: inputSchema, ranking: 1 },
      ],
      thinking: { type: 'adaptive', display: 'omitted', trace: true },
      context_management: { edits: [{ type: 'forget_everything_20270101' }] },
    });
  });
});

// --- invalid requests -----------------------------------------------------------------------------

const { model: _model, ...withoutModel } = minimal;
const { max_tokens: _maxTokens, ...withoutMaxTokens } = minimal;
const { messages: _messages, ...withoutMessages } = minimal;

const INVALID: readonly (readonly [string, Body, string])[] = [
  // required parameters
  ['model missing', withoutModel, 'model'],
  ['model empty', { ...minimal, model: '' }, 'model'],
  ['model a number', { ...minimal, model: 3 }, 'model'],
  ['max_tokens missing', withoutMaxTokens, 'max_tokens'],
  ['max_tokens negative', { ...minimal, max_tokens: -1 }, 'max_tokens'],
  ['max_tokens fractional', { ...minimal, max_tokens: 1.5 }, 'max_tokens'],
  ['max_tokens a string', { ...minimal, max_tokens: '1024' }, 'max_tokens'],
  ['messages missing', withoutMessages, 'messages'],
  ['messages empty', { ...minimal, messages: [] }, 'messages'],
  ['messages an object', { ...minimal, messages: { role: 'user', content: 'Hi' } }, 'messages'],
  // messages
  ['a role of another API', { ...minimal, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
  ['a message without role', { ...minimal, messages: [{ content: 'x' }] }, 'messages[0].role'],
  ['a user message without content', { ...minimal, messages: [{ role: 'user' }] }, 'messages[0].content'],
  ['content a number', { ...minimal, messages: [{ role: 'assistant', content: 4 }] }, 'messages[0].content'],
  [
    'a system message effort out of range',
    { ...minimal, messages: [{ role: 'system', content: 'x', output_config: { effort: 'extreme' } }] },
    'messages[0].output_config.effort',
  ],
  [
    'a system message clear_at unknown',
    { ...minimal, messages: [{ role: 'system', content: 'x', clear_at: 'later' }] },
    'messages[0].clear_at',
  ],
  // blocks
  ['a block that is a string', withBlocks('Hi'), 'messages[0].content[0]'],
  ['a block without type', withBlocks({ text: 'Hi' }), 'messages[0].content[0].type'],
  ['a block type that is a number', withBlocks({ type: 7 }), 'messages[0].content[0].type'],
  ['text without text', withBlocks({ type: 'text' }), 'messages[0].content[0].text'],
  ['text a number', withBlocks(text, { type: 'text', text: 1 }), 'messages[0].content[1].text'],
  [
    'cache_control of another kind',
    withBlocks({ ...text, cache_control: { type: 'persistent' } }),
    'messages[0].content[0].cache_control.type',
  ],
  [
    'cache_control ttl unknown',
    withBlocks({ ...text, cache_control: { type: 'ephemeral', ttl: '10m' } }),
    'messages[0].content[0].cache_control.ttl',
  ],
  [
    'a citation index that is a string',
    withBlocks({
      ...text,
      citations: [
        {
          type: 'char_location',
          cited_text: 'a',
          document_index: 'x',
          document_title: null,
          start_char_index: 0,
          end_char_index: 1,
        },
      ],
    }),
    'messages[0].content[0].citations[0].document_index',
  ],
  [
    'an image media type outside the four',
    withBlocks({ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }),
    'messages[0].content[0].source.media_type',
  ],
  [
    'an image source type unknown',
    withBlocks({ type: 'image', source: { type: 'path', path: '/a.png' } }),
    'messages[0].content[0].source.type',
  ],
  [
    'an image url source without url',
    withBlocks({ type: 'image', source: { type: 'url' } }),
    'messages[0].content[0].source.url',
  ],
  ['an image without source', withBlocks({ type: 'image' }), 'messages[0].content[0].source'],
  [
    'a base64 document that is not a PDF',
    withBlocks({ type: 'document', source: { ...pdf, media_type: 'text/plain' } }),
    'messages[0].content[0].source.media_type',
  ],
  [
    'a content document with a tool_use inside',
    withBlocks({ type: 'document', source: { type: 'content', content: [toolUse] } }),
    'messages[0].content[0].source.content[0].type',
  ],
  [
    'a search result without content',
    withBlocks({ type: 'search_result', source: 'kb', title: 'T' }),
    'messages[0].content[0].content',
  ],
  [
    'thinking without signature',
    withBlocks({ type: 'thinking', thinking: 'hm' }),
    'messages[0].content[0].signature',
  ],
  [
    'redacted thinking data a number',
    withBlocks({ type: 'redacted_thinking', data: 1 }),
    'messages[0].content[0].data',
  ],
  ['tool_use without id', withBlocks({ ...toolUse, id: undefined }), 'messages[0].content[0].id'],
  ['tool_use input a string', withBlocks({ ...toolUse, input: '{"a":1}' }), 'messages[0].content[0].input'],
  ['tool_use input an array', withBlocks({ ...toolUse, input: [1] }), 'messages[0].content[0].input'],
  [
    'tool_result without tool_use_id',
    withBlocks({ type: 'tool_result', content: 'x' }),
    'messages[0].content[0].tool_use_id',
  ],
  [
    'tool_result is_error a string',
    withBlocks({ type: 'tool_result', tool_use_id: 't', is_error: 'yes' }),
    'messages[0].content[0].is_error',
  ],
  [
    'tool_result content a number',
    withBlocks({ type: 'tool_result', tool_use_id: 't', content: 5 }),
    'messages[0].content[0].content',
  ],
  [
    'tool_result content holding a tool_use',
    withBlocks({ type: 'tool_result', tool_use_id: 't', content: [text, toolUse] }),
    'messages[0].content[0].content[1].type',
  ],
  [
    'tool_result content holding a bad text block',
    withBlocks({ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text' }] }),
    'messages[0].content[0].content[0].text',
  ],
  [
    'a tool_reference outside a tool result',
    withBlocks({ type: 'tool_reference', tool_name: 'Read' }),
    'messages[0].content[0].type',
  ],
  [
    'a server tool use input that is not an object',
    withBlocks({ type: 'server_tool_use', id: 's', name: 'web_search', input: 'q' }),
    'messages[0].content[0].input',
  ],
  [
    'a web search error without its code',
    withBlocks({
      type: 'web_search_tool_result',
      tool_use_id: 's',
      content: { type: 'web_search_tool_result_error' },
    }),
    'messages[0].content[0].content.error_code',
  ],
  [
    'a web search result without url',
    withBlocks({
      type: 'web_search_tool_result',
      tool_use_id: 's',
      content: [{ type: 'web_search_result', encrypted_content: 'e', title: 'T' }],
    }),
    'messages[0].content[0].content[0].url',
  ],
  [
    'a code execution result with a fractional return code',
    withBlocks({
      type: 'code_execution_tool_result',
      tool_use_id: 's',
      content: { type: 'code_execution_result', content: [], return_code: 0.5, stderr: '', stdout: '' },
    }),
    'messages[0].content[0].content.return_code',
  ],
  [
    'a tool removal carrying a definition',
    withBlocks({ type: 'tool_removal', tool: { type: 'tool_definition', definition: {} } }),
    'messages[0].content[0].tool.type',
  ],
  // system prompt
  ['system a number', { ...minimal, system: 1 }, 'system'],
  ['system holding an image', { ...minimal, system: [image] }, 'system[0].type'],
  ['system text without text', { ...minimal, system: [{ type: 'text' }] }, 'system[0].text'],
  // tools
  ['tools an object', { ...minimal, tools: { name: 'x' } }, 'tools'],
  ['a client tool without input_schema', withTool({ name: 'x' }), 'tools[0].input_schema'],
  ['a client tool without name', withTool({ input_schema: inputSchema }), 'tools[0].name'],
  [
    'an input_schema that is not an object schema',
    withTool({ name: 'x', input_schema: { type: 'array' } }),
    'tools[0].input_schema.type',
  ],
  [
    'defer_loading a string',
    withTool({ name: 'x', input_schema: inputSchema, defer_loading: 'yes' }),
    'tools[0].defer_loading',
  ],
  ['strict a string', withTool({ name: 'x', input_schema: inputSchema, strict: 'true' }), 'tools[0].strict'],
  [
    'input_examples an object',
    withTool({ name: 'x', input_schema: inputSchema, input_examples: { q: 1 } }),
    'tools[0].input_examples',
  ],
  [
    'a server tool with another name',
    withTool({ type: 'web_search_20250305', name: 'search' }),
    'tools[0].name',
  ],
  [
    'a computer tool without its width',
    withTool({ type: 'computer_20250124', name: 'computer', display_height_px: 800 }),
    'tools[0].display_width_px',
  ],
  ['an MCP toolset without its server', withTool({ type: 'mcp_toolset' }), 'tools[0].mcp_server_name'],
  ['a tool type that is a number', withTool({ type: 5, name: 'x' }), 'tools[0].type'],
  // tool_choice
  ['tool_choice of another API', { ...minimal, tool_choice: { type: 'required' } }, 'tool_choice.type'],
  ['tool_choice a string', { ...minimal, tool_choice: 'auto' }, 'tool_choice'],
  ['tool_choice tool without name', { ...minimal, tool_choice: { type: 'tool' } }, 'tool_choice.name'],
  [
    'disable_parallel_tool_use a string',
    { ...minimal, tool_choice: { type: 'any', disable_parallel_tool_use: 'no' } },
    'tool_choice.disable_parallel_tool_use',
  ],
  // thinking and output
  [
    'thinking budget under 1024',
    { ...minimal, thinking: { type: 'enabled', budget_tokens: 1023 } },
    'thinking.budget_tokens',
  ],
  [
    'thinking enabled without budget',
    { ...minimal, thinking: { type: 'enabled' } },
    'thinking.budget_tokens',
  ],
  ['thinking of an unknown type', { ...minimal, thinking: { type: 'on' } }, 'thinking.type'],
  [
    'thinking display unknown',
    { ...minimal, thinking: { type: 'adaptive', display: 'full' } },
    'thinking.display',
  ],
  ['output_config a string', { ...minimal, output_config: 'high' }, 'output_config'],
  ['effort out of range', { ...minimal, output_config: { effort: 'extreme' } }, 'output_config.effort'],
  [
    'output format of another kind',
    { ...minimal, output_config: { format: { type: 'regex', schema: {} } } },
    'output_config.format.type',
  ],
  // other parameters
  ['stop_sequences a string', { ...minimal, stop_sequences: 'END' }, 'stop_sequences'],
  ['stop_sequences holding a number', { ...minimal, stop_sequences: ['END', 1] }, 'stop_sequences[1]'],
  ['temperature a string', { ...minimal, temperature: '0.5' }, 'temperature'],
  ['top_p a boolean', { ...minimal, top_p: true }, 'top_p'],
  ['top_k fractional', { ...minimal, top_k: 1.5 }, 'top_k'],
  ['stream a string', { ...minimal, stream: 'true' }, 'stream'],
  ['metadata user_id a number', { ...minimal, metadata: { user_id: 5 } }, 'metadata.user_id'],
  ['service_tier of another API', { ...minimal, service_tier: 'priority' }, 'service_tier'],
  ['context_management a string', { ...minimal, context_management: 'auto' }, 'context_management'],
  [
    'a context edit with a bad keep',
    { ...minimal, context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'some' }] } },
    'context_management.edits[0].keep',
  ],
  ['container a number', { ...minimal, container: 5 }, 'container'],
  [
    'an MCP server without url',
    { ...minimal, mcp_servers: [{ type: 'url', name: 'docs' }] },
    'mcp_servers[0].url',
  ],
  ['fallbacks a string other than default', { ...minimal, fallbacks: 'any' }, 'fallbacks'],
];

describe('invalid requests fail at the path of their fault', () => {
  it.each(INVALID)('%s', (_name, body, path) => {
    expect(rejectionPath(body)).toBe(path);
  });
});
