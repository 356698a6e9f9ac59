import fc from 'fast-check';
import { split } from '../helpers/chunks.js';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SSE_BUFFER_LIMIT,
  DONE_EVENT,
  DONE_EVENT_BYTES,
  SseParser,
  dataLinesOf,
  formatComment,
  formatDataEvent,
  formatEvent,
  type SseEndResult,
  type SseEvent,
  type SsePushResult,
} from '../../src/lib/sse.js';

interface Run {
  events: SseEvent[];
  comments: string[];
  pushes: SsePushResult[];
  end: SseEndResult;
}

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

function run(chunks: readonly Uint8Array[], maxPendingBytes = NO_LIMIT): Run {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const parser = new SseParser(
    { onEvent: (e) => events.push(e), onComment: (c) => comments.push(c) },
    { maxPendingBytes },
  );
  const pushes = chunks.map((c) => parser.push(c));
  return { events, comments, pushes, end: parser.end() };
}

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');
const runText = (s: string, maxPendingBytes = NO_LIMIT): Run => run([bytes(s)], maxPendingBytes);
const ev = (data: string, extra: Partial<SseEvent> = {}): SseEvent => ({
  event: undefined,
  id: undefined,
  retry: undefined,
  data,
  ...extra,
});

function oneByteChunks(all: Uint8Array): Uint8Array[] {
  return Array.from(all, (_, i) => all.subarray(i, i + 1));
}

/**
 * An independent model of the WHATWG rules, on the whole stream as text: decode everything at once
 * (TextDecoder strips a leading BOM), split with a regex, ignore an unterminated last line.
 */
function reference(all: Uint8Array): { events: SseEvent[]; comments: string[]; clean: boolean } {
  const text = new TextDecoder().decode(all);
  const re = /\r\n|\r|\n/g;
  const lines: string[] = [];
  let last = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    lines.push(text.slice(last, m.index));
    last = m.index + m[0].length;
  }
  const unterminated = last < text.length;
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  let retry: number | undefined;
  let fields = false;
  for (const line of lines) {
    if (line === '') {
      if (data.length > 0) events.push({ event, data: data.join('\n'), id, retry });
      data = [];
      event = id = retry = undefined;
      fields = false;
      continue;
    }
    if (line.startsWith(':')) {
      comments.push(line.slice(1));
      continue;
    }
    fields = true;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data.push(value);
    else if (name === 'event') event = value;
    else if (name === 'id' && !value.includes('\0')) id = value;
    else if (name === 'retry' && /^[0-9]+$/.test(value)) retry = Number(value);
  }
  return { events, comments, clean: !unterminated && !fields };
}

describe('SseParser: fields and dispatch', () => {
  it('parses a data event with and without the optional space', () => {
    expect(runText('data: {"a":1}\n\ndata:{"b":2}\n\n').events).toEqual([ev('{"a":1}'), ev('{"b":2}')]);
  });

  it('removes only one leading space', () => {
    expect(runText('data:  two\n\n').events).toEqual([ev(' two')]);
  });

  it('joins several data lines with LF', () => {
    expect(runText('data: one\ndata:\ndata: three\n\n').events).toEqual([ev('one\n\nthree')]);
  });

  it('reads event, id and retry per block and keeps the stream-wide last id', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser({ onEvent: (e) => events.push(e) });
    parser.push(bytes('event: delta\nid: 7\nretry: 1500\ndata: x\n\ndata: y\n\n'));
    expect(events).toEqual([ev('x', { event: 'delta', id: '7', retry: 1500 }), ev('y')]);
    expect(parser.lastEventId).toBe('7');
  });

  it('treats a field name without a colon as an empty value', () => {
    expect(runText('data\n\n').events).toEqual([ev('')]);
  });

  it('does not mistake longer field names for known ones', () => {
    expect(runText('database: x\nevents: y\ndata: z\n\n').events).toEqual([ev('z')]);
  });

  it('ignores an id containing NUL and a non-numeric retry', () => {
    expect(runText('id: a\0b\nretry: 12a\ndata: x\n\n').events).toEqual([ev('x')]);
  });

  it('dispatches nothing for a block without data', () => {
    expect(runText('event: ping\nid: 3\n\n\n\n').events).toEqual([]);
  });

  it('reports comments separately, text after the colon verbatim', () => {
    const result = runText(': keep-alive\n:x\ndata: a\n\n');
    expect(result.comments).toEqual([' keep-alive', 'x']);
    expect(result.events).toEqual([ev('a')]);
  });

  it('skips comment decoding when no comment handler is given', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser({ onEvent: (e) => events.push(e) });
    expect(parser.push(bytes(': ping\n\ndata: a\n\n'))).toEqual({ ok: true });
    expect(events).toEqual([ev('a')]);
  });

  it('drops a UTF-8 BOM at the start of the stream only', () => {
    const result = run([
      Buffer.from([0xef, 0xbb]),
      Buffer.from([0xbf]),
      bytes('data: a\n\n\ufeffdata: b\n\n'),
    ]);
    expect(result.events).toEqual([ev('a')]);
  });

  it('accepts Uint8Array views with an offset', () => {
    const backing = bytes('xxxdata: hi\n\nyyy');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 3, 13);
    expect(run([view]).events).toEqual([ev('hi')]);
  });

  it('does not modify the caller chunks', () => {
    const chunk = bytes('data: a\n\ndata: partial');
    const copy = Buffer.from(chunk);
    run([chunk, bytes(' more\n\n')]);
    expect(chunk.equals(copy)).toBe(true);
  });
});

