import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
}

/**
 * Structured JSON logs on stdout. The level comes from `LOG_LEVEL` unless given. Log lines never
 * carry keys, prompts, completions or upstream bodies: callers log identifiers and counts only.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? (process.env.LOG_LEVEL as LevelWithSilent | undefined) ?? 'info';
  return pino({
    name: options.name ?? 'gateway',
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
