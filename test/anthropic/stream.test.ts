import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messagesToChat } from '../../src/gateway/anthropic/request.js';
import { isGatewaySignature } from '../../src/gateway/anthropic/signature.js';
import {
  ChatToMessagesStream,
  type ChatToMessagesEndStep,
  type ChatToMessagesStep,
  type ChatToMessagesStreamOptions,
} from '../../src/gateway/anthropic/stream.js';
import { split } from '../helpers/chunks.js';
import { chunk, sse, toolFragment, usageChunk, type Chunk } from './chat-stream.js';
import { assembleMessage, parseMessagesEvents, type AssembledBlock } from './messages-events.js';

const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const options = (extra: Partial<ChatToMessagesStreamOptions> = {}): ChatToMessagesStreamOptions => ({
  model: 'claude-alias',
  maxPendingBytes: NO_LIMIT,
  ...extra,
});

interface Run {
  readonly output: string;
  readonly steps: ChatToMessagesStep[];
  readonly end: ChatToMessagesEndStep;
  readonly stream: ChatToMessagesStream;
}

function run(chunks: readonly Buffer[], streamOptions = options()): Run {
  const stream = new ChatToMessagesStream(streamOptions);
  const steps = chunks.map((c) => stream.push(c));
  const end = stream.end();
  return { output: steps.map((s) => s.output).join('') + end.output, steps, end, stream };
}

const runText = (text: string, streamOptions?: ChatToMessagesStreamOptions): Run =>
  run([Buffer.from(text, 'utf8')], streamOptions);

function bytewise(text: string): Buffer[] {
  const all = Buffer.from(text, 'utf8');
  return Array.from({ length: all.length }, (_, i) => all.subarray(i, i + 1));
}

/** A stream with every kind of block: reasoning, text, and two tool calls in fragments. */
const RICH: (Chunk | '[DONE]')[] = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ reasoning_content: 'The user wants ' }),
  chunk({ reasoning_content: 'two files 😀 read.' }),
  chunk({ content: 'Reading ' }),
  chunk({ content: 'both.' }),
  chunk({ tool_calls: [toolFragment(0, '', { id: 'call_a', name: 'Read' })] }),
  chunk({ tool_calls: [toolFragment(0, '{"file_')] }),
  chunk({ tool_calls: [toolFragment(0, 'path": "/a.txt"')] }),
  chunk({ tool_calls: [toolFragment(0, ', "limit": 5}')] }),
  chunk({ tool_calls: [toolFragment(1, '{"pattern"', { id: 'call_b', name: 'Glob' })] }),
  chunk({ tool_calls: [toolFragment(1, ': "src/**/*.ts", "note": "ü\\"q\\""}')] }),
  chunk({}, 'tool_calls'),
  usageChunk(500, 42, 300),
  '[DONE]',
];
const RICH_TEXT = sse(RICH);

const blocksOf = (output: string): AssembledBlock[] => assembleMessage(parseMessagesEvents(output)).content;

