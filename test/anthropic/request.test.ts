import { describe, expect, it } from 'vitest';
import { messagesToChat } from '../../src/gateway/anthropic/request.js';
import { thinkingSignature } from '../../src/gateway/anthropic/signature.js';

type Body = Record<string, unknown>;

function request(extra: Body = {}): Body {
  return { model: 'claude-x', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }], ...extra };
}

function translated(body: Body): { body: Body; dropped: string[] } {
  const result = messagesToChat(body);
  if (!result.ok) throw new Error(`refused ${result.field}: ${result.message}`);
  return result;
}

function refusal(body: Body): { field: string; message: string } {
  const result = messagesToChat(body);
  if (result.ok) throw new Error(`translated: ${JSON.stringify(result.body)}`);
  return result;
}

function chatMessages(body: Body): Body[] {
  return translated(body).body.messages as Body[];
}

const toolUse = (id: string, name = 'Read', input: Body = { file_path: '/a' }) => ({
  type: 'tool_use',
  id,
  name,
  input,
});
const toolResult = (id: string, content: unknown = 'ok', extra: Body = {}) => ({
  type: 'tool_result',
  tool_use_id: id,
  content,
  ...extra,
});
const readTool = {
  name: 'Read',
  description: 'Reads a file',
  input_schema: { type: 'object', properties: {} },
};

describe('messagesToChat: top-level fields', () => {
  it('maps the sampling and stream fields', () => {
    const { body, dropped } = translated(
      request({
        stop_sequences: ['END', '###'],
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        stream: true,
        metadata: { user_id: 'user-1' },
      }),
    );
    expect(body).toEqual({
      model: 'claude-x',
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 256,
      stop: ['END', '###'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stream: true,
      stream_options: { include_usage: true },
      user: 'user-1',
    });
    expect(dropped).toEqual([]);
  });

  it('asks for no usage chunk when not streamed', () => {
    const { body } = translated(request({ stream: false }));
    expect(body.stream).toBe(false);
    expect(body).not.toHaveProperty('stream_options');
  });

  it('treats null optional fields as absent', () => {
    const { body, dropped } = translated(
      request({ temperature: null, system: null, metadata: null, service_tier: null }),
    );
    expect(body).toEqual({
      model: 'claude-x',
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 256,
    });
    expect(dropped).toEqual([]);
  });

  it('drops and reports fields that change nothing of the content, and unknown fields', () => {
    const { body, dropped } = translated(
      request({
        context_management: { edits: [] },
        service_tier: 'auto',
        inference_geo: 'us',
        cache_control: { type: 'ephemeral' },
        some_future_field: 1,
        metadata: { user_id: 'u', trace: 'x' },
      }),
    );
    expect(dropped.sort()).toEqual(
      [
        'cache_control',
        'context_management',
        'inference_geo',
        'metadata.trace',
        'service_tier',
        'some_future_field',
      ].sort(),
    );
    for (const key of [
      'context_management',
      'service_tier',
      'inference_geo',
      'cache_control',
      'some_future_field',
    ]) {
      expect(body).not.toHaveProperty(key);
    }
  });

  it.each([
    ['mcp_servers', [{ type: 'url', url: 'https://mcp.example', name: 'x' }]],
    ['container', 'container_1'],
  ])('refuses the server-side feature %s', (field, value) => {
    const result = refusal(request({ [field]: value }));
    expect(result.field).toBe(field);
    expect(result.message).toContain(field);
  });

  it.each([
    [{ model: undefined }, 'model'],
    [{ model: '' }, 'model'],
    [{ max_tokens: undefined }, 'max_tokens'],
    [{ max_tokens: 0 }, 'max_tokens'],
    [{ max_tokens: 1.5 }, 'max_tokens'],
    [{ max_tokens: '100' }, 'max_tokens'],
    [{ messages: 'hi' }, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: ['hi'] }, 'messages[0]'],
    [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
    [{ messages: [{ role: 'user', content: 7 }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
    [{ stop_sequences: 'END' }, 'stop_sequences'],
    [{ stop_sequences: ['END', 3] }, 'stop_sequences[1]'],
    [{ temperature: '0.5' }, 'temperature'],
    [{ top_p: Number.NaN }, 'top_p'],
    [{ top_k: -1 }, 'top_k'],
    [{ stream: 'yes' }, 'stream'],
    [{ metadata: 'user' }, 'metadata'],
    [{ metadata: { user_id: 5 } }, 'metadata.user_id'],
    [{ system: 5 }, 'system'],
    [{ system: [{ type: 'image', source: {} }] }, 'system[0].type'],
    [{ system: [{ type: 'text' }] }, 'system[0].text'],
  ])('refuses %j at %s', (extra, field) => {
    const result = refusal(request(extra));
    expect(result.field).toBe(field);
    expect(result.message).toContain(field);
  });

  it('refuses a body that is not an object', () => {
    const result = messagesToChat([] as unknown as Body);
    expect(result).toEqual({ ok: false, field: '', message: 'the request body must be a JSON object' });
  });
});

describe('messagesToChat: system prompts', () => {
  it('puts a string system prompt first', () => {
    expect(chatMessages(request({ system: 'Be brief.' }))[0]).toEqual({
      role: 'system',
      content: 'Be brief.',
    });
  });

  it('joins system blocks with a blank line and reports their cache_control once', () => {
    const { body, dropped } = translated(
      request({
        system: [
          { type: 'text', text: 'One.' },
          { type: 'text', text: 'Two.', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Three.', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
      }),
    );
    expect((body.messages as Body[])[0]).toEqual({ role: 'system', content: 'One.\n\nTwo.\n\nThree.' });
    expect(dropped).toEqual(['cache_control']);
  });

  it('moves an in-conversation system message into the leading one (chat templates take a system message only first)', () => {
    const messages = chatMessages(
      request({
        system: 'Top.',
        messages: [
          { role: 'user', content: 'First.' },
          {
            role: 'system',
            content: [{ type: 'text', text: 'Environment.', cache_control: { type: 'ephemeral' } }],
          },
          { role: 'assistant', content: 'Answer.' },
          { role: 'user', content: 'Second.' },
        ],
      }),
    );
    expect(messages).toEqual([
      { role: 'system', content: 'Top.\n\nEnvironment.' },
      { role: 'user', content: 'First.' },
      { role: 'assistant', content: 'Answer.' },
      { role: 'user', content: 'Second.' },
    ]);
  });
});

describe('messagesToChat: user content', () => {
  it('translates text and images', () => {
    const messages = chatMessages(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            ],
          },
        ],
      }),
    );
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('refuses an image source it cannot express', () => {
    const result = refusal(
      request({
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }] },
        ],
      }),
    );
    expect(result.field).toBe('messages[0].content[0].source.type');
  });

  it.each([
    'document',
    'search_result',
    'server_tool_use',
    'web_search_tool_result',
    'container_upload',
    'mcp_tool_use',
  ])('refuses a %s block, naming it', (type) => {
    const result = refusal(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'x' },
              { type, id: 'x' },
            ],
          },
        ],
      }),
    );
    expect(result.field).toBe('messages[0].content[1].type');
    expect(result.message).toContain(JSON.stringify(type));
  });

  it('refuses assistant-only blocks in a user message', () => {
    const result = refusal(request({ messages: [{ role: 'user', content: [toolUse('t1')] }] }));
    expect(result.field).toBe('messages[0].content[0].type');
    expect(result.message).toContain('assistant message');
  });
});

