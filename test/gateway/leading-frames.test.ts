import { describe, expect, it } from 'vitest';
import { classifyData } from '../../src/lib/sse.js';
import { CHAT_COMPLETIONS, RESPONSES } from '../../src/gateway/api/surfaces.js';
import { RawLeadingFrames } from '../../src/gateway/pipeline/leading-frames.js';

describe('classifyData: the one test of a data frame', () => {
  it.each([
    ['[DONE]', 'done'],
    [' [DONE] ', 'done'],
    ['[DONE]\r', 'done'],
    ['', 'empty'],
    ['   ', 'empty'],
    [' '.repeat(100), 'empty'],
    ['{"choices":[]}', 'frame'],
    [' {"choices":[]} ', 'frame'],
    ['not json', 'frame'],
    [`{"pad":"${'x'.repeat(80)}"}`, 'frame'],
  ])('%j is %s', (data, kind) => {
    expect(classifyData(data)).toBe(kind);
  });
});

describe('RawLeadingFrames: a raw stream read to its first data frame', () => {
  const framesOn =
    (surface = CHAT_COMPLETIONS) =>
    (...texts: string[]): { frames: RawLeadingFrames; steps: ReturnType<RawLeadingFrames['push']>[] } => {
      const reader = new RawLeadingFrames(65_536, surface);
      return { frames: reader, steps: texts.map((text) => reader.push(Buffer.from(text))) };
    };
  const frames = framesOn(CHAT_COMPLETIONS);

  it('passes the bytes unchanged and marks the chunk that completes the first data frame', () => {
    const { frames: reader, steps } = frames(': ping\n\n', 'data: {"choices"', ':[]}\n\ndata: {"x":1}\n\n');
    expect(steps.map((step) => step.output.toString())).toEqual([
      ': ping\n\n',
      'data: {"choices"',
      ':[]}\n\ndata: {"x":1}\n\n',
    ]);
    expect(steps.map((step) => step.firstDataFrame)).toEqual([false, false, true]);
    expect(reader.state).toBe('open');
    expect(reader.leadingError).toBeUndefined();
  });

  it('an error as the first frame is an error inside a 200, by the status its code stands for', () => {
    const { frames: reader, steps } = frames(
      'data: {"error":{"message":"slow down","code":"rate_limit_exceeded"}}\n\n',
    );
    expect(steps[0]!.firstDataFrame).toBe(false);
    expect(reader.state).toBe('error_event');
    expect(reader.leadingError).toEqual({ upstreamStatus: 429 });
  });

  it('an engine error object (vLLM) counts too; an error after a data frame does not lead', () => {
    const engine = frames('data: {"object":"error","message":"boom","code":503}\n\n');
    expect(engine.frames.leadingError).toEqual({ upstreamStatus: 503 });
    const later = frames('data: {"choices":[]}\n\ndata: {"error":{"message":"x"}}\n\n');
    expect(later.steps[0]!.firstDataFrame).toBe(true);
    expect(later.frames.leadingError).toBeUndefined();
  });

  it("a Responses stream's own failure event leads as its error; on chat it is an ordinary frame", () => {
    const event = 'data: {"type":"error","code":"rate_limit_exceeded","message":"slow down"}\n\n';
    expect(framesOn(RESPONSES)(event).frames.leadingError).toEqual({ upstreamStatus: 429 });
    const failed = framesOn(RESPONSES)(
      'data: {"type":"response.failed","response":{"status":"failed","error":{"code":"503"}}}\n\n',
    );
    expect(failed.frames.leadingError).toEqual({ upstreamStatus: 503 });
    const chat = framesOn(CHAT_COMPLETIONS)(event);
    expect(chat.frames.leadingError).toBeUndefined();
    expect(chat.steps[0]!.firstDataFrame).toBe(true);
  });

  it('[DONE] before any data ends the leading part; an event past the size cap overflows', () => {
    expect(frames('data: [DONE]\n\n').frames.state).toBe('done');
    const big = new RawLeadingFrames(16, CHAT_COMPLETIONS);
    expect(big.push(Buffer.from(`data: ${'x'.repeat(64)}`)).state).toBe('overflow');
  });
});
