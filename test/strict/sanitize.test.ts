import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { Response as ResponseObject } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { standaloneJsonResponse, strictJsonResponse } from '../../src/gateway/strict/json-response.js';
import { sanitizeBody, sanitizeJson, sanitizeValue } from '../../src/gateway/strict/sanitize.js';

const completion: ChatCompletion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'meta-llama/Llama-3-8B',
  system_fingerprint: 'fp',
  service_tier: 'default',
  choices: [
    {
      index: 0,
      finish_reason: 'tool_calls',
      logprobs: {
        content: [
          {
            token: 'a',
            bytes: [97],
            logprob: -0.1,
            top_logprobs: [{ token: 'a', bytes: null, logprob: -0.1 }],
          },
        ],
        refusal: null,
      },
      message: {
        role: 'assistant',
        content: 'Hello',
        refusal: null,
        annotations: [
          { type: 'url_citation', url_citation: { start_index: 0, end_index: 1, title: 't', url: 'u' } },
        ],
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    },
  ],
  usage: {
    prompt_tokens: 3,
    completion_tokens: 2,
    total_tokens: 5,
    prompt_tokens_details: { cached_tokens: 1 },
    completion_tokens_details: { reasoning_tokens: 0 },
  },
};

const chunk: ChatCompletionChunk = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'upstream-model',
  choices: [
    {
      index: 0,
      delta: {
        role: 'assistant',
        content: 'Hel',
        tool_calls: [{ index: 0, id: 'c1', function: { arguments: '{' } }],
      },
      finish_reason: null,
    },
  ],
};

const embeddings: CreateEmbeddingResponse = {
  object: 'list',
  model: 'bge',
  data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2] }],
  usage: { prompt_tokens: 2, total_tokens: 2 },
};

