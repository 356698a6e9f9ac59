import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import type { EmbeddingCreateParams } from 'openai/resources/embeddings';
import type { ResponseCreateParams } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import {
  formatPath,
  isJsonContentType,
  validateRequest,
  type StrictEndpoint,
} from '../../src/gateway/strict/validate-request.js';

const JSON_CT = 'application/json';
const bytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

function accepts(endpoint: StrictEndpoint, body: unknown): void {
  const result = validateRequest(endpoint, JSON_CT, bytes(body));
  if (!result.ok) throw new Error(`rejected: ${result.error.error.message}`);
  expect(result.body).toEqual(body);
}

function rejects(endpoint: StrictEndpoint, body: unknown, path: string) {
  const result = validateRequest(endpoint, JSON_CT, bytes(body));
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  expect(result.status).toBe(400);
  expect(result.code).toBe('schema_mismatch');
  expect(result.error.error.type).toBe('invalid_request_error');
  expect(result.error.error.code).toBeNull();
  expect(result.error.error.param).toBe(path);
  expect(result.error.error.message).toContain(`\`${path}\``);
  expect(result.error.error.message.startsWith('Invalid request')).toBe(true);
  return result;
}

// --- SDK-shaped requests: these type-check against the official SDK, so they are reference bodies.

const minimalChat: ChatCompletionCreateParams = {
  model: 'llama',
  messages: [{ role: 'user', content: 'Hello' }],
};

