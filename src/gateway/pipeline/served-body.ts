import { dataLinesOf } from '../../lib/sse.js';
import { embeddedError, eventError } from '../api/embedded-error.js';
import type { ApiSurface } from '../api/surfaces.js';
import { parseJsonSafe } from './leading-frames.js';
import { messagesStreamUsage, usageFromBytes, usageFromText, type TokenUsage } from './usage.js';

/**
 * What a body passed through unchanged carried, read as it flows past without holding it up: an
 * error the provider served inside a 200 (the request's outcome is then `upstream_error`), and
 * whether an event stream reached its end.
 */

/** The bytes every error object carries as a key: `"error"` cannot occur inside a JSON string. */
const ERROR_KEY = Buffer.from('"error"');

/**
 * How a passed-through event stream ended, judged without parsing it as it flows. Per chunk: two
 * field writes and one byte search (an error event carries `"error"` as a key, which an escaped
 * string cannot contain; a chunk that has it is parsed to be sure). At the end: the last chunks,
 * kept by reference, are read once: two for the usage chunk, three for the closing `[DONE]` (14
 * bytes; a provider writes each event in one write, and a read splits it at most in two places).
 */
export class ServedStream {
  #beforePrevious: Buffer | undefined;
  #previous: Buffer | undefined;
  #last: Buffer | undefined;
  #sawError = false;
  /** The first error event's error value (embedded-error.ts), once one was seen in a chunk. */
  error: unknown;
  /** When the first chunk with a data frame arrived (`performance.now()`): the first token. */
  firstDataAt: number | undefined;

  readonly #surface: ApiSurface | undefined;
  /** The bytes of the surface's first-token event type; undefined: any data frame is the first token. */
  readonly #firstToken: Buffer | undefined;
  /** The bytes of the surface's usage-opening event type, and the chunk that carried it. */
  readonly #usageStart: Buffer | undefined;
  #startChunk: Buffer | undefined;

  /** Starts from the bytes already read before the body was handed over (the held prefix). */
  constructor(surface: ApiSurface | undefined, prefix: readonly Buffer[] = []) {
    this.#surface = surface;
    this.#firstToken = typeMarker(surface?.firstTokenEvent);
    this.#usageStart = typeMarker(surface?.usageStartEvent);
    for (const chunk of prefix) this.push(chunk);
  }

