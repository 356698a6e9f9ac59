import { dataLinesOf } from '../../lib/sse.js';
import { isUsageOnlyChunk } from '../strict/index.js';
import { parseJsonSafe } from './leading-frames.js';

const USAGE_KEY = Buffer.from('"usage"');
const LF_LF = Buffer.from('\n\n');
const CRLF_CRLF = Buffer.from('\r\n\r\n');

/**
 * Removes the usage-only chunk from a passed-through event stream whose usage the gateway asked
 * for and the client did not. Every other byte passes unchanged and in order; an unfinished event
 * waits (a copy of it) until its end arrives, since it may be the one to remove. Events are checked
 * only when they contain `"usage"`.
 */
export class UsageChunkFilter {
  #pending: Buffer | undefined;

  /** The bytes of `chunk` to write now (possibly empty). */
  push(chunk: Buffer): Buffer {
    const data = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
    const end = lastEventEnd(data);
    this.#pending = end === data.length ? undefined : Buffer.from(data.subarray(end));
    const complete = data.subarray(0, end);
    if (!complete.includes(USAGE_KEY)) return complete;
    return withoutUsageChunks(complete);
  }

  /** What is left when the stream ends (an unfinished event is passed as it came). */
  end(): Buffer | undefined {
    const rest = this.#pending;
    this.#pending = undefined;
    return rest;
  }
}

/** The index just past the last event terminator (blank line) in `data`, or 0. */
function lastEventEnd(data: Buffer): number {
  const lf = data.lastIndexOf(LF_LF);
  const crlf = data.lastIndexOf(CRLF_CRLF);
  return Math.max(lf < 0 ? 0 : lf + 2, crlf < 0 ? 0 : crlf + 4);
}

/** `events` (complete events only) without those whose data is a usage-only chunk. */
function withoutUsageChunks(events: Buffer): Buffer {
  const kept: Buffer[] = [];
  let start = 0;
  while (start < events.length) {
    const lf = events.indexOf(LF_LF, start);
    const crlf = events.indexOf(CRLF_CRLF, start);
    const end =
      lf < 0 && crlf < 0 ? events.length : lf < 0 ? crlf + 4 : crlf < 0 ? lf + 2 : Math.min(lf + 2, crlf + 4);
    const event = events.subarray(start, end);
    if (!(event.includes(USAGE_KEY) && isUsageOnlyChunk(parseJsonSafe(dataOf(event))))) kept.push(event);
    start = end;
  }
  return kept.length === 1 ? kept[0]! : Buffer.concat(kept);
}

/** The data of one event: its `data:` lines, joined. */
function dataOf(event: Buffer): string {
  return dataLinesOf(event.toString('utf8')).join('\n');
}