const fullChat: ChatCompletionCreateParams = {
  model: 'llama',
  messages: [
    { role: 'developer', content: 'Be brief.', name: 'dev' },
    { role: 'system', content: [{ type: 'text', text: 'System text.' }] },
    {
      role: 'user',
      name: 'alice',
      content: [
        { type: 'text', text: 'Describe this.', prompt_cache_breakpoint: { mode: 'explicit', ttl: '30m' } },
        { type: 'image_url', image_url: { url: 'https://example.test/cat.png', detail: 'high' } },
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        { type: 'file', file: { file_id: 'file-1', filename: 'a.pdf' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Calling a tool.' },
        { type: 'refusal', refusal: 'Not that.' },
      ],
      refusal: null,
      audio: { id: 'audio-1' },
      tool_calls: [
        { id: 'call-1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } },
        { id: 'call-2', type: 'custom', custom: { name: 'grep', input: 'foo' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call-1', content: 'result' },
    { role: 'function', name: 'lookup', content: null },
  ],
  audio: { format: 'mp3', voice: 'alloy' },
  frequency_penalty: 0.5,
  function_call: { name: 'lookup' },
  functions: [{ name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }],
  logit_bias: { '50256': -100 },
  logprobs: true,
  max_completion_tokens: 512,
  max_tokens: 256,
  metadata: { team: 'a' },
  modalities: ['text', 'audio'],
  moderation: { model: 'omni-moderation-latest', policy: { input: { mode: 'block' }, output: null } },
  n: 2,
  parallel_tool_calls: true,
  prediction: { type: 'content', content: 'predicted' },
  presence_penalty: -0.5,
  prompt_cache_key: 'k',
  prompt_cache_options: { mode: 'explicit', ttl: '30m' },
  prompt_cache_retention: '24h',
  reasoning_effort: 'high',
  response_format: {
    type: 'json_schema',
    json_schema: { name: 'answer', schema: { type: 'object' }, strict: true, description: 'd' },
  },
  safety_identifier: 'user-hash',
  seed: 7,
  service_tier: 'flex',
  stop: ['\n\n', 'END'],
  store: false,
  stream: true,
  stream_options: { include_usage: true, include_obfuscation: false },
  temperature: 0.2,
  tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [{ type: 'function' }] } },
  tools: [
    { type: 'function', function: { name: 'lookup', parameters: { type: 'object' }, strict: true } },
    {
      type: 'custom',
      custom: { name: 'grep', format: { type: 'grammar', grammar: { definition: 'x', syntax: 'regex' } } },
    },
  ],
  top_logprobs: 5,
  top_p: 0.9,
  user: 'u-1',
  verbosity: 'low',
  web_search_options: {
    search_context_size: 'medium',
    user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
  },
};

const embeddings: EmbeddingCreateParams[] = [
  { model: 'embed', input: 'hello' },
  { model: 'embed', input: ['a', 'b'], dimensions: 256, encoding_format: 'base64', user: 'u' },
  { model: 'embed', input: [1, 2, 3] },
  { model: 'embed', input: [[1, 2], [3]] },
];

const responses: ResponseCreateParams[] = [
  { model: 'llama', input: 'Hi' },
  {
    model: 'llama',
    instructions: 'Be brief.',
    input: [
      { role: 'user', content: 'Hello' },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is this?' },
          { type: 'input_image', detail: 'auto', image_url: 'https://example.test/a.png' },
          { type: 'input_file', file_id: 'file-1' },
        ],
      },
      { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'result' },
      { type: 'item_reference', id: 'msg_1' },
    ],
    reasoning: { effort: 'low', summary: 'auto' },
    max_output_tokens: 1024,
    text: { format: { type: 'json_schema', name: 'a', schema: { type: 'object' } }, verbosity: 'high' },
    tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: true }],
    tool_choice: { type: 'function', name: 'lookup' },
    include: ['reasoning.encrypted_content'],
    metadata: { a: 'b' },
    parallel_tool_calls: false,
    previous_response_id: 'resp_1',
    prompt_cache_key: 'k',
    service_tier: 'auto',
    store: false,
    stream: false,
    temperature: 1,
    top_p: 1,
    truncation: 'auto',
    user: 'u',
  },
];

describe('valid SDK-shaped requests pass', () => {
  it('chat completions: minimal and with every parameter', () => {
    accepts('chat_completions', minimalChat);
    accepts('chat_completions', fullChat);
  });

  it.each(embeddings.map((e, i) => [i, e] as const))('embeddings #%i', (_i, body) => {
    accepts('embeddings', body);
  });

  it.each(responses.map((r, i) => [i, r] as const))('responses #%i', (_i, body) => {
    accepts('responses', body);
  });

  it('null stands for an unset optional field', () => {
    accepts('chat_completions', { ...minimalChat, temperature: null, user: null, tools: null, stop: null });
    accepts('responses', { input: 'Hi', reasoning: { effort: null }, max_output_tokens: null });
  });

  it('every effort of spec 2.6 is a valid reasoning_effort and reasoning.effort', () => {
    for (const effort of ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const) {
      accepts('chat_completions', { ...minimalChat, reasoning_effort: effort });
      accepts('responses', { input: 'x', reasoning: { effort } });
    }
  });

  it('catalog parameters reach the later check with any value', () => {
    accepts('chat_completions', {
      ...minimalChat,
      guided_json: { type: 'object' },
      min_tokens: 3,
      top_k: 40,
      repetition_penalty: 1.1,
      n: 1,
    });
  });

  it('provider-native reasoning controls reach the later refusal', () => {
    accepts('chat_completions', { ...minimalChat, chat_template_kwargs: { enable_thinking: false } });
    accepts('chat_completions', { ...minimalChat, thinking_token_budget: 100 });
  });
});

describe('schema mismatches name the field path', () => {
  it.each<[string, StrictEndpoint, unknown, string]>([
    ['missing model', 'chat_completions', { messages: [] }, 'model'],
    ['missing messages', 'chat_completions', { model: 'm' }, 'messages'],
    ['unknown top-level field', 'chat_completions', { ...minimalChat, temprature: 1 }, 'temprature'],
    [
      'unknown role',
      'chat_completions',
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role',
    ],
    [
      'wrong content type',
      'chat_completions',
      { model: 'm', messages: [{ role: 'user', content: 5 }] },
      'messages[0].content',
    ],
    [
      'bad content part deep in a union',
      'chat_completions',
      {
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'image_url', image_url: { url: 3 } },
            ],
          },
        ],
      },
      'messages[0].content[1].image_url.url',
    ],
    [
      'image part in a system message',
      'chat_completions',
      {
        model: 'm',
        messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'u' } }] }],
      },
      'messages[0].content[0].type',
    ],
    [
      'unknown field in a message',
      'chat_completions',
      { model: 'm', messages: [{ role: 'assistant', content: 'x', reasoning_content: 'y' }] },
      'messages[0].reasoning_content',
    ],
    [
      'tool without call id',
      'chat_completions',
      { model: 'm', messages: [{ role: 'tool', content: 'x' }] },
      'messages[0].tool_call_id',
    ],
    ['non-integer n', 'chat_completions', { ...minimalChat, n: 1.5 }, 'n'],
    ['stream as a string', 'chat_completions', { ...minimalChat, stream: 'yes' }, 'stream'],
    [
      'unknown effort',
      'chat_completions',
      { ...minimalChat, reasoning_effort: 'extreme' },
      'reasoning_effort',
    ],
    ['bad tool_choice', 'chat_completions', { ...minimalChat, tool_choice: 'always' }, 'tool_choice'],
    [
      'bad response_format type',
      'chat_completions',
      { ...minimalChat, response_format: { type: 'yaml' } },
      'response_format.type',
    ],
    ['metadata value not a string', 'chat_completions', { ...minimalChat, metadata: { a: 1 } }, 'metadata.a'],
    ['embeddings input object', 'embeddings', { model: 'e', input: { a: 1 } }, 'input'],
    [
      'embeddings engine extension',
      'embeddings',
      { model: 'e', input: 'x', truncate_prompt_tokens: 5 },
      'truncate_prompt_tokens',
    ],
    [
      'responses unknown effort',
      'responses',
      { input: 'x', reasoning: { effort: 'huge' } },
      'reasoning.effort',
    ],
    [
      'responses max_output_tokens string',
      'responses',
      { input: 'x', max_output_tokens: '5' },
      'max_output_tokens',
    ],
    ['responses streaming in strict mode', 'responses', { input: 'x', stream: true }, 'stream'],
    ['responses unknown item type', 'responses', { input: [{ type: 'telepathy' }] }, 'input[0].type'],
    [
      'responses unknown tool type',
      'responses',
      { input: 'x', tools: [{ type: 'teleport' }] },
      'tools[0].type',
    ],
    ['responses chat-style field', 'responses', { input: 'x', messages: [] }, 'messages'],
  ])('%s', (_name, endpoint, body, path) => {
    rejects(endpoint, body, path);
  });

  it('a body that is JSON but not an object is a schema mismatch without param', () => {
    for (const body of ['[]', '"text"', '3', 'null']) {
      const result = validateRequest('chat_completions', JSON_CT, Buffer.from(body));
      expect(result).toMatchObject({ ok: false, status: 400, code: 'schema_mismatch' });
      if (!result.ok) expect(result.error.error.param).toBeNull();
    }
  });
});