describe('ChatToMessagesStream: a complete stream', () => {
  it('translates a text stream into the Messages event sequence', () => {
    const { output, end, stream } = runText(
      sse([
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Hel' }),
        chunk({ content: 'lo' }),
        chunk({}, 'stop'),
        usageChunk(12, 2),
        '[DONE]',
      ]),
    );
    expect(stream.state).toBe('done');
    expect(end.state).toBe('done');
    expect(parseMessagesEvents(output)).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_chatcmpl-7',
            type: 'message',
            role: 'assistant',
            model: 'claude-alias',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0 },
          },
        },
      },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: {
            input_tokens: 12,
            output_tokens: 2,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0,
          },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });

  it('assembles thinking, text and tool calls into well-formed blocks', () => {
    const { output, stream } = runText(RICH_TEXT);
    expect(stream.state).toBe('done');
    const message = assembleMessage(parseMessagesEvents(output));
    expect(message.complete).toBe(true);
    expect(message.stopReason).toBe('tool_use');
    expect(message.usage).toEqual({
      input_tokens: 200,
      output_tokens: 42,
      cache_read_input_tokens: 300,
      cache_creation_input_tokens: 0,
    });
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use', 'tool_use']);
    const [thinking, text, read, glob] = message.content;
    expect(thinking).toMatchObject({ thinking: 'The user wants two files 😀 read.' });
    expect(text).toEqual({ type: 'text', text: 'Reading both.' });
    expect(read).toMatchObject({ id: 'call_a', name: 'Read', input: { file_path: '/a.txt', limit: 5 } });
    expect(glob).toMatchObject({
      id: 'call_b',
      name: 'Glob',
      input: { pattern: 'src/**/*.ts', note: 'ü"q"' },
    });
  });

  it('signs each thinking block so that the gateway accepts it back', () => {
    const [thinking] = blocksOf(runText(RICH_TEXT).output);
    if (thinking?.type !== 'thinking') throw new Error('no thinking block');
    expect(isGatewaySignature(thinking.thinking, thinking.signature)).toBe(true);
  });

  it('passes the arguments fragments exactly as sent', () => {
    const events = parseMessagesEvents(runText(RICH_TEXT).output);
    const fragments = events
      .filter((e) => (e.data.delta as Record<string, unknown> | undefined)?.type === 'input_json_delta')
      .map((e) => (e.data.delta as Record<string, unknown>).partial_json);
    expect(fragments).toEqual([
      '{"file_',
      'path": "/a.txt"',
      ', "limit": 5}',
      '{"pattern"',
      ': "src/**/*.ts", "note": "ü\\"q\\""}',
    ]);
  });

  it('streams arguments sent whole in the first fragment, never leaving the input {}', () => {
    const { output } = runText(
      sse([
        chunk(
          { tool_calls: [toolFragment(0, '{"command":"ls -la"}', { id: 'call_1', name: 'Bash' })] },
          'tool_calls',
        ),
        '[DONE]',
      ]),
    );
    expect(blocksOf(output)).toEqual([
      {
        type: 'tool_use',
        id: 'call_1',
        name: 'Bash',
        input: { command: 'ls -la' },
        partialJson: '{"command":"ls -la"}',
      },
    ]);
  });

  it('closes a block when another kind starts and numbers blocks from 0', () => {
    const events = parseMessagesEvents(
      runText(
        sse([
          chunk({ reasoning: 'a' }),
          chunk({ content: 'b' }),
          chunk({ reasoning: 'c' }),
          chunk({ content: 'd' }),
          chunk({}, 'stop'),
          '[DONE]',
        ]),
      ).output,
    );
    const starts = events.filter((e) => e.event === 'content_block_start').map((e) => e.data.index);
    const stops = events.filter((e) => e.event === 'content_block_stop').map((e) => e.data.index);
    expect(starts).toEqual([0, 1, 2, 3]);
    expect(stops).toEqual([0, 1, 2, 3]);
    const blocks = assembleMessage(events).content;
    expect(blocks.map((b) => b.type)).toEqual(['thinking', 'text', 'thinking', 'text']);
    for (const block of blocks) {
      if (block.type === 'thinking') expect(isGatewaySignature(block.thinking, block.signature)).toBe(true);
    }
  });

  it('takes reasoning_content once when vLLM also sends reasoning', () => {
    const [thinking] = blocksOf(
      runText(sse([chunk({ reasoning_content: 'R', reasoning: 'R' }), chunk({}, 'stop'), '[DONE]'])).output,
    );
    expect(thinking).toMatchObject({ type: 'thinking', thinking: 'R' });
  });

  it('keeps a surrogate pair split across reasoning deltas signable', () => {
    const [thinking] = blocksOf(
      runText(
        sse([
          chunk({ reasoning: 'smile \ud83d' }),
          chunk({ reasoning: '\ude00!' }),
          chunk({}, 'stop'),
          '[DONE]',
        ]),
      ).output,
    );
    if (thinking?.type !== 'thinking') throw new Error('no thinking block');
    expect(thinking.thinking).toBe('smile 😀!');
    expect(isGatewaySignature(thinking.thinking, thinking.signature)).toBe(true);
  });

  it('reports the stop sequence vLLM names, and ends max_tokens and refusals', () => {
    const stopped = (finish: string, extra: Chunk, stopSequences?: string[]) =>
      assembleMessage(
        parseMessagesEvents(
          runText(
            sse([chunk({ content: 'x' }), chunk({}, finish, extra), '[DONE]']),
            options({ stopSequences }),
          ).output,
        ),
      );
    expect(stopped('stop', { stop_reason: 'END' }, ['END'])).toMatchObject({
      stopReason: 'stop_sequence',
      stopSequence: 'END',
    });
    expect(stopped('stop', { stop_reason: 'END' }, ['OTHER'])).toMatchObject({
      stopReason: 'end_turn',
      stopSequence: null,
    });
    expect(stopped('length', {})).toMatchObject({ stopReason: 'max_tokens' });
    expect(stopped('content_filter', {})).toMatchObject({ stopReason: 'refusal' });
  });

  it('reports zero usage when the provider sends none', () => {
    const message = assembleMessage(
      parseMessagesEvents(runText(sse([chunk({ content: 'x' }, 'stop'), '[DONE]'])).output),
    );
    expect(message.usage).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  it('drops comments, keep-alives and empty data', () => {
    const plain = sse([chunk({ content: 'x' }, 'stop'), '[DONE]']);
    const noisy = `: keep-alive\n\n${sse([chunk({ content: 'x' }, 'stop')])}data: \n\n:ping\n\n${sse(['[DONE]'])}`;
    expect(runText(noisy).output).toBe(runText(plain).output);
  });

  it('translates an answer whose tool-call arguments were cut by length', () => {
    const message = assembleMessage(
      parseMessagesEvents(
        runText(
          sse([
            chunk({ tool_calls: [toolFragment(0, '{"file_pa', { id: 'c', name: 'Read' })] }),
            chunk({}, 'length'),
            '[DONE]',
          ]),
        ).output,
      ),
    );
    expect(message.stopReason).toBe('max_tokens');
    expect(message.complete).toBe(true);
    expect(message.content).toMatchObject([{ type: 'tool_use', partialJson: '{"file_pa' }]);
  });
});

