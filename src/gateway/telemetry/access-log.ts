import { closeSync, openSync, write } from 'node:fs';

/** Where the access log goes: `stdout`, `stderr`, a file path (appended to), or `off`. */
export type AccessLogTarget = string;

/**
 * One finished request, as the access log writes it. Identifiers and counts only: never a key, a
 * prompt, a completion or an upstream error body.
 */
export interface AccessLogEntry {
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  /** The alias (empty when none was resolved). */
  readonly model: string;
  /** The provider that served the response (empty when none did). */
  readonly provider: string;
  /** The status sent, or 499 when the client left before one was. */
  readonly status: number;
  readonly outcome: string;
  /** Upstream attempts made (0 when the gateway answered itself). */
  readonly attempts: number;
  /** Milliseconds (written to a tenth, as are all times in the line). */
  readonly durationMs: number;
  /** Time to the first data frame of a streamed response, else null. */
  readonly ttftMs: number | null;
  readonly promptTokens: number | null;
  readonly completionTokens: number | null;
  readonly reasoningTokens: number | null;
  readonly cachedPromptTokens: number | null;
  readonly cacheWriteTokens: number | null;
  /**
   * What the request cost at the configured prices, as charged to its spend budgets (its
   * reservation when a served response never reported usage); null when nothing was priced.
   */
  readonly cost: number | null;
  /** The key's account label, else null. */
  readonly account: string | null;
  /** The key's name in `key_definitions`, else null (unnamed keys and open targets). */
  readonly key: string | null;
  readonly traffic: string;
  /** The request's trace id when it is traced, else null. */
  readonly traceId: string | null;
  /** The client's address as the socket saw it. */
  readonly client: string | null;
}

export interface AccessLog {
  write(entry: AccessLogEntry): void;
  /** Writes out what is buffered and waits (at most 2 s) for it to be written (at shutdown). */
  flush(): Promise<void>;
}

/**
 * Lines are encoded into batches of this many bytes (about 550 lines): an asynchronous write costs
 * some 40 µs of CPU whatever its size, so a large batch makes it a small share of a request...
 */
const BATCH_BYTES = 256 * 1024;
/** ...written at once when full, or after this long, so a quiet gateway's lines appear promptly. */
const FLUSH_MS = 200;
/** Batches waiting for a slow destination beyond this are dropped (counted), never held without bound. */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** A full pipe (EAGAIN) is tried again after this long. */
const RETRY_MS = 10;
/** Dropped lines are reported at most this often (summed). */
const DROP_REPORT_MS = 10_000;
/** The longest shutdown waits for the last batches. */
const FLUSH_WAIT_MS = 2_000;
/**
 * Written batch buffers kept for reuse: a new buffer per batch is external memory V8 counts
 * towards its next collection, which cost more than building the lines.
 */
const SPARE_BATCHES = 4;

interface Pending {
  /** What is still to be written. */
  bytes: Buffer;
  /** The batch buffer the bytes are in, reused once written (undefined for a line of its own). */
  readonly batch: Buffer | undefined;
  readonly size: number;
  readonly lines: number;
}

/**
 * The access log: one JSON line per finished request. A line is built by hand (a fixed shape: no
 * logger pass over an object), encoded into a batch buffer, and batches are written with one
 * asynchronous write each, one at a time in order: a request costs the line and a copy, never a
 * wait for the disk or the pipe. A destination that cannot keep up loses whole batches beyond
 * 8 MiB queued (`onDropped` is told how many lines, at most every 10 s), rather than the process
 * growing. A timer writes a batch that stays small; at shutdown `flush` writes out the rest and
 * waits for it (at most 2 s). Undefined when `off`.
 */
