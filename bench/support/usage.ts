import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * `--help` (or `-h`) for the bench tools: prints the script's own header comment, where its usage
 * is written once, and exits. Called before the script parses its arguments; does nothing in a
 * module imported by another script (only the script node was started with answers).
 */
export function exitWithUsageIfAsked(
  scriptUrl: string,
  argv: readonly string[] = process.argv.slice(2),
): void {
  if (!argv.includes('--help') && !argv.includes('-h')) return;
  if (process.argv[1] === undefined || pathToFileURL(process.argv[1]).href !== scriptUrl) return;
  const source = readFileSync(fileURLToPath(scriptUrl), 'utf8');
  const header = /\/\*\*([\s\S]*?)\*\//.exec(source)?.[1] ?? '';
  const text = header
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
  process.stdout.write(`${text}\n`);
  process.exit(0);
}