describe('messagesToChat: tool use and results', () => {
  const conversation = (userContent: unknown[], assistantContent: unknown[] = [toolUse('t1')]) =>
    request({
      tools: [readTool],
      messages: [
        { role: 'user', content: 'Read /a' },
        { role: 'assistant', content: assistantContent },
        { role: 'user', content: userContent },
      ],
    });

  it('makes tool_calls of tool_use blocks and tool messages of tool_result blocks', () => {
    const messages = chatMessages(
      conversation(
        [
          toolResult('t1', 'file A'),
          toolResult('t2', [
            { type: 'text', text: 'part 1' },
            { type: 'text', text: 'part 2' },
          ]),
        ],
        [
          { type: 'text', text: 'Reading both.' },
          toolUse('t1'),
          toolUse('t2', 'Read', { file_path: '/b', limit: 3 }),
        ],
      ),
    );
    expect(messages).toEqual([
      { role: 'user', content: 'Read /a' },
      {
        role: 'assistant',
        content: 'Reading both.',
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/a"}' } },
          {
            id: 't2',
            type: 'function',
            function: { name: 'Read', arguments: '{"file_path":"/b","limit":3}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'file A' },
      { role: 'tool', tool_call_id: 't2', content: 'part 1\n\npart 2' },
    ]);
  });

  it('gives an assistant message with only tool calls null content', () => {
    const messages = chatMessages(conversation([toolResult('t1')]));
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 't1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/a"}' } },
      ],
    });
  });

  it('puts the tool messages first and the rest of the user turn after them', () => {
    const messages = chatMessages(
      conversation([toolResult('t1', 'A'), { type: 'text', text: 'Now summarize.' }]),
    );
    expect(messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 't1', content: 'A' },
      { role: 'user', content: [{ type: 'text', text: 'Now summarize.' }] },
    ]);
  });

  it('places tool messages right after the assistant message, before an in-conversation system message', () => {
    const messages = chatMessages(
      request({
        messages: [
          { role: 'user', content: 'Read /a' },
          { role: 'assistant', content: [toolUse('t1')] },
          { role: 'system', content: 'Reminder.' },
          { role: 'user', content: [toolResult('t1', 'A')] },
        ],
      }),
    );
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  it('carries is_error as a prefix of the tool message', () => {
    const messages = chatMessages(conversation([toolResult('t1', 'No such file', { is_error: true })]));
    expect(messages[2]).toEqual({ role: 'tool', tool_call_id: 't1', content: 'Error: No such file' });
  });

  it('gives a tool result without content an empty tool message', () => {
    const messages = chatMessages(conversation([{ type: 'tool_result', tool_use_id: 't1' }]));
    expect(messages[2]).toEqual({ role: 'tool', tool_call_id: 't1', content: '' });
  });

  it('reports cache_control on tool results and nested blocks once', () => {
    const { dropped } = translated(
      conversation([
        toolResult('t1', [{ type: 'text', text: 'A', cache_control: { type: 'ephemeral' } }], {
          cache_control: { type: 'ephemeral' },
        }),
      ]),
    );
    expect(dropped).toEqual(['cache_control']);
  });

  it('refuses an image inside a tool result', () => {
    const result = refusal(
      conversation([
        toolResult('t1', [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } },
        ]),
      ]),
    );
    expect(result.field).toBe('messages[2].content[0].content[0].type');
    expect(result.message).toContain('image');
  });

  it('refuses a tool result that answers no tool_use of the assistant message before it', () => {
    const result = refusal(conversation([toolResult('t1'), toolResult('t9')]));
    expect(result.field).toBe('messages[2].content[1].tool_use_id');
  });

  it('refuses a tool_use left without a tool result', () => {
    const result = refusal(conversation([toolResult('t1')], [toolUse('t1'), toolUse('t2')]));
    expect(result.field).toBe('messages[2].content');
    expect(result.message).toContain('t2');
  });

  it('refuses a string user turn after tool calls', () => {
    const result = refusal(
      request({
        messages: [
          { role: 'user', content: 'Read /a' },
          { role: 'assistant', content: [toolUse('t1')] },
          { role: 'user', content: 'never mind' },
        ],
      }),
    );
    expect(result.field).toBe('messages[2].content');
  });

  it('refuses a tool result without preceding tool calls', () => {
    const result = refusal(request({ messages: [{ role: 'user', content: [toolResult('t1')] }] }));
    expect(result.field).toBe('messages[0].content[0].tool_use_id');
  });

  it('refuses a repeated tool_use id and malformed tool_use blocks', () => {
    expect(refusal(conversation([toolResult('t1')], [toolUse('t1'), toolUse('t1')])).field).toBe(
      'messages[1].content[1].id',
    );
    expect(
      refusal(conversation([toolResult('t1')], [{ type: 'tool_use', id: 't1', name: 'Read', input: 'x' }]))
        .field,
    ).toBe('messages[1].content[0].input');
    expect(refusal(conversation([toolResult('t1')], [{ type: 'tool_use', id: 't1', input: {} }])).field).toBe(
      'messages[1].content[0].name',
    );
  });

  it('refuses a conversation that ends with an assistant message (prefill)', () => {
    const result = refusal(
      request({
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello, I' },
        ],
      }),
    );
    expect(result.field).toBe('messages[1].role');
    expect(result.message).toContain('prefill');
  });

  it('accepts system messages after the last user message', () => {
    const messages = chatMessages(
      request({
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Environment.' },
        ],
      }),
    );
    expect(messages).toEqual([
      { role: 'system', content: 'Environment.' },
      { role: 'user', content: 'Hi' },
    ]);
  });
});

