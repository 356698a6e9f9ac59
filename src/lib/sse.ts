/**
 * Incremental server-sent-events codec: bytes in, events out, and the serializer the gateway uses
 * to re-emit events.
 *
 * Parsing follows the WHATWG EventSource rules: lines end at LF, CRLF or CR (a CR at the end of one
 * chunk and an LF at the start of the next are one line end); `field: value` with the single
 * optional space after the colon removed; several `data` lines joined with LF; `event`, `id` (values
 * containing NUL ignored), `retry` (ASCII digits only); a line starting with a colon is a comment;
 * a blank line dispatches; a block without any `data` line dispatches nothing; a UTF-8 BOM at the
 * very start of the stream is dropped.
 *
 * Bytes, not text: line ends are found on the bytes with Buffer.indexOf (native memchr, cached so
 * each byte is scanned once per chunk), and a line is decoded only once it is complete. CR and LF
 * never occur inside a multi-byte UTF-8 sequence, so decoding whole lines keeps characters split
 * across chunks intact without a streaming decoder, and invalid bytes decode to U+FFFD the same way
 * whatever the chunking. Field names are matched on bytes, so only values are decoded.
 *
 * Raw bytes: events do not carry their raw bytes. The parser never mutates or keeps the caller's
 * chunks (the unfinished tail is copied), so a caller that must forward the original bytes
 * unchanged (leading-event inspection in non-strict mode) keeps its own chunks, pushes the same
 * chunks here until it has seen the first data event, then writes the held chunks verbatim and
 * forwards the rest without parsing. That costs nothing on streams that are not inspected, and the
 * bytes forwarded are exactly the bytes received, including framing the parser normalizes away.
 *
 * Unfinished-event cap (`--sse-buffer-limit`): after each chunk, the bytes of the event still
 * unfinished (every byte since the last blank line, comments included, plus an unterminated line)
 * must not exceed `maxPendingBytes`. Complete events inside one chunk do not count, however large:
 * the cap bounds what the parser holds between chunks, not a chunk or a response. With 0, every
 * chunk must end exactly at an event boundary. Exceeding it is reported as a value, not thrown.
 */

export interface SseEvent {
  /** The `event` field of this block; undefined means the default type, `message`. */
  readonly event: string | undefined;
  /** The `data` lines of this block joined with LF. */
  readonly data: string;
  /** The `id` field set in this block, if any (the stream-wide value is `SseParser.lastEventId`). */
  readonly id: string | undefined;
  /** The `retry` field set in this block, if valid. */
  readonly retry: number | undefined;
}

/** Receives parse output synchronously during `push`. Must not call `push` or `end` re-entrantly. */
export interface SseHandler {
  onEvent(event: SseEvent): void;
  /** Comment lines, text after the colon verbatim. Omit to skip decoding them. */
  onComment?(text: string): void;
}

export interface SseOverflow {
  readonly ok: false;
  readonly kind: 'overflow';
  /** Bytes of the unfinished event when the cap was exceeded. */
  readonly pendingBytes: number;
  readonly limit: number;
}

export type SsePushResult = { readonly ok: true } | SseOverflow;

/**
 * `clean`: the stream ended at an event boundary. `incomplete`: it ended inside an event (an
 * unterminated line, or field lines without the closing blank line); that event was not dispatched
 * and the stream must not be treated as a clean end.
 */
export type SseEndResult =
  | { readonly ok: true; readonly kind: 'clean' }
  | { readonly ok: false; readonly kind: 'incomplete'; readonly pendingBytes: number }
  | SseOverflow;

export interface SseParserOptions {
  /** Cap on the unfinished event in bytes; default 65536. */
  maxPendingBytes?: number;
}

export const DEFAULT_SSE_BUFFER_LIMIT = 65_536;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const FIELD_DATA = Buffer.from('data');
const FIELD_EVENT = Buffer.from('event');
const FIELD_ID = Buffer.from('id');
const FIELD_RETRY = Buffer.from('retry');

const PUSH_OK: SsePushResult = Object.freeze({ ok: true as const });
const END_CLEAN: SseEndResult = Object.freeze({ ok: true as const, kind: 'clean' as const });

export class SseParser {
  readonly #handler: SseHandler;
  readonly #limit: number;

  /** Bytes of an unterminated line carried to the next chunk; capacity grows as needed. */
  #partial: Buffer = Buffer.alloc(0);
  #partialLen = 0;
  /** Bytes of complete lines (terminators included) since the last blank line. */
  #eventBytes = 0;
  /** A non-comment line was seen since the last blank line. */
  #hasFields = false;
  /** The previous chunk ended with CR: an LF starting the next chunk belongs to that line end. */
  #sawCR = false;
  #atStart = true;

  #data: string | undefined = undefined;
  #eventType: string | undefined = undefined;
  #id: string | undefined = undefined;
  #retry: number | undefined = undefined;
  #lastEventId = '';

  #overflow: SseOverflow | null = null;
  #endResult: SseEndResult | null = null;

