import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsageChunkFilter } from '../../src/gateway/pipeline/usage-chunk-filter.js';
import {
  messagesStreamUsage,
  usageFromBytes,
  usageFromText,
  usageOf,
} from '../../src/gateway/pipeline/usage.js';
import { split } from '../helpers/chunks.js';

const text = (value: unknown, space?: number) => JSON.stringify(value, null, space);

describe('usageFromText: the usage a response reports, without parsing the response', () => {
  it('reads chat and text completion usage with its details', () => {
    const body = {
      id: 'c',
      choices: [{ message: { content: 'hi' } }],
      usage: {
        prompt_tokens: 12,
        completion_tokens: 30,
        total_tokens: 42,
        completion_tokens_details: { reasoning_tokens: 20 },
        prompt_tokens_details: { cached_tokens: 8 },
      },
    };
    const expected = { prompt: 12, completion: 30, reasoning: 20, cachedPrompt: 8, cacheWrite: 0 };
    expect(usageFromText(text(body))).toEqual(expected);
    // Python servers write spaces after separators.
    expect(usageFromText(text(body, 2))).toEqual(expected);
  });

  it('reads the Responses API usage, nested in its completed event', () => {
    const event = {
      type: 'response.completed',
      response: {
        status: 'completed',
        error: null,
        usage: {
          input_tokens: 5,
          output_tokens: 9,
          output_tokens_details: { reasoning_tokens: 4 },
          input_tokens_details: { cached_tokens: 2 },
        },
        metadata: {},
      },
    };
    expect(usageFromText(`event: response.completed\ndata: ${text(event)}\n\n`)).toEqual({
      prompt: 5,
      completion: 9,
      reasoning: 4,
      cachedPrompt: 2,
      cacheWrite: 0,
    });
  });

  it('takes the last usage that is an object; embeddings count prompt tokens only', () => {
    const chunks =
      `data: ${text({ choices: [{ delta: { content: 'a' } }], usage: null })}\n\n` +
      `data: ${text({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } })}\n\n` +
      `data: ${text({ choices: [{ delta: {} }], usage: null })}\n\ndata: [DONE]\n\n`;
    expect(usageFromText(chunks)).toEqual({
      prompt: 3,
      completion: 1,
      reasoning: 0,
      cachedPrompt: 0,
      cacheWrite: 0,
    });
    expect(usageFromText(text({ data: [], usage: { prompt_tokens: 7, total_tokens: 7 } }))).toEqual({
      prompt: 7,
      completion: 0,
      reasoning: 0,
      cachedPrompt: 0,
      cacheWrite: 0,
    });
  });

  it('finds nothing in content that mentions usage, in null or partial usage, or in nonsense counts', () => {
    expect(
      usageFromText(text({ choices: [{ message: { content: '"usage": {"prompt_tokens": 5}' } }] })),
    ).toBe(undefined);
    expect(usageFromText(text({ usage: null }))).toBe(undefined);
    expect(usageFromText('data: {"usage": {"prompt_tokens": 5, "completion_')).toBe(undefined);
    expect(usageFromText(text({ usage: { prompt_tokens: -1, completion_tokens: 2 } }))).toBe(undefined);
    expect(usageFromText(text({ usage: { prompt_tokens: 1.5 } }))).toBe(undefined);
    expect(usageFromText('')).toBe(undefined);
  });
});