describe('messagesToChat: thinking blocks', () => {
  const withThinking = (block: Body) =>
    request({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [block, { type: 'text', text: 'Hello.' }] },
        { role: 'user', content: 'Again' },
      ],
    });

  it("drops the gateway's own thinking blocks and reports them", () => {
    const thinking = 'The user greets me.';
    const { body, dropped } = translated(
      withThinking({ type: 'thinking', thinking, signature: thinkingSignature(thinking) }),
    );
    expect((body.messages as Body[])[1]).toEqual({ role: 'assistant', content: 'Hello.' });
    expect(dropped).toEqual(['thinking']);
  });

  it('refuses a thinking block signed by anyone else, naming its signature', () => {
    const result = refusal(
      withThinking({ type: 'thinking', thinking: 'Hmm.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrk' }),
    );
    expect(result.field).toBe('messages[1].content[0].signature');
    expect(result.message).toContain("not produced by this gateway's translation");
    expect(result.message).toContain('chat-completions provider');
  });

  it('refuses a gateway thinking block whose text was altered', () => {
    const result = refusal(
      withThinking({ type: 'thinking', thinking: 'Altered.', signature: thinkingSignature('Original.') }),
    );
    expect(result.field).toBe('messages[1].content[0].signature');
  });

  it('refuses a thinking block without a signature', () => {
    expect(refusal(withThinking({ type: 'thinking', thinking: 'Hmm.' })).field).toBe(
      'messages[1].content[0].signature',
    );
  });

  it('refuses redacted thinking', () => {
    const result = refusal(withThinking({ type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' }));
    expect(result.field).toBe('messages[1].content[0].type');
    expect(result.message).toContain('redacted_thinking');
  });
});

describe('messagesToChat: tools and tool_choice', () => {
  it('makes functions of custom tools, keeping the schema as sent', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
      additionalProperties: false,
    };
    const { body, dropped } = translated(
      request({
        tools: [
          {
            name: 'search',
            description: 'Searches',
            input_schema: schema,
            cache_control: { type: 'ephemeral' },
          },
          {
            type: 'custom',
            name: 'later',
            input_schema: { type: 'object' },
            defer_loading: true,
            strict: true,
          },
        ],
      }),
    );
    expect(body.tools).toEqual([
      { type: 'function', function: { name: 'search', description: 'Searches', parameters: schema } },
      { type: 'function', function: { name: 'later', parameters: { type: 'object' }, strict: true } },
    ]);
    expect(dropped.sort()).toEqual(['cache_control', 'defer_loading']);
  });

  it('reports unknown tool fields', () => {
    const { dropped } = translated(request({ tools: [{ ...readTool, input_examples: [{}] }] }));
    expect(dropped).toEqual(['tools[].input_examples']);
  });

  it.each([
    'web_search_20250305',
    'bash_20250124',
    'text_editor_20250728',
    'computer_20250124',
    'code_execution_20250825',
  ])('refuses the server tool %s, naming its type', (type) => {
    const result = refusal(request({ tools: [readTool, { type, name: 'server' }] }));
    expect(result.field).toBe('tools[1].type');
    expect(result.message).toContain(type);
  });

  it.each([
    [[{ name: '', input_schema: {} }], 'tools[0].name'],
    [[{ name: 'x' }], 'tools[0].input_schema'],
    [[readTool, readTool], 'tools[1].name'],
    [[{ ...readTool, description: 3 }], 'tools[0].description'],
    ['Read', 'tools'],
  ])('refuses malformed tools %j at %s', (tools, field) => {
    expect(refusal(request({ tools })).field).toBe(field);
  });

  it('omits an empty tools list', () => {
    expect(translated(request({ tools: [] })).body).not.toHaveProperty('tools');
  });

  it.each([
    [{ type: 'auto' }, 'auto'],
    [{ type: 'any' }, 'required'],
    [{ type: 'none' }, 'none'],
    [
      { type: 'tool', name: 'Read' },
      { type: 'function', function: { name: 'Read' } },
    ],
  ])('maps tool_choice %j', (choice, expected) => {
    const { body } = translated(request({ tools: [readTool], tool_choice: choice }));
    expect(body.tool_choice).toEqual(expected);
    expect(body).not.toHaveProperty('parallel_tool_calls');
  });

  it('turns disable_parallel_tool_use into parallel_tool_calls: false', () => {
    const { body } = translated(
      request({ tools: [readTool], tool_choice: { type: 'auto', disable_parallel_tool_use: true } }),
    );
    expect(body.parallel_tool_calls).toBe(false);
  });

  it('refuses a tool_choice it cannot honour', () => {
    expect(refusal(request({ tools: [readTool], tool_choice: { type: 'tool', name: 'Write' } })).field).toBe(
      'tool_choice.name',
    );
    expect(refusal(request({ tools: [readTool], tool_choice: { type: 'some' } })).field).toBe(
      'tool_choice.type',
    );
    expect(refusal(request({ tool_choice: { type: 'any' } })).field).toBe('tool_choice.type');
    expect(
      refusal(request({ tools: [readTool], tool_choice: { type: 'auto', disable_parallel_tool_use: 'yes' } }))
        .field,
    ).toBe('tool_choice.disable_parallel_tool_use');
  });

  it('gives no tool_choice without tools when it chooses nothing', () => {
    expect(translated(request({ tool_choice: { type: 'auto' } })).body).not.toHaveProperty('tool_choice');
  });
});