describe('rejection code labels (spec 6)', () => {
  it.each<[StrictEndpoint, string | undefined, Buffer, string]>([
    ['chat_completions', JSON_CT, Buffer.from('{"model":'), 'invalid_json'],
    ['chat_completions', JSON_CT, Buffer.from(''), 'invalid_json'],
    ['chat_completions', JSON_CT, Buffer.from([0x7b, 0xff, 0x7d]), 'invalid_json'],
    // Chat and embeddings read any body as JSON: the content type does not decide.
    ['chat_completions', 'text/plain', Buffer.from('{"model":'), 'invalid_json'],
    ['embeddings', undefined, Buffer.from('nope'), 'invalid_json'],
    ['responses', JSON_CT, Buffer.from('{'), 'invalid_json'],
    ['responses', 'text/plain', bytes({ input: 'x' }), 'invalid_content_type'],
    ['responses', undefined, bytes({ input: 'x' }), 'invalid_content_type'],
    ['responses', 'application/jsonx', bytes({ input: 'x' }), 'invalid_content_type'],
    ['responses', JSON_CT, Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 'invalid_body'],
    ['responses', JSON_CT, bytes({ input: 3 }), 'schema_mismatch'],
  ])('%s, content type %s -> %s', (endpoint, contentType, body, code) => {
    const result = validateRequest(endpoint, contentType, body);
    expect(result).toMatchObject({ ok: false, status: 400, code });
    if (!result.ok) {
      expect(result.error.error.type).toBe('invalid_request_error');
      expect(result.error.error.code).toBeNull();
    }
  });

  it('chat ignores the content type of a valid body; responses accepts JSON media types', () => {
    expect(validateRequest('chat_completions', 'text/plain', bytes(minimalChat)).ok).toBe(true);
    for (const ct of ['application/json', 'Application/JSON; charset=utf-8', 'application/vnd.api+json']) {
      expect(validateRequest('responses', ct, bytes({ input: 'x' })).ok).toBe(true);
    }
  });

  it('a UTF-8 byte order mark is accepted', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes(minimalChat)]);
    expect(validateRequest('chat_completions', JSON_CT, body).ok).toBe(true);
  });
});

describe('helpers', () => {
  it('isJsonContentType', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType(' application/json ; charset=UTF-8')).toBe(true);
    expect(isJsonContentType('application/problem+json')).toBe(true);
    expect(isJsonContentType('text/json')).toBe(false);
    expect(isJsonContentType('')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('formatPath', () => {
    expect(formatPath(['messages', 0, 'content', 2, 'image_url'])).toBe('messages[0].content[2].image_url');
    expect(formatPath([])).toBe('(body)');
  });
});
