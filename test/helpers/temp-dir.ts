import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();
let registered = false;

/**
 * A fresh directory under the test run's scratch folder (made and removed by the global setup) or,
 * outside a run, the system's temp directory; removed when the test process exits too, when it
 * exits normally. The suites that make model files and configs for processes they start would
 * otherwise leave one behind per run.
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(process.env.LLM_GATEWAY_TEST_TMP ?? tmpdir(), prefix));
  made.add(dir);
  if (!registered) {
    registered = true;
    process.once('exit', () => {
      for (const path of made) rmSync(path, { recursive: true, force: true });
    });
  }
  return dir;
}