describe('SseParser: line ends and chunk boundaries', () => {
  it('accepts LF, CRLF and CR line ends', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      expect(runText(`data: a${eol}data: b${eol}${eol}`).events).toEqual([ev('a\nb')]);
    }
  });

  it('treats CR at a chunk end and LF at the next start as one line end', () => {
    const result = run([bytes('data: a\r'), bytes('\ndata: b\r'), bytes('\n\r'), bytes('\n')]);
    expect(result.events).toEqual([ev('a\nb')]);
    expect(result.end).toEqual({ ok: true, kind: 'clean' });
  });

  it('keeps a CR pending across an empty chunk', () => {
    const result = run([bytes('data: a\r'), new Uint8Array(0), bytes('\n\r\n')]);
    expect(result.events).toEqual([ev('a')]);
  });

  it('keeps multi-byte characters split across chunks intact', () => {
    const all = bytes('data: héllo €𝄞 世界\n\n');
    expect(run(oneByteChunks(all)).events).toEqual([ev('héllo €𝄞 世界')]);
  });

  it('parses JSON split across chunks', () => {
    const json = JSON.stringify({ choices: [{ delta: { content: 'Hello' } }] });
    const all = bytes(`data: ${json}\n\ndata: [DONE]\n\n`);
    const result = run([all.subarray(0, 17), all.subarray(17, 30), all.subarray(30)]);
    expect(result.events.map((e) => e.data)).toEqual([json, '[DONE]']);
  });
});

describe('SseParser: end of stream', () => {
  it('is clean at an event boundary', () => {
    expect(runText('data: a\n\n').end).toEqual({ ok: true, kind: 'clean' });
    expect(run([]).end).toEqual({ ok: true, kind: 'clean' });
  });

  it('reports an event without its closing blank line as incomplete and does not dispatch it', () => {
    const result = runText('data: a\n\ndata: [DONE]\n');
    expect(result.events).toEqual([ev('a')]);
    expect(result.end).toEqual({ ok: false, kind: 'incomplete', pendingBytes: 13 });
  });

  it('reports an unterminated line as incomplete', () => {
    expect(runText('data: a\n\ndata: tr').end).toEqual({ ok: false, kind: 'incomplete', pendingBytes: 8 });
    expect(runText(': ping').end).toMatchObject({ ok: false, kind: 'incomplete' });
  });

  it('treats trailing complete comment lines as clean', () => {
    expect(runText('data: a\n\n: bye\n').end).toEqual({ ok: true, kind: 'clean' });
  });

  it('is idempotent and refuses pushes after end', () => {
    const parser = new SseParser({ onEvent: () => {} });
    parser.push(bytes('data: x'));
    const first = parser.end();
    expect(parser.end()).toBe(first);
    expect(() => parser.push(bytes('\n\n'))).toThrow(/after end/);
  });
});

