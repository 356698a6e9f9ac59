import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// Integration tests spawn the compiled programs, so compile once before any suite runs: a test must
// never exercise a stale dist/. Type errors do not stop the run (tsc still emits); `make typecheck`
// is the gate for those, and it runs before the suites in `make test`.
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    process.stderr.write(`build reported errors (tests run on the emitted output):\n${result.stdout}\n`);
  }
}