  constructor(handler: SseHandler, options: SseParserOptions = {}) {
    const limit = options.maxPendingBytes ?? DEFAULT_SSE_BUFFER_LIMIT;
    if (!Number.isInteger(limit) || limit < 0) {
      throw new RangeError(`maxPendingBytes must be a non-negative integer, got ${limit}`);
    }
    this.#handler = handler;
    this.#limit = limit;
  }

  /** The stream-wide last event id (WHATWG semantics: persists across events). */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** Bytes of the event currently unfinished. */
  get pendingBytes(): number {
    return this.#eventBytes + this.#partialLen;
  }

  /**
   * Parses one chunk, delivering complete events and comments to the handler before returning.
   * After an overflow the parser is spent: every later call returns the same overflow.
   */
  push(chunk: Uint8Array): SsePushResult {
    if (this.#overflow !== null) return this.#overflow;
    if (this.#endResult !== null) throw new Error('SseParser.push after end()');
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const len = buf.length;
    if (len === 0) return PUSH_OK;

    let pos = 0;
    if (this.#sawCR) {
      this.#sawCR = false;
      if (buf[0] === LF) {
        pos = 1;
        // The LF completes a CRLF whose CR ended a line already counted; it is part of the event
        // unless that line was the blank line that closed it.
        if (this.#eventBytes > 0) this.#eventBytes++;
      }
    }

    // Next LF / CR at or after `pos`; -1 once none is left in this chunk, -2 before the first search.
    let nextLF = -2;
    let nextCR = -2;
    while (pos < len) {
      if (nextLF !== -1 && nextLF < pos) nextLF = buf.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = buf.indexOf(CR, pos);
      const eol = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (eol === -1) break;

      let next = eol + 1;
      if (buf[eol] === CR) {
        if (next < len) {
          if (buf[next] === LF) next++;
        } else {
          this.#sawCR = true;
        }
      }
      const terminatorLength = next - eol;
      if (this.#partialLen > 0) {
        this.#appendPartial(buf, pos, eol);
        const lineLength = this.#partialLen;
        this.#partialLen = 0;
        this.#line(this.#partial, 0, lineLength, terminatorLength);
      } else {
        this.#line(buf, pos, eol, terminatorLength);
      }
      pos = next;
    }
    if (pos < len) this.#appendPartial(buf, pos, len);

    const pending = this.#eventBytes + this.#partialLen;
    if (pending > this.#limit) {
      this.#overflow = Object.freeze({
        ok: false as const,
        kind: 'overflow' as const,
        pendingBytes: pending,
        limit: this.#limit,
      });
      this.#partial = Buffer.alloc(0);
      this.#partialLen = 0;
      this.#data = undefined;
      return this.#overflow;
    }
    return PUSH_OK;
  }

  /** Ends the stream. An unfinished event is reported, never dispatched. Idempotent. */
  end(): SseEndResult {
    if (this.#overflow !== null) return this.#overflow;
    if (this.#endResult !== null) return this.#endResult;
    const pendingBytes = this.#eventBytes + this.#partialLen;
    this.#endResult =
      this.#partialLen > 0 || this.#hasFields
        ? Object.freeze({ ok: false as const, kind: 'incomplete' as const, pendingBytes })
        : END_CLEAN;
    this.#partial = Buffer.alloc(0);
    this.#partialLen = 0;
    this.#data = undefined;
    return this.#endResult;
  }

  #appendPartial(buf: Buffer, start: number, end: number): void {
    const needed = this.#partialLen + (end - start);
    if (needed > this.#partial.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.#partial.length * 2, 256));
      this.#partial.copy(grown, 0, 0, this.#partialLen);
      this.#partial = grown;
    }
    buf.copy(this.#partial, this.#partialLen, start, end);
    this.#partialLen = needed;
  }

  /** One complete line `buf[start, end)`, followed by a terminator of `terminatorLength` bytes. */
  #line(buf: Buffer, start: number, end: number, terminatorLength: number): void {
    const rawLength = end - start + terminatorLength;
    if (this.#atStart) {
      this.#atStart = false;
      if (end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf)
        start += 3;
    }
    if (start === end) {
      this.#eventBytes = 0;
      this.#hasFields = false;
      this.#dispatch();
      return;
    }
    this.#eventBytes += rawLength;

    const first = buf[start];
    if (first === COLON) {
      const onComment = this.#handler.onComment;
      if (onComment !== undefined) onComment.call(this.#handler, buf.toString('utf8', start + 1, end));
      return;
    }
    this.#hasFields = true;

    let v: number;
    if ((v = valueStart(buf, start, end, FIELD_DATA)) >= 0) {
      const value = buf.toString('utf8', v, end);
      this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    } else if ((v = valueStart(buf, start, end, FIELD_EVENT)) >= 0) {
      this.#eventType = buf.toString('utf8', v, end);
    } else if ((v = valueStart(buf, start, end, FIELD_ID)) >= 0) {
      if (!containsNul(buf, v, end)) {
        const value = buf.toString('utf8', v, end);
        this.#id = value;
        this.#lastEventId = value;
      }
    } else if ((v = valueStart(buf, start, end, FIELD_RETRY)) >= 0) {
      const retry = asciiDigits(buf, v, end);
      if (retry !== undefined) this.#retry = retry;
    }
    // Any other field name is ignored, as EventSource does.
  }

  #dispatch(): void {
    const data = this.#data;
    const event = this.#eventType;
    const id = this.#id;
    const retry = this.#retry;
    this.#data = undefined;
    this.#eventType = undefined;
    this.#id = undefined;
    this.#retry = undefined;
    if (data === undefined) return;
    this.#handler.onEvent({ event, data, id, retry });
  }
}

/**
 * If `buf[start, end)` is the field `name` (followed by a colon or the end of the line), returns
 * where its value starts, past the single optional space; otherwise -1.
 */
function valueStart(buf: Buffer, start: number, end: number, name: Buffer): number {
  const n = name.length;
  if (end - start < n) return -1;
  for (let k = 0; k < n; k++) if (buf[start + k] !== name[k]) return -1;
  let v = start + n;
  if (v === end) return end;
  if (buf[v] !== COLON) return -1;
  v++;
  if (v < end && buf[v] === SPACE) v++;
  return v;
}

function containsNul(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] === 0) return true;
  return false;
}