  push(chunk: Buffer): void {
    this.#beforePrevious = this.#previous;
    this.#previous = this.#last;
    this.#last = chunk;
    if (this.firstDataAt === undefined) {
      const firstToken = this.#firstToken;
      if (firstToken === undefined ? startsData(chunk) : chunk.includes(firstToken))
        this.firstDataAt = performance.now();
    }
    if (this.#usageStart !== undefined && this.#startChunk === undefined && chunk.includes(this.#usageStart))
      this.#startChunk = chunk;
    if (!this.#sawError && chunk.includes(ERROR_KEY)) {
      this.error = errorEventIn(this.#surface, chunk.toString('utf8'));
      this.#sawError = this.error !== undefined;
    }
  }

  /**
   * The usage the stream reported: the usage chunk comes last before `[DONE]` (chat and text
   * completions), is the last event's `response.usage` in the Responses API, and is opened by
   * `message_start` and completed by the last `message_delta` in the Messages API.
   */
  usage(): TokenUsage | undefined {
    if (this.#usageStart !== undefined)
      return messagesStreamUsage(this.#startChunk?.toString('utf8'), this.#text());
    return usageFromText(this.#text());
  }

  /** The kept bytes as text. */
  #text(): string {
    const last = this.#last;
    if (last === undefined) return '';
    const previous = this.#previous;
    return (previous === undefined ? '' : previous.toString('utf8')) + last.toString('utf8');
  }

  /**
   * The stream ended with its surface's end marker (`[DONE]`, an error before it or not); false for
   * a surface without one.
   */
  endedWithMarker(): boolean {
    const end = this.#surface?.streamEnd;
    if (end === undefined) return false;
    let tail = '';
    for (const chunk of [this.#last, this.#previous, this.#beforePrevious]) {
      if (chunk === undefined || tail.length >= END_TAIL_BYTES) break;
      tail = chunk.toString('latin1', Math.max(0, chunk.length - END_TAIL_BYTES)) + tail;
    }
    return end.test(tail);
  }

  /**
   * The bytes so far stop inside an event (not after the blank line that ends one): nothing can be
   * written after them as an event of its own.
   */
  endsInsideEvent(): boolean {
    const last = this.#last;
    if (last === undefined) return false;
    const tail = last.length >= 2 ? last : Buffer.concat([this.#previous ?? EMPTY, last]);
    const n = tail.length;
    if (n === 0) return false;
    const end = tail[n - 1];
    if (end === 0x0d) return tail[n - 2] !== 0x0d;
    return end !== 0x0a || (tail[n - 2] !== 0x0a && !(tail[n - 2] === 0x0d && tail[n - 3] === 0x0a));
  }

  /** An error event was seen in a chunk so far (one split across chunks shows only at the end). */
  errorSeen(): boolean {
    return this.#sawError;
  }

  /**
   * How the stream went: an error event anywhere in it (an error served, even if `[DONE]` came
   * after it), else whether it ended with its end marker, else neither (the provider stopped without a
   * word, or mid-event).
   */
  streamEnd(): 'error' | 'done' | 'other' {
    if (this.#sawError) return 'error';
    if (this.endedWithMarker()) return 'done';
    const text = this.#text();
    // A last event split across the two chunks was not whole in either.
    return text.includes('"error"') && errorEventIn(this.#surface, text) !== undefined ? 'error' : 'other';
  }
}

/** The quoted event type as it appears in an event's data (`"type": "<name>"` carries it). */
const TYPE_MARKERS = new Map<string, Buffer>();

function typeMarker(type: string | undefined): Buffer | undefined {
  if (type === undefined) return undefined;
  let marker = TYPE_MARKERS.get(type);
  if (marker === undefined) TYPE_MARKERS.set(type, (marker = Buffer.from(`"${type}"`)));
  return marker;
}

const EMPTY = Buffer.alloc(0);
const DATA_FIELD = Buffer.from('data:');
const DONE_DATA = /^data: ?\[DONE\]/;

/** The chunk carries a data frame other than a leading `[DONE]` (comments and event names aside). */
function startsData(chunk: Buffer): boolean {
  const at = chunk.indexOf(DATA_FIELD);
  if (at < 0) return false;
  return !DONE_DATA.test(chunk.toString('latin1', at, Math.min(chunk.length, at + 16)));
}

/** How much of a stream's end is read for its end marker (and keep-alive comments after it). */
const END_TAIL_BYTES = 256;

/** The error of the first complete `data:` line in `text` that is an error event of the surface (embedded-error.ts). */
function errorEventIn(surface: ApiSurface | undefined, text: string): unknown {
  for (const data of dataLinesOf(text)) {
    const error = eventError(surface, parseJsonSafe(data));
    if (error !== undefined) return error;
  }
  return undefined;
}

/** Largest non-streamed body kept (by reference) to be read at its end; beyond it, nothing is read. */
const MAX_JSON_BYTES = 256 * 1024;

/** `"error"` as a key with a value other than null (a body may carry `"error": null`). */
const ERROR_VALUE = /"error"\s*:\s*[^\sn]/;
/** vLLM's error object: `"object": "error"`. */
const OBJECT_ERROR = /"object"\s*:\s*"error"/;

/**
 * A non-streamed JSON body: its chunks are kept by reference (it arrives at once and is small) and
 * read once when it ends. Per chunk, one byte search for `"error"`: a body in one chunk without it
 * is not even turned into text. It is parsed only when it carries an `error` that is not null, to
 * tell whether that is the body's own error (an error inside a 200) or a nested field.
 */
export class ServedJson {
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  #errorKey = false;

  constructor(prefix: readonly Buffer[]) {
    for (const chunk of prefix) this.push(chunk);
  }

  push(chunk: Buffer): void {
    if (this.#bytes > MAX_JSON_BYTES) return;
    this.#bytes += chunk.length;
    if (this.#bytes > MAX_JSON_BYTES) {
      this.#chunks.length = 0;
      return;
    }
    this.#chunks.push(chunk);
    if (!this.#errorKey) this.#errorKey = chunk.includes(ERROR_KEY);
  }

  /** The usage the body reported (near its end, for every endpoint). */
  usage(): TokenUsage | undefined {
    const chunks = this.#chunks;
    if (chunks.length === 0) return undefined;
    return usageFromBytes(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  }

  /** The body is an error object (an error inside a 200), judged by the one rule. */
  isError(): boolean {
    const chunks = this.#chunks;
    // In several chunks, the key may be cut in two: then the whole text decides.
    if (chunks.length === 0 || (!this.#errorKey && chunks.length === 1)) return false;
    const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
    if (!ERROR_VALUE.test(text) && !OBJECT_ERROR.test(text)) return false;
    return embeddedError(parseJsonSafe(text)) !== undefined;
  }
}
