import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One structured log line (pino JSON) printed by a spawned program. */
export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

export interface RunningProgram {
  proc: ChildProcess;
  /** Every JSON log line seen so far, in order. */
  logs: LogLine[];
  /** Raw stdout and stderr text that was not JSON (help output, usage errors). */
  text: () => string;
  /** Resolves with the first log line (already seen or future) matching the predicate. */
  waitForLog: (predicate: (line: LogLine) => boolean, timeoutMs?: number) => Promise<LogLine>;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL if still running; safe to call twice. */
  kill: () => Promise<void>;
}

/**
 * Spawns `bin/<name>.js` with the current node. Logs are parsed line by line so tests can wait for
 * "listening" (and read the OS-chosen port from it) instead of sleeping.
 */
export function spawnProgram(
  name: 'gateway' | 'sim',
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): RunningProgram {
  const proc = spawn(process.execPath, [`${ROOT}bin/${name}.js`, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'debug', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  let rawText = '';
  const waiters: { predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];

  const onLine = (line: string): void => {
    if (line.startsWith('{')) {
      try {
        const parsed = JSON.parse(line) as LogLine;
        logs.push(parsed);
        for (let i = waiters.length - 1; i >= 0; i--) {
          const waiter = waiters[i]!;
          if (waiter.predicate(parsed)) {
            waiters.splice(i, 1);
            waiter.resolve(parsed);
          }
        }
        return;
      } catch {
        // not JSON after all: keep it as text
      }
    }
    rawText += line + '\n';
  };
  for (const stream of [proc.stdout!, proc.stderr!]) {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        onLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
    });
    stream.on('end', () => {
      if (pending) onLine(pending);
      pending = '';
    });
  }

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => resolve({ code, signal }));
  });

  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> => {
    const seen = logs.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `${name}: no matching log line within ${timeoutMs} ms; logs:\n` +
              logs.map((l) => JSON.stringify(l)).join('\n') +
              `\ntext:\n${rawText}`,
          ),
        );
      }, timeoutMs);
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(
            `${name} exited (code ${code}, signal ${signal}) before the expected log line; logs:\n` +
              logs.map((l) => JSON.stringify(l)).join('\n') +
              `\ntext:\n${rawText}`,
          ),
        );
      });
      waiters.push({
        predicate,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  };

  const kill = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  };

  return { proc, logs, text: () => rawText, waitForLog, exited, kill };
}
