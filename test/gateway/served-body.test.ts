import { describe, expect, it } from 'vitest';
import { CHAT_COMPLETIONS, RESPONSES, type ApiSurface } from '../../src/gateway/api/surfaces.js';
import { ServedJson, ServedStream } from '../../src/gateway/pipeline/served-body.js';
import { split } from '../helpers/chunks.js';

const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
const content = (text: string) =>
  frame({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] });
const DONE = 'data: [DONE]\n\n';

/** Feeds `text` as the prefix (first `held` chunks) and then the body, cut at `cuts`. */
function endOf(
  text: string,
  cuts: number[] = [],
  held = 0,
  surface: ApiSurface = CHAT_COMPLETIONS,
): ReturnType<ServedStream['streamEnd']> {
  const chunks = split(Buffer.from(text), cuts);
  const tail = new ServedStream(surface, chunks.slice(0, held));
  for (const chunk of chunks.slice(held)) tail.push(chunk);
  return tail.streamEnd();
}

describe('ServedStream: how a passed-through stream ended', () => {
  const complete = content('a') + content('b') + DONE;

  it('a stream ending with [DONE] is done, however it was cut into chunks', () => {
    expect(endOf(complete)).toBe('done');
    expect(endOf(complete, [complete.length - 3])).toBe('done');
    expect(endOf(complete, [10, complete.length - 10])).toBe('done');
    expect(endOf(complete, [complete.length - 5], 2)).toBe('done');
    expect(endOf(`${content('a')}data:[DONE]\r\n\r\n`)).toBe('done');
    // The [DONE] line read in three pieces, and keep-alive comments after it.
    const at = complete.length - DONE.length;
    expect(endOf(complete, [at, at + 6, at + 12])).toBe('done');
    expect(endOf(`${complete}: keep-alive\n\n: ping\r\n\r\n`)).toBe('done');
  });

  it('a stream without [DONE] at its end is not done', () => {
    expect(endOf(content('a') + content('b'))).toBe('other');
    expect(endOf(DONE + content('late'))).toBe('other');
    expect(endOf('')).toBe('other');
    // Content that merely mentions the sentinel is not the sentinel.
    expect(endOf(content('data: [DONE]'))).toBe('other');
  });

  it('an error event anywhere is an error, even with [DONE] after it', () => {
    const envelope = frame({ error: { message: 'boom', type: 'server_error', code: 500 } });
    expect(endOf(content('a') + envelope)).toBe('error');
    expect(endOf(content('a') + envelope + content('b') + DONE)).toBe('error');
    expect(endOf(envelope + DONE, [], 1)).toBe('error');
    // The error key cut in two, the last event split across the last two chunks.
    expect(endOf(content('a') + envelope, [content('a').length + 10])).toBe('error');
    expect(
      endOf(content('a') + frame({ object: 'error', message: 'x', type: 'BadRequestError', code: 400 })),
    ).toBe('error');
    // The Responses API's failure events are its own: an error there, an ordinary event elsewhere.
    const failed = frame({ type: 'response.failed', response: { status: 'failed', error: { code: 'x' } } });
    expect(endOf(failed, [], 0, RESPONSES)).toBe('error');
    expect(endOf(frame({ type: 'error', code: 'x', message: 'y' }), [], 0, RESPONSES)).toBe('error');
    expect(endOf(frame({ type: 'error', code: 'x', message: 'y' }) + DONE)).toBe('done');
  });

  it('the word "error" in content, a null error or a non-error type is not an error', () => {
    expect(endOf(content('"error"') + DONE)).toBe('done');
    expect(endOf(content('error') + DONE)).toBe('done');
    expect(endOf(frame({ type: 'response.completed', response: { status: 'completed', error: null } }))).toBe(
      'other',
    );
    expect(endOf(frame({ choices: [{ logprobs: { content: [{ token: 'error' }] } }] }) + DONE)).toBe('done');
  });
});

describe('ServedJson: an error inside a passed-through 200 body', () => {
  const isError = (value: unknown, cuts: number[] = []): boolean => {
    const chunks = split(Buffer.from(JSON.stringify(value, null, cuts.length > 0 ? 1 : 0)), cuts);
    const body = new ServedJson(chunks.slice(0, 1));
    for (const chunk of chunks.slice(1)) body.push(chunk);
    return body.isError();
  };

  it('an error object is an error, in one chunk or several', () => {
    expect(isError({ error: { message: 'x', type: 'server_error', code: 500 } })).toBe(true);
    expect(isError({ error: { message: 'x' }, choices: [] }, [5, 12])).toBe(true);
    expect(isError({ object: 'error', message: 'x', type: 'BadRequestError', code: 400 })).toBe(true);
    expect(
      isError({ object: 'response', status: 'failed', error: { code: 'server_error', message: 'x' } }),
    ).toBe(true);
  });

  it('a success, a null error or a nested error field is not', () => {
    expect(isError({ object: 'chat.completion', choices: [{ message: { content: '"error": 1' } }] })).toBe(
      false,
    );
    expect(isError({ object: 'response', status: 'completed', error: null })).toBe(false);
    expect(
      isError({ object: 'response', output: [{ type: 'mcp_call', error: 'tool failed' }], error: null }),
    ).toBe(false);
    expect(isError({})).toBe(false);
  });
});