function asciiDigits(buf: Buffer, start: number, end: number): number | undefined {
  if (start === end) return undefined;
  let value = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) return undefined;
    value = value * 10 + (c - 0x30);
  }
  return value;
}

/* ------------------------------------------------------------------------------------------------
 * Serializer
 * ---------------------------------------------------------------------------------------------- */

/**
 * What an event's data is to an OpenAI-style stream: the `[DONE]` sentinel (surrounding whitespace
 * tolerated), nothing (empty or only whitespace: carries no frame, like a comment), or a data frame.
 * The one test of "the first data frame" (the commit point and the first-token sample).
 */
export function classifyData(data: string): 'done' | 'empty' | 'frame' {
  if (data === '[DONE]') return 'done';
  if (data.length === 0) return 'empty';
  // Fast path: printable, non-space ASCII at both ends (a JSON object) cannot trim to anything else.
  const first = data.charCodeAt(0);
  const last = data.charCodeAt(data.length - 1);
  if (first > 0x20 && first < 0x7f && last > 0x20 && last < 0x7f) return 'frame';
  const trimmed = data.trim();
  if (trimmed.length === 0) return 'empty';
  return trimmed === '[DONE]' ? 'done' : 'frame';
}

/**
 * The values of the `data:` lines in `text` (whole lines only: CRLF or LF ends), each without the
 * one space the field may start with: how an event's data is read when the bytes are at hand
 * rather than parsed as they flow (a passed-through stream inspected after the fact).
 */
export function dataLinesOf(text: string): string[] {
  const values: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('data:')) values.push(line.charCodeAt(5) === 0x20 ? line.slice(6) : line.slice(5));
  }
  return values;
}

/** The stream terminator of chat-completion streams. */
export const DONE_EVENT = 'data: [DONE]\n\n';
export const DONE_EVENT_BYTES: Buffer = Buffer.from(DONE_EVENT);

/**
 * One data event. JSON from JSON.stringify has no raw line breaks, so the common case is one
 * concatenation; any other text is split into one `data:` line per line so that it round-trips.
 */
export function formatDataEvent(data: string): string {
  return `${dataLines(data)}\n`;
}

/** A comment as a block of its own (a keep-alive): `:text`, then a blank line. */
export function formatComment(text: string): string {
  return `${prefixLines(':', text)}\n`;
}

/** A full event; fields absent are not written. `data` is required: blocks without it dispatch nothing. */
export function formatEvent(event: {
  readonly event?: string | undefined;
  readonly data: string;
  readonly id?: string | undefined;
  readonly retry?: number | undefined;
}): string {
  let out = '';
  if (event.event !== undefined) out += `event: ${singleLine(event.event)}\n`;
  if (event.id !== undefined) out += `id: ${singleLine(event.id)}\n`;
  if (event.retry !== undefined) out += `retry: ${Math.max(0, Math.trunc(event.retry))}\n`;
  return `${out}${dataLines(event.data)}\n`;
}

function dataLines(data: string): string {
  return prefixLines('data: ', data);
}

function prefixLines(prefix: string, text: string): string {
  if (text.indexOf('\n') === -1 && text.indexOf('\r') === -1) return `${prefix}${text}\n`;
  let out = '';
  for (const line of text.split(LINE_BREAK)) out += `${prefix}${line}\n`;
  return out;
}

/** `event` and `id` values cannot span lines; a line break would start a new field. */
function singleLine(value: string): string {
  return value.replace(LINE_BREAKS, ' ');
}

const LINE_BREAK = /\r\n|\r|\n/;
const LINE_BREAKS = /\r\n|\r|\n/g;
