import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Every process a test run starts inherits this variable (the workers are forked after setup, and
 * the test helpers pass their environment on). A worker stopped by a timeout cannot stop the
 * programs its tests spawned, so the teardown finds them by it and stops them.
 */
const RUN_MARKER = 'LLM_GATEWAY_TEST_RUN';

/** Where `tempDir` makes the run's folders (temp-dir.ts). */
const SCRATCH_DIR = 'LLM_GATEWAY_TEST_TMP';

/** The parent of a process, from /proc/<pid>/stat (the field after the parenthesised name). */
function parentOf(pid: string): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/**
 * Processes whose environment carries `marker=id`, except this one and its own children (the test
 * workers, which vitest stops itself); Linux only.
 */
function markedProcesses(marker: string, id: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const needle = `${marker}=${id}\0`;
  return entries
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .filter((pid) => {
      try {
        return (
          `${readFileSync(`/proc/${pid}/environ`, 'latin1')}\0`.includes(needle) &&
          parentOf(pid) !== process.pid
        );
      } catch {
        return false; // gone, or not ours to read
      }
    })
    .map(Number);
}

function stopLeftovers(id: string): void {
  const leftovers = markedProcesses(RUN_MARKER, id);
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (leftovers.length > 0)
    process.stderr.write(`stopped ${leftovers.length} process(es) the tests left running\n`);
}

// Integration tests spawn the compiled programs, so compile once before any suite runs: a test must
// never exercise a stale dist/. Type errors do not stop the run (tsc still emits); `make typecheck`
// is the gate for those, and it runs before the suites in `make test`.
export default function setup(): () => void {
  const id = randomUUID();
  process.env[RUN_MARKER] = id;
  // The folders tests make (`tempDir`) go under one folder of the run, removed when it ends: a
  // worker's own exit hooks do not run when vitest stops it.
  const scratch = mkdtempSync(join(tmpdir(), 'llm-gateway-tests-'));
  process.env[SCRATCH_DIR] = scratch;
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    process.stderr.write(`build reported errors (tests run on the emitted output):\n${result.stdout}\n`);
  }
  return () => {
    stopLeftovers(id);
    rmSync(scratch, { recursive: true, force: true });
  };
}
