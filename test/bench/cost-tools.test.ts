import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/support/process.ts';

function runScript(
  script: string,
  args: string[],
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(ROOT, script), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('bench/access-log-cost.ts', () => {
  it('prices a line of the shipped writer and of a pino child logger, with their sizes', () => {
    const { status, stdout, stderr } = runScript('bench/access-log-cost.ts', [
      '--lines',
      '3000',
      '--rounds',
      '2',
    ]);
    expect(stderr).toContain('round 2/2 done');
    expect(status).toBe(0);
    const shipped = /^\| shipped \| (\d+\.\d\d) \| 1\.00 \| (\d+) \|$/m.exec(stdout);
    const pino = /^\| pino-child \| (\d+\.\d\d) \| (\d+\.\d\d) \| (\d+) \|$/m.exec(stdout);
    expect(shipped, stdout).not.toBeNull();
    expect(pino, stdout).not.toBeNull();
    expect(Number(shipped![1])).toBeGreaterThan(0);
    expect(Number(pino![1])).toBeGreaterThan(0);
    // Both write one JSON line of the same fields: sizes within a few dozen bytes of each other.
    expect(Math.abs(Number(shipped![2]) - Number(pino![3]))).toBeLessThan(64);
  }, 60_000);

  it('refuses a count that is not a positive integer, and a destination that is not a file, naming the flag', () => {
    const lines = runScript('bench/access-log-cost.ts', ['--lines', '0']);
    expect(lines.status).not.toBe(0);
    expect(lines.stderr).toContain('--lines must be a positive integer, not 0');
    const dest = runScript('bench/access-log-cost.ts', ['--dest', 'off']);
    expect(dest.status).not.toBe(0);
    expect(dest.stderr).toContain('--dest is a file path (default /dev/null), not "off"');
  });
});

describe('bench/floor-proxy.ts --spin-us', () => {
  it('refuses a negative, endless or non-numeric value, naming the flag', () => {
    for (const value of ['-3', 'fast', 'Infinity', '']) {
      const { status, stderr } = runScript('bench/floor-proxy.ts', [
        '--upstream',
        'http://127.0.0.1:9',
        `--spin-us=${value}`,
      ]);
      expect(status).not.toBe(0);
      expect(stderr).toContain(`--spin-us is a number of microseconds from 0 to 1000000, not ${value}`);
    }
  });
});

describe('bench/profile.ts --args', () => {
  it('hands its words to the profiled proxy: a floor given a bad --spin-us refuses to start', () => {
    const { status, stderr } = runScript('bench/profile.ts', [
      '--proxy',
      'floor',
      '--args=--client dispatch --spin-us=-1',
      '--seconds',
      '2',
      '--warmup',
      '1',
    ]);
    expect(status).not.toBe(0);
    expect(stderr).toContain('floor exited (code 1) before the expected log line');
    expect(stderr).toContain('--spin-us is a number of microseconds from 0 to 1000000, not -1');
  });
});