describe('usageFromBytes: counts read in place, anything else parsed', () => {
  const space = fc.constantFrom('', ' ', '\n  ', '\t');
  const count = fc.oneof(fc.nat({ max: 10_000_000 }).map(String), fc.constant('null'));
  const oddNumber = fc.constantFrom(
    '007',
    '12.0',
    '1e3',
    '-1',
    '9007199254740993',
    '12345678901234567',
    '1.5',
  );
  const notCount = fc.constantFrom('"text"', '[1]', 'true', '{"a":{"b":1}}');
  const key = fc.constantFrom(
    'prompt_tokens',
    'input_tokens',
    'completion_tokens',
    'output_tokens',
    'total_tokens',
    'reasoning_tokens',
    'cached_tokens',
    'audio_tokens',
    // Same length and first letter as members read in place.
    'prompt_tokenz',
    'cached_tokenx',
  );
  const oddKey = fc.constantFrom('Prompt_Tokens', 'prompt\\u005ftokens', 'prompt-tokens');
  const detailsKey = fc.constantFrom(
    'completion_tokens_details',
    'output_tokens_details',
    'prompt_tokens_details',
    'input_tokens_details',
  );
  const members = (keys: fc.Arbitrary<string>, values: fc.Arbitrary<string>) =>
    fc
      .tuple(fc.array(fc.tuple(keys, space, values), { maxLength: 6 }), space)
      .map(([ms, s]) => `{${s}${ms.map(([k, a, v]) => `"${k}"${a}:${a}${v}`).join(`,${s}`)}${s}}`);
  /** A usage object of counts, null and details objects, with at most one odd member when `odd`. */
  const usageObject = (odd: boolean) => {
    const details = members(key, count);
    const plain: fc.Arbitrary<[string, string]> = fc.oneof(
      fc.tuple(key, count),
      fc.tuple(detailsKey, fc.oneof(details, count)),
      fc.tuple(key, details),
    );
    const oddOne: fc.Arbitrary<[string, string]> = fc.oneof(
      fc.tuple(key, oddNumber),
      fc.tuple(key, notCount),
      fc.tuple(oddKey, count),
    );
    return fc
      .tuple(
        fc.array(plain, { maxLength: 7 }),
        odd ? oddOne.map((m) => [m]) : fc.constant<[string, string][]>([]),
        fc.nat(),
        space,
      )
      .map(([ms, extra, at, s]) => {
        const all = [...ms];
        all.splice(at % (ms.length + 1), 0, ...extra);
        return `{${s}${all.map(([k, v]) => `"${k}"${s}:${s}${v}`).join(`,${s}`)}${s}}`;
      });
  };

  it('gives what parsing the usage object gives, for counts and for every other value', () => {
    for (const odd of [false, true]) {
      fc.assert(
        fc.property(usageObject(odd), space, (text, s) => {
          const body = Buffer.from(`{"id":"x","choices":[],"usage"${s}:${s}${text}}`);
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          expect(usageFromBytes(body)).toEqual(usageOf(parsed));
        }),
        { numRuns: 1_500 },
      );
    }
  });

  it('reads a body whose usage is cut short as having none, and an earlier usage past a null one', () => {
    const whole =
      '{"usage":{"prompt_tokens":12,"completion_tokens_details":{"reasoning_tokens":3},"completion_tokens":9}}';
    for (let end = 0; end < whole.length - 1; end++)
      expect(usageFromBytes(Buffer.from(whole.slice(0, end)))).toBeUndefined();
    expect(usageFromBytes(Buffer.from(whole))).toEqual({
      prompt: 12,
      completion: 9,
      reasoning: 3,
      cachedPrompt: 0,
      cacheWrite: 0,
    });
    const twice = '{"usage":{"prompt_tokens":5,"completion_tokens":1},"choices":[{"usage":null}]}';
    expect(usageFromBytes(Buffer.from(twice))).toEqual({
      prompt: 5,
      completion: 1,
      reasoning: 0,
      cachedPrompt: 0,
      cacheWrite: 0,
    });
  });
});

describe("Anthropic's usage", () => {
  it('counts cache reads and writes beside input_tokens, added to the prompt', () => {
    const body =
      '{"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}}';
    const expected = { prompt: 115, completion: 7, reasoning: 0, cachedPrompt: 100, cacheWrite: 5 };
    expect(usageFromBytes(Buffer.from(body))).toEqual(expected);
    expect(usageFromText(body)).toEqual(expected);
  });

  it('takes the prompt from message_start and the output from the last message_delta', () => {
    const start =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":20,"cache_read_input_tokens":64,"output_tokens":1}}}\n\n';
    const end =
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n';
    expect(messagesStreamUsage(start, end)).toEqual({
      prompt: 84,
      completion: 42,
      reasoning: 0,
      cachedPrompt: 64,
      cacheWrite: 0,
    });
    // A stream cut before its message_delta still counts its prompt.
    expect(messagesStreamUsage(start, start)?.prompt).toBe(84);
    expect(messagesStreamUsage(undefined, 'event: ping\ndata: {"type":"ping"}\n\n')).toBeUndefined();
  });
});

describe('UsageChunkFilter: the usage-only chunk removed, every other byte kept', () => {
  const event = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
  const content = event({ choices: [{ index: 0, delta: { content: 'a' } }], usage: null });
  const usage = event({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } });
  const stream = `: keep-alive\n\n${content}${content}${usage}data: [DONE]\n\n`;
  const expected = `: keep-alive\n\n${content}${content}data: [DONE]\n\n`;

  const filtered = (text: string, cuts: number[]): string => {
    const filter = new UsageChunkFilter();
    const out: Buffer[] = [];
    for (const chunk of split(Buffer.from(text), cuts)) out.push(filter.push(chunk));
    const rest = filter.end();
    if (rest !== undefined) out.push(rest);
    return Buffer.concat(out).toString('utf8');
  };

  it('for every way of cutting the stream into two or three chunks', () => {
    expect(filtered(stream, [])).toBe(expected);
    for (let a = 1; a < stream.length; a++) {
      expect(filtered(stream, [a])).toBe(expected);
      for (let b = a + 7; b < stream.length; b += 23) expect(filtered(stream, [a, b])).toBe(expected);
    }
  });

  it('keeps CRLF events, usage that is not a usage-only chunk, and an unfinished last event', () => {
    const crlf = `data: {"choices":[],"usage":{"prompt_tokens":1}}\r\n\r\ndata: [DONE]\r\n\r\n`;
    expect(filtered(crlf, [10])).toBe('data: [DONE]\r\n\r\n');
    const final = event({ choices: [{ index: 0, delta: {} }], usage: { prompt_tokens: 1 } });
    expect(filtered(final + 'data: [DO', [5])).toBe(`${final}data: [DO`);
  });
});
