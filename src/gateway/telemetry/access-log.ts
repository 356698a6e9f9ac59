import { pino, type DestinationStream, type Logger } from 'pino';

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

/**
 * The access log: one JSON line per finished request, buffered and written asynchronously (a
 * request never waits for the disk or the pipe), flushed at shutdown. Undefined when `off`.
 */
export function createAccessLog(target: AccessLogTarget): AccessLog | undefined {
  if (target === 'off') return undefined;
  const dest = target === 'stdout' ? 1 : target === 'stderr' ? 2 : target;
  const destination = pino.destination({ dest, sync: false, mkdir: typeof dest === 'string' });
  const logger: Logger = pino(
    {
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: () => ({ log: 'access' }) },
    },
    destination as DestinationStream,
  );
  return {
    write: (entry) => logger.info(entry, 'request finished'),
    flush: () => {
      try {
        destination.flushSync();
      } catch {
        // Not open yet (a file still opening): nothing was buffered that could be written.
      }
    },
  };
}