export function createAccessLog(
  target: AccessLogTarget,
  onDropped: (lines: number) => void = () => {},
): AccessLog | undefined {
  if (target === 'off') return undefined;
  const fd = target === 'stdout' ? 1 : target === 'stderr' ? 2 : openAppend(target);
  const spare: Buffer[] = [];
  let batch: Buffer = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  let lines = 0;
  const queue: Pending[] = [];
  let queuedBytes = 0;
  let writing = false;
  let timer: NodeJS.Timeout | undefined;
  let dropped = 0;
  let droppedReportedAt = 0;
  const drop = (count: number): void => {
    dropped += count;
    const now = Date.now();
    if (now - droppedReportedAt < DROP_REPORT_MS) return;
    droppedReportedAt = now;
    onDropped(dropped);
    dropped = 0;
  };
  const recycle = (buffer: Buffer | undefined): void => {
    if (buffer !== undefined && spare.length < SPARE_BATCHES) spare.push(buffer);
  };
  const enqueue = (bytes: Buffer, from: Buffer | undefined, count: number): void => {
    if (queuedBytes + bytes.length > MAX_QUEUED_BYTES) {
      recycle(from);
      drop(count);
      return;
    }
    queue.push({ bytes, batch: from, size: bytes.length, lines: count });
    queuedBytes += bytes.length;
    if (!writing) pump();
  };

  const pump = (): void => {
    const next = queue[0];
    if (next === undefined) {
      writing = false;
      return;
    }
    writing = true;
    write(fd, next.bytes, 0, next.bytes.length, null, (error, written) => {
      if (error !== null) {
        // A full non-blocking pipe: try again shortly. Any other error loses this batch.
        if (error.code === 'EAGAIN') {
          setTimeout(pump, RETRY_MS).unref();
          return;
        }
        drop(next.lines);
      } else if (written < next.bytes.length) {
        next.bytes = next.bytes.subarray(written);
        pump();
        return;
      }
      queue.shift();
      queuedBytes -= next.size;
      recycle(next.batch);
      pump();
    });
  };
  const writeBatch = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (used === 0) return;
    enqueue(batch.subarray(0, used), batch, lines);
    batch = spare.pop() ?? Buffer.allocUnsafe(BATCH_BYTES);
    used = 0;
    lines = 0;
  };
  return {
    write(entry) {
      const line = accessLine(entry);
      // A UTF-16 unit takes at most 3 bytes in UTF-8; a line longer than a batch (a huge path) would be
      // cut by the buffer's end, so the batch is written first and the line gets a batch of its own.
      if (used + line.length * 3 > BATCH_BYTES) writeBatch();
      if (line.length * 3 > BATCH_BYTES) {
        enqueue(Buffer.from(line), undefined, 1);
        return;
      }
      used += batch.write(line, used);
      lines++;
      timer ??= setTimeout(writeBatch, FLUSH_MS).unref();
    },
    async flush() {
      writeBatch();
      const deadline = Date.now() + FLUSH_WAIT_MS;
      while (writing && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    },
  };
}

function openAppend(path: string): number {
  return openSync(path, 'a');
}

/** Why the access log cannot go to `target` (a file that cannot be opened for appending), if so. */
export function accessLogTargetProblem(target: AccessLogTarget): string | undefined {
  if (target === 'off' || target === 'stdout' || target === 'stderr') return undefined;
  try {
    closeSync(openAppend(target));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    return `--access-log: cannot open ${target} for appending (${code}); give a writable path, stdout, stderr or off.`;
  }
}

/** Text that JSON needs no escapes for (printable ASCII without `"` and `\`): quoted as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const text = (value: string | null): string =>
  value === null ? 'null' : PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
const count = (value: number | null): string => (value === null ? 'null' : String(value));
/**
 * Milliseconds to a tenth, from integers: a fraction's shortest decimal form costs several times
 * more to find than two small integers' digits.
 */
const millis = (value: number | null): string => {
  if (value === null) return 'null';
  const tenths = Math.round(value * 10);
  const whole = Math.trunc(tenths / 10);
  const tenth = Math.abs(tenths % 10);
  return tenth === 0 ? String(whole) : `${tenths < 0 && whole === 0 ? '-' : ''}${whole}.${tenth}`;
};

// Many requests finish within one millisecond: its ISO string is made once.
let isoMs = 0;
let iso = '';
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}

/** One line: `log`, `time`, the entry's fields in a fixed order, `msg`. */
export function accessLine(e: AccessLogEntry): string {
  return (
    `{"log":"access","time":"${isoNow()}","requestId":${text(e.requestId)}` +
    `,"method":${text(e.method)},"path":${text(e.path)},"model":${text(e.model)}` +
    `,"provider":${text(e.provider)},"status":${e.status},"outcome":"${e.outcome}"` +
    `,"attempts":${e.attempts},"durationMs":${millis(e.durationMs)},"ttftMs":${millis(e.ttftMs)}` +
    `,"promptTokens":${count(e.promptTokens)},"completionTokens":${count(e.completionTokens)}` +
    `,"reasoningTokens":${count(e.reasoningTokens)},"cachedPromptTokens":${count(e.cachedPromptTokens)}` +
    `,"cacheWriteTokens":${count(e.cacheWriteTokens)},"cost":${count(e.cost)}` +
    `,"account":${text(e.account)},"key":${text(e.key)},"traffic":"${e.traffic}"` +
    `,"traceId":${text(e.traceId)},"client":${text(e.client)},"msg":"request finished"}\n`
  );
}