const response: ResponseObject = {
  id: 'resp_1',
  object: 'response',
  created_at: 1_700_000_000,
  model: 'upstream',
  output_text: 'Hi',
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: null,
  metadata: null,
  parallel_tool_calls: true,
  temperature: 1,
  top_p: 1,
  tool_choice: 'auto',
  tools: [],
  access_programs: null,
  reasoning: { effort: 'low', summary: null },
  output: [
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thought' }] },
    {
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hi', annotations: [] }],
    },
    { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
  ],
  usage: {
    input_tokens: 1,
    output_tokens: 1,
    total_tokens: 2,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  },
};

function ok(result: ReturnType<typeof sanitizeValue>): Record<string, unknown> {
  if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
  return JSON.parse(result.json) as Record<string, unknown>;
}

/** `value` with `model` replaced: what sanitization must produce for a body with reference fields only. */
const withModel = <T extends object>(value: T, model: string): T => ({ ...value, model });

describe('reference fields are kept, model is rewritten', () => {
  it('chat completion', () => {
    expect(ok(sanitizeValue('chat_completion', completion, 'alias'))).toEqual(withModel(completion, 'alias'));
  });

  it('chat completion chunk', () => {
    expect(ok(sanitizeValue('chat_completion_chunk', chunk, 'alias'))).toEqual(withModel(chunk, 'alias'));
  });

  it('usage-only final chunk with empty choices', () => {
    const usageChunk = {
      ...chunk,
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    expect(ok(sanitizeValue('chat_completion_chunk', usageChunk, 'a'))).toEqual(withModel(usageChunk, 'a'));
  });

  it('embeddings, floats and base64', () => {
    expect(ok(sanitizeValue('embeddings', embeddings, 'e'))).toEqual(withModel(embeddings, 'e'));
    const b64 = { ...embeddings, data: [{ object: 'embedding', index: 0, embedding: 'AAAA' }] };
    expect(ok(sanitizeValue('embeddings', b64, 'e'))).toEqual(withModel(b64, 'e'));
  });

  it('responses object (the SDK-only `output_text` convenience is not a wire field)', () => {
    const { output_text: _dropped, ...wire } = response;
    expect(ok(sanitizeValue('responses', response, 'r'))).toEqual(withModel(wire, 'r'));
  });

  it('a missing model is written too', () => {
    const { model: _m, ...noModel } = chunk;
    expect(ok(sanitizeValue('chat_completion_chunk', noModel, 'alias')).model).toBe('alias');
  });

  it('null optional fields stay null, absent stay absent', () => {
    const body = { ...chunk, usage: null, system_fingerprint: null };
    const out = ok(sanitizeValue('chat_completion_chunk', body, 'a'));
    expect(out.usage).toBeNull();
    expect(out.system_fingerprint).toBeNull();
    expect('service_tier' in out).toBe(false);
  });
});

describe('provider-specific fields are dropped at every depth', () => {
  it('chat completion from an engine', () => {
    const body = {
      ...completion,
      prompt_logprobs: [null],
      kv_transfer_params: { a: 1 },
      choices: [
        {
          ...completion.choices[0]!,
          stop_reason: 128001,
          token_ids: [1, 2],
          message: {
            ...completion.choices[0]!.message,
            reasoning_content: 'secret thoughts',
            reasoning: 'x',
          },
        },
      ],
      usage: { ...completion.usage!, prompt_tokens_details: { cached_tokens: 1, vendor_tokens: 9 } },
    };
    expect(ok(sanitizeValue('chat_completion', body, 'alias'))).toEqual(withModel(completion, 'alias'));
  });

  it('chunk delta reasoning_content and tool-call extras', () => {
    const body = {
      ...chunk,
      prompt_token_ids: [1],
      choices: [
        {
          ...chunk.choices[0]!,
          stop_reason: null,
          delta: {
            ...chunk.choices[0]!.delta,
            reasoning_content: 'hmm',
            tool_calls: [{ index: 0, id: 'c1', function: { arguments: '{', extra: 1 }, vendor: true }],
          },
        },
      ],
    };
    expect(ok(sanitizeValue('chat_completion_chunk', body, 'alias'))).toEqual(withModel(chunk, 'alias'));
  });

  it('embeddings and responses extras', () => {
    expect(
      ok(
        sanitizeValue(
          'embeddings',
          { ...embeddings, id: 'embd-1', created: 1, data: [{ ...embeddings.data[0]!, norm: 1 }] },
          'e',
        ),
      ),
    ).toEqual(withModel(embeddings, 'e'));
    const { output_text: _dropped, ...wire } = response;
    const vendor = { ...wire, vendor_trace: 'x', usage: { ...wire.usage!, vendor_cost: 3 } };
    expect(ok(sanitizeValue('responses', vendor, 'r'))).toEqual(withModel(wire, 'r'));
  });

  it('engine finish reasons outside the reference list survive as strings', () => {
    const body = { ...completion, choices: [{ ...completion.choices[0]!, finish_reason: 'abort' }] };
    expect(
      (ok(sanitizeValue('chat_completion', body, 'a')).choices as { finish_reason: string }[])[0]!
        .finish_reason,
    ).toBe('abort');
  });
});

describe('failures', () => {
  it.each<[string, string]>([
    ['not JSON', '{"id":'],
    ['an array', '[]'],
    ['a string', '"x"'],
    ['missing choices', JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1 })],
    ['wrong object', JSON.stringify({ ...chunk, object: 'chat.completion' })],
    ['choice without index', JSON.stringify({ ...chunk, choices: [{ delta: {} }] })],
    [
      'content of the wrong type',
      JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { content: 5 } }] }),
    ],
  ])('%s is invalid', (_name, text) => {
    expect(sanitizeJson('chat_completion_chunk', text, 'a')).toEqual({ kind: 'invalid' });
  });

  it('bytes that are not UTF-8 are invalid', () => {
    const bad = Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xff]), Buffer.from('"}')]);
    expect(sanitizeBody('chat_completion', bad, 'a')).toEqual({ kind: 'invalid' });
  });

  it('an unknown Responses output item type is invalid', () => {
    expect(sanitizeValue('responses', { ...response, output: [{ type: 'hologram' }] }, 'r')).toEqual({
      kind: 'invalid',
    });
  });
});

