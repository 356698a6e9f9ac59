import { describe, expect, it } from 'vitest';
import { chatToMessages } from '../../src/gateway/anthropic/response.js';
import { isGatewaySignature } from '../../src/gateway/anthropic/signature.js';

type Body = Record<string, unknown>;

function completion(message: Body, choice: Body = {}, extra: Body = {}): Body {
  return {
    id: 'chatcmpl-42',
    object: 'chat.completion',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop', ...choice }],
    usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
    ...extra,
  };
}

function translated(chat: unknown, stopSequences?: readonly string[]): Body {
  const result = chatToMessages(chat, 'claude-alias', stopSequences);
  if (!result.ok) throw new Error(result.message);
  return result.body;
}

function failure(chat: unknown): string {
  const result = chatToMessages(chat, 'claude-alias', undefined);
  if (result.ok) throw new Error(`translated: ${JSON.stringify(result.body)}`);
  return result.message;
}

describe('chatToMessages', () => {
  it('translates a text answer', () => {
    expect(translated(completion({ content: 'Hello!' }))).toEqual({
      id: 'msg_chatcmpl-42',
      type: 'message',
      role: 'assistant',
      model: 'claude-alias',
      content: [{ type: 'text', text: 'Hello!' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 120,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 30,
      },
    });
  });

  it('counts cached prompt tokens apart from input tokens', () => {
    const body = translated(
      completion(
        { content: 'x' },
        {},
        {
          usage: { prompt_tokens: 1000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 800 } },
        },
      ),
    );
    expect(body.usage).toEqual({
      input_tokens: 200,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 800,
      output_tokens: 5,
    });
  });

  it('reports zero usage when the provider reports none', () => {
    const chat = completion({ content: 'x' });
    delete chat.usage;
    expect(translated(chat).usage).toEqual({
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
  });

  it('generates an id when the completion has none', () => {
    const chat = completion({ content: 'x' });
    delete chat.id;
    const first = translated(chat).id as string;
    expect(first).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(translated(chat).id).not.toBe(first);
  });

  it.each(['reasoning_content', 'reasoning'])(
    'makes a signed thinking block of %s, before the text',
    (field) => {
      const body = translated(completion({ [field]: 'The user wants a greeting.', content: 'Hello!' }));
      const [thinking, text] = body.content as Body[];
      expect(thinking).toMatchObject({ type: 'thinking', thinking: 'The user wants a greeting.' });
      expect(isGatewaySignature(thinking!.thinking as string, thinking!.signature as string)).toBe(true);
      expect(text).toEqual({ type: 'text', text: 'Hello!' });
    },
  );

  it('takes reasoning_content once when vLLM also sends reasoning', () => {
    const body = translated(completion({ reasoning_content: 'R', reasoning: 'R', content: 'T' }));
    expect((body.content as Body[]).map((b) => b.type)).toEqual(['thinking', 'text']);
  });

  it('makes tool_use blocks of tool calls, with the parsed arguments', () => {
    const body = translated(
      completion(
        {
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'Read', arguments: '{"file_path":"/a","limit":10}' },
            },
            { id: 'call_2', type: 'function', function: { name: 'Glob', arguments: '{"pattern":"*.ts"}' } },
          ],
        },
        { finish_reason: 'tool_calls' },
      ),
    );
    expect(body.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'Read', input: { file_path: '/a', limit: 10 } },
      { type: 'tool_use', id: 'call_2', name: 'Glob', input: { pattern: '*.ts' } },
    ]);
    expect(body.stop_reason).toBe('tool_use');
  });

  it('answers tool calls with tool_use whatever the finish reason said', () => {
    const body = translated(
      completion({
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'Read', arguments: '{}' } }],
      }),
    );
    expect(body.stop_reason).toBe('tool_use');
  });

  it('gives a tool call without an id a generated one', () => {
    const body = translated(
      completion(
        { tool_calls: [{ type: 'function', function: { name: 'Read', arguments: '{}' } }] },
        {
          finish_reason: 'tool_calls',
        },
      ),
    );
    expect(((body.content as Body[])[0]!.id as string).startsWith('toolu_')).toBe(true);
  });

  it('makes a tool_use of a legacy function_call', () => {
    const body = translated(
      completion(
        { function_call: { name: 'Read', arguments: '{"file_path":"/a"}' } },
        { finish_reason: 'function_call' },
      ),
    );
    expect(body.content).toMatchObject([{ type: 'tool_use', name: 'Read', input: { file_path: '/a' } }]);
    expect(body.stop_reason).toBe('tool_use');
  });

  it.each([
    ['{"file_path":', 'not JSON'],
    ['[1,2]', 'an array'],
    ['"text"', 'a string'],
  ])('fails on arguments %j (%s), naming the tool call, never sending {}', (args) => {
    const message = failure(
      completion(
        {
          tool_calls: [
            { id: 'call_ok', type: 'function', function: { name: 'Glob', arguments: '{}' } },
            { id: 'call_bad', type: 'function', function: { name: 'Read', arguments: args } },
          ],
        },
        { finish_reason: 'tool_calls' },
      ),
    );
    expect(message).toContain('tool call 1');
    expect(message).toContain('"Read"');
    expect(message).toContain('call_bad');
    expect(message).toContain('not a JSON object');
  });

  it('reads empty arguments as a call without arguments: input {}', () => {
    const body = translated(
      completion(
        { tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'Now', arguments: ' ' } }] },
        { finish_reason: 'tool_calls' },
      ),
    );
    expect(body.content).toEqual([{ type: 'tool_use', id: 'call_0', name: 'Now', input: {} }]);
  });

  it('fails on a tool call without a name', () => {
    expect(
      failure(completion({ tool_calls: [{ id: 'c', type: 'function', function: { arguments: '{}' } }] })),
    ).toContain('tool call 0');
  });

  it.each([
    ['stop', 'end_turn'],
    [null, 'end_turn'],
    ['length', 'max_tokens'],
    ['content_filter', 'refusal'],
  ])('maps finish_reason %s to %s', (finish, stop) => {
    const body = translated(completion({ content: 'x' }, { finish_reason: finish }));
    expect(body.stop_reason).toBe(stop);
    expect(body.stop_sequence).toBeNull();
  });

  it('reports the stop sequence vLLM names', () => {
    const body = translated(completion({ content: 'x' }, { stop_reason: '###' }), ['END', '###']);
    expect(body.stop_reason).toBe('stop_sequence');
    expect(body.stop_sequence).toBe('###');
  });

  it('ignores a stop_reason that is not one of the stop sequences (e.g. a stop token id)', () => {
    expect(translated(completion({ content: 'x' }, { stop_reason: 128001 }), ['END']).stop_reason).toBe(
      'end_turn',
    );
    expect(translated(completion({ content: 'x' }, { stop_reason: 'other' }), ['END']).stop_reason).toBe(
      'end_turn',
    );
    expect(translated(completion({ content: 'x' }, { stop_reason: 'END' })).stop_reason).toBe('end_turn');
  });

  it('carries a refusal as text with the refusal stop reason', () => {
    const body = translated(completion({ content: null, refusal: 'I cannot help with that.' }));
    expect(body.content).toEqual([{ type: 'text', text: 'I cannot help with that.' }]);
    expect(body.stop_reason).toBe('refusal');
  });

  it('joins content given as text parts', () => {
    const body = translated(
      completion({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    );
    expect(body.content).toEqual([{ type: 'text', text: 'ab' }]);
  });

  it('gives an empty content list for an empty answer', () => {
    expect(translated(completion({ content: '' })).content).toEqual([]);
  });

  it('fails on a finish reason without a Messages equivalent', () => {
    expect(failure(completion({ content: 'x' }, { finish_reason: 'abort' }))).toContain('"abort"');
  });

  it.each([
    ['null', null],
    ['a string', 'ok'],
    ['an array', []],
    ['an error body', { error: { message: 'boom' } }],
    ['no choices', { id: 'x', choices: [] }],
    ['a choice without a message', { choices: [{ index: 0, finish_reason: 'stop' }] }],
    ['content that is not text', { choices: [{ index: 0, message: { content: 5 }, finish_reason: 'stop' }] }],
    [
      'tool_calls that are not a list',
      { choices: [{ index: 0, message: { tool_calls: {} }, finish_reason: 'stop' }] },
    ],
  ])('fails on %s', (_label, chat) => {
    expect(failure(chat).length).toBeGreaterThan(0);
  });
});
