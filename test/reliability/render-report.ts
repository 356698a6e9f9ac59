/*
 * Renders docs/reliability.md from the results the reliability suites wrote into
 * test/.tmp/reliability/ (run the suites first: `make test` or `make soak`).
 *
 *   node test/reliability/render-report.ts
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderReport, type ResultsBundle } from './report.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const resultsDir = `${root}test/.tmp/reliability`;
const target = `${root}docs/reliability.md`;

interface ResultsFile {
  suite: string;
  soak: boolean;
  data: unknown;
}

function read(suite: string): ResultsFile | undefined {
  const path = `${resultsDir}/${suite}.json`;
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as ResultsFile;
}

const files = {
  faultMatrix: read('fault-matrix'),
  messagesFaultMatrix: read('messages-fault-matrix'),
  upstreamFailures: read('upstream-failures'),
  loadLifecycle: read('load-lifecycle'),
  hostileInput: read('hostile-input'),
  authSecurity: read('auth-security'),
  fuzz: read('fuzz'),
};

if (files.faultMatrix === undefined) {
  process.stderr.write(
    `no fault-matrix results in ${resultsDir}: run the reliability suites first (make test)\n`,
  );
  process.exit(1);
}

const bundle: ResultsBundle = { soak: Object.values(files).some((f) => f?.soak === true) };
for (const [name, file] of Object.entries(files)) {
  if (file !== undefined) (bundle as unknown as Record<string, unknown>)[name] = file.data;
}

writeFileSync(target, renderReport(bundle));
const present = Object.entries(files)
  .filter(([, f]) => f !== undefined)
  .map(([name]) => name);
process.stdout.write(`wrote ${target} from ${present.join(', ')}\n`);
