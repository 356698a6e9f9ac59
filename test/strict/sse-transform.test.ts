import fc from 'fast-check';
import { split } from '../helpers/chunks.js';
import { describe, expect, it } from 'vitest';
import {
  SseSanitizeTransform,
  type SseEndStep,
  type SseStep,
  type SseTransformOptions,
} from '../../src/gateway/strict/sse-transform.js';

const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const strict = (extra: Partial<SseTransformOptions> = {}): SseTransformOptions => ({
  alias: 'alias',
  mode: 'strict',
  trusted: false,
  maxPendingBytes: NO_LIMIT,
  ...extra,
});

interface Run {
  output: string;
  steps: SseStep[];
  end: SseEndStep;
  firstFrameSteps: number[];
}

function run(chunks: readonly Uint8Array[], options: SseTransformOptions = strict()): Run {
  const transform = new SseSanitizeTransform(options);
  const steps = chunks.map((c) => transform.push(c));
  const end = transform.end();
  const output = steps.map((s) => s.output).join('') + end.output;
  const firstFrameSteps = steps.flatMap((s, i) => (s.firstDataFrame ? [i] : []));
  return { output, steps, end, firstFrameSteps };
}

const text = (s: string): Buffer => Buffer.from(s, 'utf8');
const runText = (s: string, options?: SseTransformOptions): Run => run([text(s)], options);

/** The data of each event of the output, parsed; `[DONE]` stays a string. */
function outputEvents(output: string): unknown[] {
  expect(output === '' || output.endsWith('\n\n')).toBe(true);
  return output
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      expect(block.indexOf('\n')).toBe(-1);
      const data = block.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

const chunkObject = (content: string, extra: Record<string, unknown> = {}) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'upstream',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
  ...extra,
});
const sanitized = (content: string) => ({ ...chunkObject(content), model: 'alias' });
const dataEvent = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;

