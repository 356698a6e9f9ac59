import { pino } from 'pino';

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
  readonly durationMs: number;
  /** Time to the first data frame of a streamed response, else null. */
  readonly ttftMs: number | null;
  readonly promptTokens: number | null;
  readonly completionTokens: number | null;
  readonly reasoningTokens: number | null;
  readonly cachedPromptTokens: number | null;
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
  /** Writes out what is buffered (at shutdown). */
  flush(): void;
}

/** Lines are written in batches of about this many characters... */
const BATCH_CHARS = 16_384;
/** ...or after this long, so a quiet gateway's lines still appear promptly. */
const FLUSH_MS = 200;

/**
 * The access log: one JSON line per finished request. Lines are built by hand (a fixed shape: no
 * logger pass over the object) and written in batches on an asynchronous SonicBoom destination, so
 * a request costs one string append and never waits for the disk or the pipe; a timer writes out a
 * batch that stays small, and shutdown flushes the rest. Undefined when `off`.
 */
export function createAccessLog(target: AccessLogTarget): AccessLog | undefined {
  if (target === 'off') return undefined;
  const dest = target === 'stdout' ? 1 : target === 'stderr' ? 2 : target;
  const destination = pino.destination({ dest, sync: false, mkdir: typeof dest === 'string' });
  let batch = '';
  let timer: NodeJS.Timeout | undefined;
  const writeBatch = (): void => {
    timer = undefined;
    if (batch.length === 0) return;
    destination.write(batch);
    batch = '';
  };
  return {
    write(entry) {
      batch += accessLine(entry);
      if (batch.length >= BATCH_CHARS) {
        clearTimeout(timer);
        writeBatch();
      } else {
        timer ??= setTimeout(writeBatch, FLUSH_MS).unref();
      }
    },
    flush() {
      clearTimeout(timer);
      writeBatch();
      try {
        destination.flushSync();
      } catch {
        // Not open yet (a file still opening): what was written is queued in the destination.
      }
    },
  };
}

/** Text that JSON needs no escapes for (printable ASCII without `"` and `\`): quoted as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const text = (value: string | null): string =>
  value === null ? 'null' : PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
const count = (value: number | null): string => (value === null ? 'null' : String(value));

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
    `,"attempts":${e.attempts},"durationMs":${e.durationMs},"ttftMs":${count(e.ttftMs)}` +
    `,"promptTokens":${count(e.promptTokens)},"completionTokens":${count(e.completionTokens)}` +
    `,"reasoningTokens":${count(e.reasoningTokens)},"cachedPromptTokens":${count(e.cachedPromptTokens)}` +
    `,"account":${text(e.account)},"key":${text(e.key)},"traffic":"${e.traffic}"` +
    `,"traceId":${text(e.traceId)},"client":${text(e.client)},"msg":"request finished"}\n`
  );
}
