import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout, one line per event. The level comes from `LOG_LEVEL`. Log lines
 * carry identifiers and counts only, never prompts or completions.
 */
export function createLogger(level?: LevelWithSilent): Logger {
  return pino({
    name: 'sim',
    level: level ?? (process.env.LOG_LEVEL as LevelWithSilent | undefined) ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