describe('re-emission', () => {
  it('sanitizes each chunk, drops comments and provider framing, keeps [DONE]', () => {
    const input =
      ': keep-alive\n\n' +
      'event: message\nid: 7\nretry: 100\n' +
      `data: ${JSON.stringify(chunkObject('Hel', { reasoning_content: 'x', kv: 1 }))}\n\n` +
      `: ping\n` +
      `data: ${JSON.stringify(chunkObject('lo'))}\n\n` +
      'data: [DONE]\n\n';
    const result = runText(input);
    expect(outputEvents(result.output)).toEqual([sanitized('Hel'), sanitized('lo'), '[DONE]']);
    expect(result.output.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(result.output).not.toContain('keep-alive');
    expect(result.output).not.toContain('reasoning_content');
    expect(result.steps.at(-1)?.state).toBe('done');
    expect(result.end.state).toBe('done');
  });

  it('joins multi-line data into one chunk', () => {
    const pretty = JSON.stringify(chunkObject('multi'), null, 2);
    const input = `${pretty
      .split('\n')
      .map((l) => `data: ${l}`)
      .join('\n')}\n\n`;
    expect(outputEvents(runText(input).output)).toEqual([sanitized('multi')]);
  });

  it('handles CRLF and CR line ends', () => {
    const body = JSON.stringify(chunkObject('x'));
    expect(outputEvents(runText(`data: ${body}\r\n\r\ndata: [DONE]\r\n\r\n`).output)).toEqual([
      sanitized('x'),
      '[DONE]',
    ]);
    expect(outputEvents(runText(`data: ${body}\r\rdata: [DONE]\r\r`).output)).toEqual([
      sanitized('x'),
      '[DONE]',
    ]);
  });

  it('ignores everything after [DONE]', () => {
    const result = runText(`data: [DONE]\n\n${dataEvent(chunkObject('late'))}data: [DONE]\n\n`);
    expect(result.output).toBe('data: [DONE]\n\n');
    expect(result.end).toMatchObject({ state: 'done', output: '' });
  });

  it('accepts [DONE] with surrounding whitespace and drops blank data', () => {
    expect(runText('data:  \n\ndata:  [DONE] \n\n').output).toBe('data: [DONE]\n\n');
  });
});

describe('first data frame (first-token sample point)', () => {
  it('is the first sanitized chunk, once', () => {
    const chunks = [
      text(': keep-alive\n\n'),
      text(dataEvent(chunkObject('a'))),
      text(dataEvent(chunkObject('b'))),
      text('data: [DONE]\n\n'),
    ];
    const transform = new SseSanitizeTransform(strict());
    const flags = chunks.map((c) => transform.push(c).firstDataFrame);
    expect(flags).toEqual([false, true, false, false]);
    expect(transform.sawDataFrame).toBe(true);
  });

  it('comments and a lone [DONE] produce none', () => {
    const result = runText(': a\n\n: b\n\ndata: [DONE]\n\n');
    expect(result.firstFrameSteps).toEqual([]);
  });

  it('an error event is not a first token', () => {
    expect(runText(dataEvent({ error: { code: 503 } })).firstFrameSteps).toEqual([]);
  });
});

describe('embedded errors', () => {
  const providerError = { message: 'account 42 over quota', type: 'billing', param: null, code: 402 };

  it('untrusted: masked stand-alone event, stream over without [DONE]', () => {
    const input =
      dataEvent(chunkObject('a')) +
      dataEvent({ ...chunkObject('b'), error: providerError }) +
      'data: [DONE]\n\n';
    const result = runText(input);
    expect(outputEvents(result.output)).toEqual([
      sanitized('a'),
      { error: { message: 'Bad gateway', type: 'api_error', param: null, code: 502 } },
    ]);
    expect(result.output).not.toContain('quota');
    expect(result.steps[0]).toMatchObject({
      state: 'error_event',
      error: { reason: 'embedded_error', status: 502, upstreamError: providerError },
    });
    expect(result.end).toMatchObject({ state: 'error_event', output: '' });
  });

  it.each<[unknown, number]>([
    ['rate_limit_exceeded', 429],
    ['429', 429],
    [408, 504],
    ['whatever', 500],
  ])('untrusted code %j -> %i', (code, status) => {
    const [event] = outputEvents(runText(dataEvent({ error: { message: 'm', code } })).output);
    expect(event).toMatchObject({ error: { code: status } });
  });

  it('trusted: the provider error verbatim, nothing else in the data', () => {
    const result = runText(
      dataEvent({ ...chunkObject('x'), error: providerError }),
      strict({ trusted: true }),
    );
    expect(outputEvents(result.output)).toEqual([{ error: providerError }]);
    expect(result.steps[0]?.error).toMatchObject({ reason: 'embedded_error', status: 402 });
  });

  describe('an engine error object in the stream (`object: "error"`, no `error` field)', () => {
    const engineError = {
      object: 'error',
      message: 'Simulated in-stream error after partial output',
      type: 'BadRequestError',
      param: null,
      code: 400,
    };
    const input = dataEvent(chunkObject('a')) + dataEvent(engineError);

    it('untrusted: its code read and masked, generic message, no [DONE]', () => {
      const result = runText(input);
      expect(outputEvents(result.output)).toEqual([
        sanitized('a'),
        { error: { message: 'Invalid request', type: 'invalid_request_error', param: null, code: 400 } },
      ]);
      expect(result.output).not.toContain('Simulated');
      expect(result.steps[0]).toMatchObject({
        state: 'error_event',
        error: { reason: 'embedded_error', status: 400, upstreamError: engineError },
      });
    });

    it('untrusted: an account-class code is masked', () => {
      const [event] = outputEvents(runText(dataEvent({ ...engineError, code: 403 })).output);
      expect(event).toEqual({ error: { message: 'Bad gateway', type: 'api_error', param: null, code: 502 } });
    });

    it('trusted: forwarded verbatim as the error value', () => {
      const result = runText(input, strict({ trusted: true }));
      expect(outputEvents(result.output)).toEqual([sanitized('a'), { error: engineError }]);
    });

    it('standalone: the 4.6 replacement body', () => {
      const [, event] = outputEvents(runText(input, strict({ mode: 'standalone' })).output);
      expect(event).toMatchObject({ error: { code: 'upstream_error', type: 'invalid_request_error' } });
    });
  });

  it('standalone: the 4.6 replacement body, no masking', () => {
    const result = runText(dataEvent({ error: providerError }), strict({ mode: 'standalone' }));
    expect(outputEvents(result.output)).toEqual([
      {
        error: {
          message: 'The upstream provider rejected the request.',
          type: 'invalid_request_error',
          param: null,
          code: 'upstream_error',
        },
      },
    ]);
    expect(result.steps[0]?.error?.status).toBe(402);
  });
});

describe('invalid chunks', () => {
  it.each(['not json', '[1,2]', '42', JSON.stringify({ id: 'x', object: 'chat.completion.chunk' })])(
    '%s -> a 502 error event, raw data never forwarded',
    (data) => {
      const result = runText(`data: ${data}\n\ndata: [DONE]\n\n`);
      expect(outputEvents(result.output)).toEqual([
        { error: { message: 'Bad gateway', type: 'api_error', param: null, code: 502 } },
      ]);
      expect(result.steps[0]).toMatchObject({
        state: 'error_event',
        error: { reason: 'invalid_chunk', status: 502 },
      });
    },
  );
});

describe('ends and overflow', () => {
  it('clean end without [DONE] is reported, and no [DONE] is invented', () => {
    const result = runText(dataEvent(chunkObject('a')));
    expect(result.end).toEqual({ output: '', state: 'clean', firstDataFrame: false, sawDone: false });
    expect(result.output).not.toContain('[DONE]');
  });

  it.each([
    ['an unterminated line', `data: ${JSON.stringify(chunkObject('a'))}`],
    ['a field block without its blank line', `data: ${JSON.stringify(chunkObject('a'))}\n`],
    ['a partial [DONE]', 'data: [DO'],
  ])('ending inside an event (%s) is incomplete', (_name, tail) => {
    const result = runText(dataEvent(chunkObject('a')) + tail);
    expect(result.end).toMatchObject({ state: 'incomplete', output: '' });
    expect(outputEvents(result.output)).toEqual([sanitized('a')]);
  });

  it('an unfinished event over the cap is an overflow; complete events before it are emitted', () => {
    const complete = dataEvent(chunkObject('a'));
    const big = `data: ${'x'.repeat(200)}`;
    const transform = new SseSanitizeTransform(strict({ maxPendingBytes: 100 }));
    const step = transform.push(text(complete + big));
    expect(step.state).toBe('overflow');
    expect(step.overflow).toEqual({ pendingBytes: big.length, limit: 100 });
    expect(outputEvents(step.output)).toEqual([sanitized('a')]);
    expect(transform.push(text('\n\n'))).toMatchObject({ state: 'overflow', output: '' });
    expect(transform.end()).toMatchObject({ state: 'overflow', output: '' });
  });

  it('a complete event larger than the cap inside one chunk is not an overflow', () => {
    const large = dataEvent(chunkObject('y'.repeat(500)));
    const result = run([text(large)], strict({ maxPendingBytes: 100 }));
    expect(result.steps[0]?.state).toBe('open');
    expect(outputEvents(result.output)).toEqual([sanitized('y'.repeat(500))]);
  });

  it('overflow across chunks at the cap boundary', () => {
    const transform = new SseSanitizeTransform(strict({ maxPendingBytes: 10 }));
    expect(transform.push(text('data: 1234')).state).toBe('open');
    expect(transform.push(text('5')).state).toBe('overflow');
  });
});

// --- property: the output does not depend on how the upstream bytes are chunked ----------------

const LINE_ENDS = ['\n', '\r\n', '\r'] as const;

/** Content with ASCII, 2-, 3- and 4-byte UTF-8 characters, quotes, backslashes and newlines. */
const contentArb = fc.string({
  unit: fc.constantFrom('a', 'Z', ' ', '"', '\\', '\n', 'é', 'ß', '€', '中', '😀', '🧪', '\u2028'),
  maxLength: 12,
});

type Block =
  | { kind: 'chunk'; content: string; extra: boolean; multiline: boolean }
  | { kind: 'comment'; text: string }
  | { kind: 'blank-data' };

const blockArb: fc.Arbitrary<Block> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('chunk' as const),
      content: contentArb,
      extra: fc.boolean(),
      multiline: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('comment' as const),
      text: fc.string({ maxLength: 8 }).map((s) => s.replace(/[\r\n]/g, '')),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'blank-data' as const }) },
);

