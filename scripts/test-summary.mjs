// The closing line of `make test`, from vitest's JSON report:
//   tests: <passed> passed, <failed> failed[, <skipped> skipped][, <todo> todo]
// (skipped and todo only when there are any). A test file that failed outside its tests (it did
// not load, or a hook threw) counts as one failure.
//
//   node scripts/test-summary.mjs <report.json> [vitest's exit status]
//
// Exits 1 when anything failed, when vitest exited non-zero (an unhandled error fails the run
// without failing a test), when no test ran, or when the report is missing or not a vitest report;
// the reason is printed before the closing line.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [file, statusArg] = process.argv.slice(2);
const problem = (message) => console.error(`test summary: ${message}`);

if (file === undefined) {
  problem('usage: node scripts/test-summary.mjs <vitest-report.json> [vitest exit status]');
  process.exit(2);
}
const vitestStatus = statusArg === undefined ? 0 : Number(statusArg);

let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (error) {
  problem(
    error.code === 'ENOENT'
      ? `no report at ${file}: vitest ended before writing it (see its output above)`
      : `cannot read the report ${file}: ${error.message}`,
  );
  process.exit(1);
}
const count = (name) => report?.[name];
if (!['numPassedTests', 'numFailedTests', 'numPendingTests'].every((n) => Number.isInteger(count(n)))) {
  problem(`${file} is not a vitest JSON report (no test counts in it)`);
  process.exit(1);
}

const fileFailures = (Array.isArray(report.testResults) ? report.testResults : []).filter(
  (result) =>
    result.status === 'failed' && !(result.assertionResults ?? []).some((test) => test.status === 'failed'),
);
for (const result of fileFailures) {
  const name = relative(process.cwd(), result.name ?? '?');
  problem(`${name} failed outside its tests: ${result.message || 'a hook failed (see the output above)'}`);
}

const passed = count('numPassedTests');
const failed = count('numFailedTests') + fileFailures.length;
const skipped = count('numPendingTests');
const todo = count('numTodoTests') ?? 0;

let ok = failed === 0;
if (ok && !(Number.isInteger(vitestStatus) && vitestStatus === 0)) {
  problem(
    `vitest exited with status ${statusArg} although no test failed: an error outside the tests (see its output above)`,
  );
  ok = false;
}
if (ok && report.success === false) {
  problem('vitest reports the run as failed although no test failed (see its output above)');
  ok = false;
}
if (ok && passed === 0) {
  problem('no test ran');
  ok = false;
}

let line = `tests: ${passed} passed, ${failed} failed`;
if (skipped > 0) line += `, ${skipped} skipped`;
if (todo > 0) line += `, ${todo} todo`;
console.log(line);
process.exit(ok ? 0 : 1);
