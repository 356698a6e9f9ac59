/**
 * scripts/test-summary.mjs, the closing line of `make test`, on real vitest JSON reports: vitest
 * runs on scratch fixtures here, and the summary reads what it wrote.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, removeLater, scratchDir, vitestReport } from './support.ts';

const scratch: string[] = [];
afterAll(removeLater(scratch));

function summary(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(ROOT, 'scripts/test-summary.mjs'), ...args], {
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const reports: Record<string, { report: string; status: number | null }> = {};

beforeAll(async () => {
  const dir = scratchDir('test-summary');
  scratch.push(dir);
  const runs = {
    mixed: {
      'a.fixture.mjs': [
        "test('passes', () => {});",
        "test('fails', () => { expect(1).toBe(2); });",
        "test.skip('is skipped', () => {});",
        "test.todo('is to do');",
      ].join('\n'),
    },
    green: { 'a.fixture.mjs': "test('one', () => {});\ntest('two', () => {});\n" },
    skipped: { 'a.fixture.mjs': "test('one', () => {});\ntest.skip('two', () => {});\n" },
    unloadable: {
      'a.fixture.mjs': "test('one', () => {});\n",
      'b.fixture.mjs': "throw new Error('this file does not load');\n",
    },
    unhandled: {
      'a.fixture.mjs': [
        "test('passes, and leaves an error behind', () => { setTimeout(() => { throw new Error('late'); }); });",
        "test('waits', () => new Promise((resolve) => setTimeout(resolve, 50)));",
      ].join('\n'),
    },
  };
  await Promise.all(
    Object.entries(runs).map(async ([name, files]) => {
      reports[name] = await vitestReport(join(dir, name), files);
    }),
  );
}, 120_000);

describe('scripts/test-summary.mjs', () => {
  it('prints passed and failed, then skipped and todo only when there are any, and fails on a failure', () => {
    const mixed = summary([reports.mixed!.report, String(reports.mixed!.status)]);
    expect(mixed.stdout).toBe('tests: 1 passed, 1 failed, 1 skipped, 1 todo\n');
    expect(mixed.status).toBe(1);

    const green = summary([reports.green!.report, String(reports.green!.status)]);
    expect(reports.green!.status).toBe(0);
    expect(green.stdout).toBe('tests: 2 passed, 0 failed\n');
    expect(green.stderr).toBe('');
    expect(green.status).toBe(0);

    const skipped = summary([reports.skipped!.report, '0']);
    expect(skipped.stdout).toBe('tests: 1 passed, 0 failed, 1 skipped\n');
    expect(skipped.status).toBe(0);
  });

  it('counts a test file that does not load as a failure and names it', () => {
    const result = summary([reports.unloadable!.report, String(reports.unloadable!.status)]);
    expect(result.stdout).toBe('tests: 1 passed, 1 failed\n');
    expect(result.stderr).toMatch(/b\.fixture\.mjs failed outside its tests: this file does not load/);
    expect(result.status).toBe(1);
  });

  it("fails on vitest's non-zero exit when no test failed (an unhandled error), and says why", () => {
    expect(reports.unhandled!.status).not.toBe(0);
    const result = summary([reports.unhandled!.report, String(reports.unhandled!.status)]);
    expect(result.stdout).toBe('tests: 2 passed, 0 failed\n');
    expect(result.stderr).toContain('vitest exited with status 1 although no test failed');
    expect(result.status).toBe(1);
  });

  it('fails, saying so, when the report is missing, unreadable or not a vitest report', () => {
    const dir = scratchDir('test-summary-bad');
    scratch.push(dir);
    const missing = summary([join(dir, 'none.json'), '1']);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('no report at');
    expect(missing.stderr).toContain('vitest ended before writing it');

    writeFileSync(join(dir, 'cut.json'), '{"numPassedTests": 3,');
    const cut = summary([join(dir, 'cut.json'), '0']);
    expect(cut.status).toBe(1);
    expect(cut.stderr).toContain('cannot read the report');

    writeFileSync(join(dir, 'other.json'), '{"passed": 3}');
    const other = summary([join(dir, 'other.json'), '0']);
    expect(other.status).toBe(1);
    expect(other.stderr).toContain('is not a vitest JSON report');
  });
});