describe('SseParser: unfinished-event cap', () => {
  it('defaults to 65536 bytes', () => {
    expect(DEFAULT_SSE_BUFFER_LIMIT).toBe(65_536);
    const parser = new SseParser({ onEvent: () => {} });
    expect(parser.push(bytes(`data: ${'x'.repeat(65_530)}`))).toEqual({ ok: true });
    expect(parser.push(bytes('x'))).toEqual({
      ok: false,
      kind: 'overflow',
      pendingBytes: 65_537,
      limit: 65_536,
    });
  });

  it('allows exactly the limit and overflows one byte above it', () => {
    expect(runText('data: abcd', 10).pushes).toEqual([{ ok: true }]);
    expect(runText('data: abcde', 10).pushes).toEqual([
      { ok: false, kind: 'overflow', pendingBytes: 11, limit: 10 },
    ]);
  });

  it('counts complete lines of the unfinished event, not only the partial line', () => {
    const result = run([bytes('data: 12345\n'), bytes('data: 6')], 16);
    expect(result.pushes).toEqual([
      { ok: true },
      { ok: false, kind: 'overflow', pendingBytes: 19, limit: 16 },
    ]);
  });

  it('does not count complete events, however many or large, in one chunk', () => {
    const many = `data: ${'y'.repeat(1000)}\n\n`.repeat(100);
    const result = runText(many, 64);
    expect(result.pushes).toEqual([{ ok: true }]);
    expect(result.events).toHaveLength(100);
  });

  it('with 0, permits chunks that end at event boundaries only', () => {
    expect(run([bytes('data: a\n\n'), bytes('data: b\n\n')], 0).pushes).toEqual([{ ok: true }, { ok: true }]);
    expect(run([bytes('data: a\n\nd')], 0).pushes).toEqual([
      { ok: false, kind: 'overflow', pendingBytes: 1, limit: 0 },
    ]);
    expect(run([bytes('data: a\n')], 0).pushes[0]).toMatchObject({ kind: 'overflow', pendingBytes: 8 });
  });

  it('with 0, a blank line closed by CR at a chunk end leaves nothing pending', () => {
    expect(run([bytes('data: a\r\r'), bytes('\ndata: b\r\n\r\n')], 0).pushes).toEqual([
      { ok: true },
      { ok: true },
    ]);
  });

  it('delivers the complete events of the overflowing chunk, then stays spent', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser({ onEvent: (e) => events.push(e) }, { maxPendingBytes: 4 });
    const overflow = parser.push(bytes('data: a\n\ndata: long'));
    expect(overflow).toMatchObject({ ok: false, kind: 'overflow' });
    expect(events).toEqual([ev('a')]);
    expect(parser.push(bytes('\n\n'))).toBe(overflow);
    expect(parser.end()).toBe(overflow);
    expect(events).toEqual([ev('a')]);
  });

  it('rejects a negative or fractional limit as a programming error', () => {
    expect(() => new SseParser({ onEvent: () => {} }, { maxPendingBytes: -1 })).toThrow(RangeError);
    expect(() => new SseParser({ onEvent: () => {} }, { maxPendingBytes: 1.5 })).toThrow(RangeError);
  });
});

describe('dataLinesOf', () => {
  it('reads the data lines of whole text, one leading space dropped, other fields and comments skipped', () => {
    const text = 'event: x\r\ndata: {"a":1}\n: comment\ndata:{"b":2}\ndata:  two spaces\nid: 7\n\n';
    expect(dataLinesOf(text)).toEqual(['{"a":1}', '{"b":2}', ' two spaces']);
    expect(dataLinesOf('')).toEqual([]);
  });
});

describe('serializer', () => {
  it('formats a data event and the DONE sentinel', () => {
    expect(formatDataEvent('{"a":1}')).toBe('data: {"a":1}\n\n');
    expect(DONE_EVENT).toBe('data: [DONE]\n\n');
    expect(DONE_EVENT_BYTES.toString()).toBe(DONE_EVENT);
  });

  it('splits text with line breaks into several data lines', () => {
    expect(formatDataEvent('a\nb\r\nc\rd')).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n');
  });

  it('formats comments and full events', () => {
    expect(formatComment(' ping')).toBe(': ping\n\n');
    expect(formatEvent({ event: 'x', id: '1', retry: 10, data: 'd' })).toBe(
      'event: x\nid: 1\nretry: 10\ndata: d\n\n',
    );
    expect(formatEvent({ event: 'a\nb', data: '' })).toBe('event: a b\ndata: \n\n');
  });

  it('round-trips through the parser', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }),
        fc.option(fc.string(), { nil: undefined }),
        (data, event) => {
          const text = formatEvent({ event: event?.replace(/[\r\n]/g, ' '), data });
          const expected = data.replace(/\r\n|\r/g, '\n');
          expect(runText(text).events).toEqual([ev(expected, { event: event?.replace(/[\r\n]/g, ' ') })]);
        },
      ),
    );
  });
});

/* ------------------------------------------------------------------------------------------------
 * Property tests
 * ---------------------------------------------------------------------------------------------- */

const valueText = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ''));

const sseLine = fc.oneof(
  valueText.map((v) => `data: ${v}`),
  valueText.map((v) => `data:${v}`),
  fc.constant('data'),
  fc.constant(''),
  fc.constant(''),
  valueText.map((v) => `event: ${v}`),
  valueText.map((v) => `id: ${v}`),
  fc.nat(99999).map((n) => `retry: ${n}`),
  valueText.map((v) => `:${v}`),
  valueText.map((v) => `x-${v}: ${v}`),
  valueText,
);

