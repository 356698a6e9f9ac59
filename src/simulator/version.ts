import { readFileSync } from 'node:fs';

/**
 * The package version, read from package.json at the repository root. The path is the same from
 * src/simulator and dist/simulator, so tests and the built program agree.
 */
export function packageVersion(): string {
  const raw = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  const parsed = JSON.parse(raw) as { version?: unknown };
  return typeof parsed.version === 'string' ? parsed.version : '0.0.0';
}