describe('messagesToChat: thinking and effort', () => {
  it.each([
    [{ type: 'enabled', budget_tokens: 2048 }, undefined, 'medium'],
    [{ type: 'enabled', budget_tokens: 2048 }, 'low', 'low'],
    [{ type: 'adaptive' }, 'medium', 'medium'],
    [{ type: 'adaptive' }, 'high', 'high'],
    [{ type: 'adaptive' }, 'max', 'high'],
    [{ type: 'adaptive' }, undefined, undefined],
    [{ type: 'disabled' }, undefined, undefined],
  ])('thinking %j with effort %s gives reasoning_effort %s', (thinking, effort, expected) => {
    const extra: Body = { thinking };
    if (effort !== undefined) extra.output_config = { effort };
    const { body } = translated(request(extra));
    expect(body.reasoning_effort).toBe(expected);
  });

  it('reports the budget of enabled thinking as dropped', () => {
    expect(translated(request({ thinking: { type: 'enabled', budget_tokens: 2048 } })).dropped).toEqual([
      'thinking.budget_tokens',
    ]);
  });

  it('reports an effort given without thinking as dropped', () => {
    for (const thinking of [undefined, { type: 'disabled' }]) {
      const { body, dropped } = translated(request({ thinking, output_config: { effort: 'high' } }));
      expect(body).not.toHaveProperty('reasoning_effort');
      expect(dropped).toEqual(['output_config.effort']);
    }
  });

  it('reads the effort of an in-conversation system message when the top level has none', () => {
    const { body, dropped } = translated(
      request({
        thinking: { type: 'adaptive' },
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Env.', output_config: { effort: 'low' } },
        ],
      }),
    );
    expect(body.reasoning_effort).toBe('low');
    expect(dropped).toEqual([]);
  });

  it('prefers the top-level effort and reports a different in-conversation one', () => {
    const { body, dropped } = translated(
      request({
        thinking: { type: 'adaptive' },
        output_config: { effort: 'high' },
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Env.', output_config: { effort: 'low' } },
        ],
      }),
    );
    expect(body.reasoning_effort).toBe('high');
    expect(dropped).toEqual(['messages[].output_config.effort']);
  });

  it('reports display and unknown thinking fields', () => {
    expect(translated(request({ thinking: { type: 'adaptive', display: 'omitted' } })).dropped).toEqual([
      'thinking.display',
    ]);
  });

  it.each([
    [{ thinking: { type: 'sometimes' } }, 'thinking.type'],
    [{ thinking: 'on' }, 'thinking'],
    [{ thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
    [{ thinking: { type: 'enabled', budget_tokens: 0 } }, 'thinking.budget_tokens'],
    [{ thinking: { type: 'adaptive' }, output_config: { effort: 'extreme' } }, 'output_config.effort'],
    [{ output_config: 'high' }, 'output_config'],
    [
      {
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Env.', output_config: { effort: 'huge' } },
        ],
      },
      'messages[1].output_config.effort',
    ],
  ])('refuses %j at %s', (extra, field) => {
    expect(refusal(request(extra)).field).toBe(field);
  });
});

describe('messagesToChat: structured output', () => {
  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };

  it('maps output_config.format to response_format', () => {
    const { body, dropped } = translated(
      request({ output_config: { format: { type: 'json_schema', schema } } }),
    );
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true },
    });
    expect(dropped).toEqual([]);
  });

  it('maps the older output_format the same way', () => {
    const { body } = translated(request({ output_format: { type: 'json_schema', schema } }));
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true },
    });
  });

  it('refuses other formats and two formats at once', () => {
    expect(refusal(request({ output_config: { format: { type: 'xml' } } })).field).toBe(
      'output_config.format.type',
    );
    expect(
      refusal(
        request({
          output_config: { format: { type: 'json_schema', schema } },
          output_format: { type: 'json_schema', schema },
        }),
      ).field,
    ).toBe('output_format');
  });

  it('reports unknown output_config fields', () => {
    expect(translated(request({ output_config: { verbosity: 'low' } })).dropped).toEqual([
      'output_config.verbosity',
    ]);
  });
});