describe('ChatToMessagesStream: chunking', () => {
  const reference = runText(RICH_TEXT).output;

  it('gives the same output byte by byte', () => {
    expect(run(bytewise(RICH_TEXT)).output).toBe(reference);
  });

  it('gives the same output with CRLF line ends', () => {
    expect(runText(RICH_TEXT.replaceAll('\n', '\r\n')).output).toBe(reference);
  });

  it('gives the same output in any chunking', () => {
    const all = Buffer.from(RICH_TEXT, 'utf8');
    fc.assert(
      fc.property(fc.array(fc.nat({ max: all.length }), { maxLength: 40 }), (cuts) => {
        expect(run(split(all, cuts)).output).toBe(reference);
      }),
    );
  });

  it('reassembles tool arguments fragmented anywhere', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 8 }),
          fc.oneof(fc.string(), fc.integer(), fc.boolean()),
        ),
        fc.array(fc.nat(), { maxLength: 10 }),
        (input, cuts) => {
          const args = JSON.stringify(input);
          const points = [...new Set(cuts.map((c) => c % (args.length + 1)))].sort((a, b) => a - b);
          const pieces: string[] = [];
          let last = 0;
          for (const p of points) {
            pieces.push(args.slice(last, p));
            last = p;
          }
          pieces.push(args.slice(last));
          const chunks: (Chunk | '[DONE]')[] = pieces.map((piece, i) =>
            chunk({
              tool_calls: [toolFragment(0, piece, i === 0 ? { id: 'call_x', name: 'Tool' } : undefined)],
            }),
          );
          const [block] = blocksOf(runText(sse([...chunks, chunk({}, 'tool_calls'), '[DONE]'])).output);
          expect(block).toMatchObject({ type: 'tool_use', input });
        },
      ),
    );
  });
});

describe('ChatToMessagesStream: the first token', () => {
  it('marks the step that writes the first content delta, and only it', () => {
    const stream = new ChatToMessagesStream(options());
    const role = stream.push(Buffer.from(sse([chunk({ role: 'assistant', content: '' })])));
    expect(role.firstDataFrame).toBe(false);
    expect(role.output).toContain('event: message_start');
    const first = stream.push(Buffer.from(sse([chunk({ content: 'Hi' })])));
    expect(first.firstDataFrame).toBe(true);
    const second = stream.push(Buffer.from(sse([chunk({ content: '!' })])));
    expect(second.firstDataFrame).toBe(false);
    expect(stream.push(Buffer.from(sse([chunk({}, 'stop'), '[DONE]']))).firstDataFrame).toBe(false);
  });

  it('counts the first arguments fragment of a tool call, not its start', () => {
    const stream = new ChatToMessagesStream(options());
    const start = stream.push(
      Buffer.from(sse([chunk({ tool_calls: [toolFragment(0, '', { id: 'c', name: 'Read' })] })])),
    );
    expect(start.firstDataFrame).toBe(false);
    expect(start.output).toContain('content_block_start');
    expect(
      stream.push(Buffer.from(sse([chunk({ tool_calls: [toolFragment(0, '{}')] })]))).firstDataFrame,
    ).toBe(true);
  });

  it('counts thinking as the first token', () => {
    const stream = new ChatToMessagesStream(options());
    expect(stream.push(Buffer.from(sse([chunk({ reasoning_content: 'Hmm' })]))).firstDataFrame).toBe(true);
  });
});