const terminator = fc.constantFrom('\n', '\r\n', '\r');

/** A stream of lines with mixed line ends and possibly an unterminated tail. */
const sseStream = fc
  .tuple(fc.array(fc.tuple(sseLine, terminator), { maxLength: 30 }), fc.option(sseLine, { nil: undefined }))
  .map(([lines, tail]) => bytes(lines.map(([l, t]) => l + t).join('') + (tail ?? '')));

/** Bytes with many line ends and colons among arbitrary (possibly invalid UTF-8) bytes. */
const noisyBytes = fc
  .array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x0a, 0x0d, 0x3a, 0x20, 0x64)), {
    maxLength: 200,
  })
  .map((a) => Buffer.from(a));

const cuts = fc.array(fc.nat(), { maxLength: 40 });

describe('SseParser properties', () => {
  it('matches the reference model for any chunking', () => {
    fc.assert(
      fc.property(fc.oneof(sseStream, noisyBytes), cuts, (all, at) => {
        const expected = reference(all);
        const chunked = run(split(all, at));
        expect(chunked.events).toEqual(expected.events);
        expect(chunked.comments).toEqual(expected.comments);
        expect(chunked.end.ok).toBe(expected.clean);
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same events for 1-byte chunks as for one chunk', () => {
    fc.assert(
      fc.property(sseStream, (all) => {
        const whole = run([all]);
        const bytewise = run(oneByteChunks(all));
        expect(bytewise.events).toEqual(whole.events);
        expect(bytewise.comments).toEqual(whole.comments);
        expect(bytewise.end).toEqual(whole.end);
      }),
      { numRuns: 200 },
    );
  });

  it('gives the same events with LF, CRLF and CR line ends', () => {
    fc.assert(
      fc.property(fc.array(sseLine, { maxLength: 30 }), cuts, (lines, at) => {
        const results = ['\n', '\r\n', '\r'].map((eol) =>
          run(split(bytes(lines.map((l) => l + eol).join('')), at)),
        );
        for (const r of results.slice(1)) {
          expect(r.events).toEqual(results[0]!.events);
          expect(r.comments).toEqual(results[0]!.comments);
          expect(r.end.ok).toBe(results[0]!.end.ok);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps split multi-byte characters intact', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', maxLength: 20 }), { maxLength: 5 }),
        cuts,
        (values, at) => {
          const clean = values.map((v) => v.replace(/[\r\n]/g, ''));
          const all = bytes(clean.map((v) => `data: ${v}\n\n`).join(''));
          const events = run(split(all, at)).events.map((e) => e.data);
          // Lone surrogates are not valid UTF-8 text; both sides see them as U+FFFD.
          expect(events).toEqual(clean.map((v) => Buffer.from(v).toString()));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('overflows exactly when the unfinished event at a chunk end exceeds the cap', () => {
    fc.assert(
      fc.property(sseStream, cuts, fc.nat(64), (all, at, limit) => {
        fc.pre(!(all[0] === 0xef && all[1] === 0xbb && all[2] === 0xbf));
        const chunks = split(all, at);
        const boundaries = eventBoundaries(all);
        let end = 0;
        let expectedAt = -1;
        for (let i = 0; i < chunks.length; i++) {
          end += chunks[i]!.length;
          const since = Math.max(...boundaries.filter((b) => b <= end));
          if (end - since > limit && chunks[i]!.length > 0) {
            expectedAt = i;
            break;
          }
        }
        const { pushes } = run(chunks, limit);
        const firstOverflow = pushes.findIndex((p) => !p.ok);
        expect(firstOverflow).toBe(expectedAt);
        if (expectedAt >= 0) {
          const since = Math.max(...boundaries.filter((b) => b <= end));
          expect(pushes[expectedAt]).toEqual({
            ok: false,
            kind: 'overflow',
            pendingBytes: end - since,
            limit,
          });
        }
      }),
      { numRuns: 500 },
    );
  });
});

/**
 * Byte offsets at which no event is unfinished: the start, and after every blank line's end. For a
 * blank line ended by CRLF both the offset after CR and after LF qualify (the event is complete at
 * the CR; the LF only finishes the line end).
 */
function eventBoundaries(all: Uint8Array): number[] {
  const out = [0];
  let lineStart = 0;
  for (let i = 0; i < all.length; i++) {
    const b = all[i];
    if (b !== 0x0a && b !== 0x0d) continue;
    const crlf = b === 0x0d && all[i + 1] === 0x0a;
    const next = crlf ? i + 2 : i + 1;
    if (i === lineStart) {
      out.push(i + 1);
      if (crlf) out.push(next);
    }
    lineStart = next;
    i = next - 1;
  }
  return out;
}