describe('embedded errors', () => {
  const error = { message: 'upstream detail', type: 'server_error', code: 503 };

  it('a chunk with error alone, or with completion fields, is an embedded error', () => {
    expect(sanitizeValue('chat_completion_chunk', { error }, 'a')).toEqual({ kind: 'embedded_error', error });
    expect(sanitizeValue('chat_completion_chunk', { ...chunk, error }, 'a')).toEqual({
      kind: 'embedded_error',
      error,
    });
    expect(sanitizeValue('chat_completion', { ...completion, error }, 'a')).toEqual({
      kind: 'embedded_error',
      error,
    });
    expect(sanitizeValue('embeddings', { error }, 'a')).toEqual({ kind: 'embedded_error', error });
  });

  it('an engine error object (`object: "error"`, fields at the top level) is an embedded error, itself the value', () => {
    // vLLM's ErrorResponse, which the engine also writes into a 200 stream after partial output.
    const engineError = {
      object: 'error',
      message: 'in-stream failure',
      type: 'BadRequestError',
      param: null,
      code: 400,
    };
    for (const kind of ['chat_completion_chunk', 'chat_completion', 'embeddings', 'responses'] as const) {
      expect(sanitizeValue(kind, engineError, 'a')).toEqual({ kind: 'embedded_error', error: engineError });
    }
    // With an `error` field as well, that field is the error.
    expect(sanitizeValue('chat_completion_chunk', { ...engineError, error }, 'a')).toEqual({
      kind: 'embedded_error',
      error,
    });
    expect(
      strictJsonResponse('chat_completions', Buffer.from(JSON.stringify(engineError)), 'a', false),
    ).toMatchObject({
      kind: 'error',
      status: 400,
      body: { error: { message: 'Invalid request', type: 'invalid_request_error', param: null, code: null } },
    });
  });

  it('error: null is not an error', () => {
    expect(sanitizeValue('chat_completion_chunk', { ...chunk, error: null }, 'a').kind).toBe('ok');
  });

  it('a failed Responses object is an embedded error, as a bare error body is; a null error is not', () => {
    const failure = { code: 'server_error', message: 'boom' };
    const failed = { ...response, status: 'failed', error: failure };
    expect(sanitizeValue('responses', failed, 'r')).toEqual({ kind: 'embedded_error', error: failure });
    expect(sanitizeValue('responses', { error }, 'r')).toEqual({ kind: 'embedded_error', error });
    expect(sanitizeValue('responses', { ...response, error: null }, 'r').kind).toBe('ok');
  });
});

describe('non-streaming outcomes', () => {
  const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

  it('strict ok: the sanitized JSON', () => {
    const outcome = strictJsonResponse(
      'chat_completions',
      body({ ...completion, reasoning_content: 'x' }),
      'alias',
      false,
    );
    expect(outcome.kind).toBe('ok');
    if (outcome.kind === 'ok') expect(JSON.parse(outcome.body)).toEqual(withModel(completion, 'alias'));
  });

  it('strict embedded error: masked status and standard body for untrusted, passthrough for trusted', () => {
    const upstream = body({ error: { message: 'key revoked', code: 401 } });
    const outcome = strictJsonResponse('embeddings', upstream, 'e', false);
    expect(outcome).toEqual({
      kind: 'error',
      reason: 'embedded_error',
      status: 502,
      body: { error: { message: 'Bad gateway', type: 'api_error', param: null, code: null } },
      upstreamError: { message: 'key revoked', code: 401 },
    });
    expect(strictJsonResponse('embeddings', upstream, 'e', true)).toEqual({
      kind: 'passthrough',
      upstreamError: { message: 'key revoked', code: 401 },
    });
  });

  it('strict invalid body: 502 standard error, whatever the trust', () => {
    for (const trusted of [false, true]) {
      expect(strictJsonResponse('responses', Buffer.from('<html>'), 'r', trusted)).toEqual({
        kind: 'error',
        reason: 'invalid_body',
        status: 502,
        body: { error: { message: 'Bad gateway', type: 'api_error', param: null, code: null } },
      });
    }
  });

  it('standalone: sanitized, embedded error replaced under its own status', () => {
    const outcome = standaloneJsonResponse(body({ ...completion, reasoning_content: 'x' }), 'alias');
    if (outcome.kind !== 'ok') throw new Error('expected ok');
    expect(JSON.parse(outcome.body)).toEqual(withModel(completion, 'alias'));
    expect(
      standaloneJsonResponse(body({ error: { code: 'rate_limit_exceeded', message: 'm' } }), 'alias'),
    ).toMatchObject({
      kind: 'error',
      reason: 'embedded_error',
      status: 429,
      body: { error: { code: 'upstream_error', message: 'The upstream provider rejected the request.' } },
    });
  });
});