describe('ChatToMessagesStream: cut streams', () => {
  it('writes no message_stop when [DONE] never comes, even after the finish reason and usage', () => {
    const { output, end, stream } = runText(
      sse([chunk({ content: 'Hello' }), chunk({}, 'stop'), usageChunk(5, 1)]),
    );
    expect(end).toEqual({ output: '', state: 'clean', firstDataFrame: false });
    expect(stream.state).toBe('open');
    expect(output).not.toContain('message_stop');
    expect(output).not.toContain('message_delta');
    expect(assembleMessage(parseMessagesEvents(output)).complete).toBe(false);
  });

  it('reports an upstream that ends inside an event as incomplete', () => {
    const text = sse([chunk({ content: 'Hello' })]) + 'data: {"id":"chatcmpl-7","choi';
    const { output, end } = runText(text);
    expect(end).toEqual({ output: '', state: 'incomplete', firstDataFrame: false, pendingBytes: 30 });
    expect(output).not.toContain('message_stop');
  });

  it('reports a stream that was cut before [DONE] as incomplete when [DONE] lacks its blank line', () => {
    const { end, output } = runText(`${sse([chunk({ content: 'x' }, 'stop')])}data: [DONE]\n`);
    expect(end.state).toBe('incomplete');
    expect(output).not.toContain('message_stop');
  });
});

describe('ChatToMessagesStream: errors', () => {
  const errorOf = (output: string) => {
    const events = parseMessagesEvents(output);
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    return last.data;
  };

  it('answers an error chunk before any content with an error event, as a leading error', () => {
    const stream = new ChatToMessagesStream(options());
    const step = stream.push(
      Buffer.from(
        sse([
          { error: { message: 'Too many requests', type: 'rate_limit_error', code: 429 } },
          chunk({ content: 'late' }),
        ]),
      ),
    );
    expect(step.state).toBe('error_event');
    expect(step.error).toEqual({ upstreamStatus: 429, message: 'Too many requests' });
    expect(stream.leadingError).toEqual({ upstreamStatus: 429, message: 'Too many requests' });
    expect(parseMessagesEvents(step.output)).toEqual([
      {
        event: 'error',
        data: { type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests' } },
      },
    ]);
    expect(stream.push(Buffer.from(sse([chunk({ content: 'more' }), '[DONE]'])))).toMatchObject({
      output: '',
      state: 'error_event',
    });
    expect(stream.end()).toMatchObject({ output: '', state: 'error_event', error: { upstreamStatus: 429 } });
  });

  it("reads vLLM's error object and a missing code as 500", () => {
    const { output, stream } = runText(
      sse([
        chunk({ role: 'assistant' }),
        { object: 'error', message: 'engine died', type: 'InternalServerError' },
      ]),
    );
    expect(errorOf(output)).toEqual({ type: 'error', error: { type: 'api_error', message: 'engine died' } });
    expect(stream.leadingError).toEqual({ upstreamStatus: 500, message: 'engine died' });
  });

  it('keeps a mid-stream error out of leadingError and stops there', () => {
    const { output, steps, stream } = run([
      Buffer.from(sse([chunk({ content: 'partial' })])),
      Buffer.from(
        sse([{ error: { message: 'overloaded', code: '529' } }, chunk({ content: 'after' }), '[DONE]']),
      ),
    ]);
    expect(steps[1]!.state).toBe('error_event');
    expect(stream.leadingError).toBeUndefined();
    expect(errorOf(output)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'overloaded' },
    });
    expect(output).not.toContain('after');
    expect(output).not.toContain('message_stop');
  });

  it.each([
    ['data that is not JSON', 'data: {"choices": [\n\n'],
    ['JSON that is not an object', 'data: [1,2]\n\n'],
    ['choices that are not a list', 'data: {"choices": {}}\n\n'],
    ['a delta that is not an object', `data: ${JSON.stringify({ choices: [{ index: 0, delta: 'x' }] })}\n\n`],
  ])('answers %s with a 502 error event', (_label, text) => {
    const { output, stream } = runText(text);
    expect(stream.state).toBe('error_event');
    expect(errorOf(output)).toEqual({
      type: 'error',
      error: { type: 'api_error', message: 'the provider sent an invalid stream event' },
    });
    expect(stream.leadingError?.upstreamStatus).toBe(502);
  });

  it('fails tool arguments that are not a JSON object when the call closes', () => {
    const { output, stream } = runText(
      sse([
        chunk({ tool_calls: [toolFragment(0, '{"a":', { id: 'call_1', name: 'Read' })] }),
        chunk({}, 'tool_calls'),
        '[DONE]',
      ]),
    );
    expect(stream.state).toBe('error_event');
    const error = errorOf(output).error as Record<string, unknown>;
    expect(error.message).toContain('"Read"');
    expect(error.message).toContain('call_1');
    expect(output).not.toContain('message_stop');
  });

  it('fails tool calls whose fragments interleave', () => {
    const { output, stream } = runText(
      sse([
        chunk({ tool_calls: [toolFragment(0, '{"a":', { id: 'c0', name: 'A' })] }),
        chunk({ tool_calls: [toolFragment(1, '{}', { id: 'c1', name: 'B' })] }),
        chunk({ tool_calls: [toolFragment(0, '1}')] }),
      ]),
    );
    expect(stream.state).toBe('error_event');
    expect(output).toContain('event: error');
  });

  it('fails a tool call that starts without a name', () => {
    const { stream } = runText(
      sse([chunk({ tool_calls: [{ index: 0, id: 'c', function: { arguments: '{}' } }] })]),
    );
    expect(stream.state).toBe('error_event');
  });

  it('fails a finish reason without a Messages equivalent', () => {
    const { output, stream } = runText(sse([chunk({ content: 'x' }), chunk({}, 'abort'), '[DONE]']));
    expect(stream.state).toBe('error_event');
    expect((errorOf(output).error as Record<string, unknown>).message).toContain('"abort"');
  });

  it('fails a second choice', () => {
    const { stream } = runText(
      `data: ${JSON.stringify({ choices: [{ index: 1, delta: { content: 'x' } }] })}\n\n`,
    );
    expect(stream.state).toBe('error_event');
  });
});