function encode(
  blocks: readonly Block[],
  eol: string,
  done: boolean,
): { bytes: Buffer; expected: unknown[] } {
  let out = '';
  const expected: unknown[] = [];
  for (const block of blocks) {
    if (block.kind === 'comment') {
      out += `:${block.text}${eol}${eol}`;
    } else if (block.kind === 'blank-data') {
      out += `data:${eol}${eol}`;
    } else {
      const value = chunkObject(
        block.content,
        block.extra ? { reasoning_content: block.content, vendor: { a: 1 } } : {},
      );
      const json = block.multiline ? JSON.stringify(value, null, 1) : JSON.stringify(value);
      for (const line of json.split('\n')) out += `data: ${line}${eol}`;
      out += eol;
      expected.push(sanitized(block.content));
    }
  }
  if (done) {
    out += `data: [DONE]${eol}${eol}`;
    expected.push('[DONE]');
  }
  return { bytes: Buffer.from(out, 'utf8'), expected };
}

describe('property: chunking never changes the output', () => {
  it('any split (lines, multi-byte characters, CRLF halves) gives byte-identical output', () => {
    fc.assert(
      fc.property(
        fc.array(blockArb, { maxLength: 8 }),
        fc.constantFrom(...LINE_ENDS),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.constantFrom<'strict' | 'standalone'>('strict', 'standalone'),
        (blocks, eol, done, cuts, mode) => {
          const { bytes, expected } = encode(blocks, eol, done);
          const options = strict({ mode });
          const whole = run([bytes], options);
          const chunked = run(split(bytes, cuts), options);
          expect(chunked.output).toBe(whole.output);
          expect(outputEvents(whole.output)).toEqual(expected);
          expect(chunked.end.state).toBe(done ? 'done' : 'clean');
          // Exactly one first-token sample when any chunk was emitted, none otherwise.
          const chunksEmitted = expected.some((e) => e !== '[DONE]');
          expect(chunked.firstFrameSteps.length).toBe(chunksEmitted ? 1 : 0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('one byte at a time gives the same output as one chunk', () => {
    fc.assert(
      fc.property(fc.array(blockArb, { maxLength: 5 }), fc.constantFrom(...LINE_ENDS), (blocks, eol) => {
        const { bytes } = encode(blocks, eol, true);
        const oneByte = [...bytes].map((b) => Buffer.from([b]));
        expect(run(oneByte).output).toBe(run([bytes]).output);
      }),
      { numRuns: 100 },
    );
  });

  it('an embedded error ends the output at the same place whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(blockArb, { maxLength: 4 }),
        fc.array(blockArb, { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.boolean(),
        (before, after, cuts, trusted) => {
          const head = encode(before, '\n', false);
          const tail = encode(after, '\n', true);
          const bytes = Buffer.concat([
            head.bytes,
            text(dataEvent({ error: { message: 'm', code: 429 } })),
            tail.bytes,
          ]);
          const whole = run([bytes], strict({ trusted }));
          const chunked = run(split(bytes, cuts), strict({ trusted }));
          expect(chunked.output).toBe(whole.output);
          const events = outputEvents(whole.output);
          expect(events.slice(0, -1)).toEqual(head.expected);
          expect(events.at(-1)).toMatchObject({ error: { code: 429 } });
          expect(chunked.end.state).toBe('error_event');
        },
      ),
      { numRuns: 200 },
    );
  });
});