describe('ChatToMessagesStream: overflow', () => {
  it('reports an unfinished event larger than maxPendingBytes', () => {
    const stream = new ChatToMessagesStream(options({ maxPendingBytes: 64 }));
    const first = stream.push(Buffer.from(sse([chunk({ content: 'fits' })])));
    expect(first.state).toBe('open');
    const step = stream.push(Buffer.from(`data: ${'x'.repeat(100)}`));
    expect(step).toMatchObject({ state: 'overflow', overflow: { pendingBytes: 106, limit: 64 } });
    expect(stream.state).toBe('overflow');
    expect(stream.push(Buffer.from('\n\n'))).toMatchObject({ output: '', state: 'overflow' });
    expect(stream.end()).toMatchObject({
      output: '',
      state: 'overflow',
      overflow: { pendingBytes: 106, limit: 64 },
    });
  });
});

describe('ChatToMessagesStream: the next turn', () => {
  it('gives back an answer the request translation accepts on the next turn', () => {
    const blocks = blocksOf(runText(RICH_TEXT).output);
    const assistantContent = blocks.map((block) => {
      if (block.type === 'tool_use')
        return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
      return block;
    });
    const result = messagesToChat({
      model: 'claude-alias',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Read /a.txt and find the sources.' },
        { role: 'assistant', content: assistantContent },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_a', content: 'A' },
            { type: 'tool_result', tool_use_id: 'call_b', content: 'B' },
          ],
        },
      ],
    });
    if (!result.ok) throw new Error(`${result.field}: ${result.message}`);
    expect(result.dropped).toEqual(['thinking']);
    const messages = result.body.messages as Record<string, unknown>[];
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: 'Reading both.',
      tool_calls: [
        {
          id: 'call_a',
          type: 'function',
          function: { name: 'Read', arguments: '{"file_path":"/a.txt","limit":5}' },
        },
        {
          id: 'call_b',
          type: 'function',
          function: { name: 'Glob', arguments: JSON.stringify({ pattern: 'src/**/*.ts', note: 'ü"q"' }) },
        },
      ],
    });
  });
});
