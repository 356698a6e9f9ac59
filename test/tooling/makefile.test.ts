/**
 * The Makefile for real, in a scratch copy of the repository whose PATH holds only the tools a test
 * chooses: which helm the chart tests use (a helm v3 on PATH, else the pinned one built with Go,
 * else one line saying what to install), how `make unit` ends, and `make` with no target.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ROOT,
  fakeGo,
  fakeHelm,
  make,
  makeSandbox,
  removeLater,
  scratchDir,
  toolFarm,
  vitestReport,
  writeExecutable,
} from './support.ts';

const scratch: string[] = [];
afterAll(removeLater(scratch));

let farm: string;
let tools: string;
const HELM_VERSION = /^HELM_VERSION \?= (v\d+\.\d+\.\d+)$/m.exec(
  readFileSync(join(ROOT, 'Makefile'), 'utf8'),
)![1]!;

beforeAll(() => {
  tools = scratchDir('make-tools');
  scratch.push(tools);
  farm = toolFarm(join(tools, 'farm'));
});

function sandbox(): string {
  const dir = makeSandbox();
  scratch.push(dir);
  return dir;
}

/** A directory holding one fake tool, for a PATH entry. */
function toolDir(name: string, create: (dir: string) => string): string {
  const dir = join(tools, name);
  if (!existsSync(dir)) create(dir);
  return dir;
}
const helmV3 = (): string => toolDir('helm-v3', (d) => fakeHelm(d, 'v3.99.1+gfake'));
const helmV4 = (): string => toolDir('helm-v4', (d) => fakeHelm(d, 'v4.0.0+gfake'));
const helmV2 = (): string => toolDir('helm-v2', (d) => fakeHelm(d, 'Client: v2.17.0+ga690bad'));

describe('which helm the chart tests use', { timeout: 60_000 }, () => {
  it('a helm v3 on PATH: named by make node-info, passed as HELM_BIN, nothing built (Go or not)', () => {
    const dir = sandbox();
    const goDir = join(tools, 'go-unused');
    fakeGo(goDir);
    const info = make(dir, ['node-info'], [helmV3(), goDir, farm]);
    expect(info.status).toBe(0);
    expect(info.stdout).toContain(`helm v3.99.1+gfake at ${helmV3()}/helm`);

    const plan = make(dir, ['-n', 'unit'], [helmV3(), goDir, farm]);
    expect(plan.status).toBe(0);
    expect(plan.stdout).toContain(`HELM_BIN='${helmV3()}/helm' vitest run`);
    expect(plan.stdout).not.toContain('go install');
    expect(make(dir, ['-n', 'chart-golden'], [helmV3(), farm]).stdout).toContain(
      `HELM_BIN='${helmV3()}/helm' node test/chart/regenerate.ts`,
    );
  });

  it.each([
    ['v4', helmV4],
    ['v2', helmV2],
  ])('a helm %s on PATH is passed over: the pinned one is built with go', (_major, helmDir) => {
    const dir = sandbox();
    const goDir = join(tools, 'go-plan');
    if (!existsSync(goDir)) fakeGo(goDir);
    const info = make(dir, ['node-info'], [helmDir(), goDir, farm]);
    expect(info.stdout).toContain(`helm: no helm v3.x on PATH; the chart tests build helm ${HELM_VERSION}`);
    const plan = make(dir, ['-n', 'unit'], [helmDir(), goDir, farm]);
    expect(plan.status).toBe(0);
    expect(plan.stdout).toContain(`go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`);
    expect(plan.stdout).toContain(`HELM_BIN='${dir}/.tools/bin/helm' vitest run`);
  });

  it('the first helm v3 on PATH wins over an earlier helm of another major version', () => {
    const dir = sandbox();
    const plan = make(dir, ['-n', 'unit'], [helmV4(), helmV3(), farm]);
    expect(plan.stdout).toContain(`HELM_BIN='${helmV3()}/helm' vitest run`);
  });

  it('builds the pinned helm with go when none is on PATH, then uses it from .tools/bin', () => {
    const dir = sandbox();
    const goDir = join(dir, 'go-bin');
    fakeGo(goDir);
    writeExecutable(
      join(dir, 'node_modules/.bin/vitest'),
      `#!/bin/sh\necho "$HELM_BIN" > '${dir}/helm-seen'\nexit 1\n`,
    );
    const run = make(dir, ['unit'], [goDir, farm]);
    expect(readFileSync(join(goDir, 'go.log'), 'utf8')).toBe(
      `install helm.sh/helm/v3/cmd/helm@${HELM_VERSION}\n`,
    );
    expect(readFileSync(join(dir, 'helm-seen'), 'utf8')).toBe(`${dir}/.tools/bin/helm\n`);
    expect(run.status).not.toBe(0); // the fake vitest wrote no report

    // Built once: the next run finds it first on PATH and builds nothing.
    const info = make(dir, ['node-info'], [goDir, farm]);
    expect(info.stdout).toContain(`helm v3.0.0-built at ${dir}/.tools/bin/helm`);
    expect(make(dir, ['-n', 'unit'], [goDir, farm]).stdout).not.toContain('go install');
    expect(make(dir, ['helm'], [goDir, farm]).stdout).toBe('helm v3.0.0-built at .tools/bin/helm\n');
  });

  it('says in one line what to install when there is neither a helm v3 nor Go', () => {
    const dir = sandbox();
    writeExecutable(join(dir, 'node_modules/.bin/vitest'), `#!/bin/sh\ntouch '${dir}/vitest-ran'\n`);
    const run = make(dir, ['unit'], [helmV4(), farm]);
    expect(run.status).not.toBe(0);
    const line = `no helm v3.x on PATH, and no Go to build helm ${HELM_VERSION}: install helm v3 (https://helm.sh/docs/intro/install/) or Go (https://go.dev/doc/install)`;
    expect(run.stderr.split('\n')).toContain(`make: ${line}`);
    expect(existsSync(join(dir, 'vitest-ran'))).toBe(false);
    const info = make(dir, ['node-info'], [farm]);
    expect(info.status).toBe(0);
    expect(info.stdout).toContain(`helm: ${line}`);

    // `make helm` always builds the pinned one, so it asks for Go only.
    const helm = make(dir, ['helm'], [helmV3(), farm]);
    expect(helm.status).not.toBe(0);
    expect(helm.stderr).toContain(
      `make: building helm ${HELM_VERSION} into .tools/bin needs Go, and go is not on PATH`,
    );
  });

  it('test/chart/helm.ts runs the helm named by HELM_BIN, and refuses one that is not v3', () => {
    const script = `import { helm } from ${JSON.stringify(join(ROOT, 'test/chart/helm.ts'))};\nconsole.log(helm(['template', 'x']).stdout.trim());\n`;
    const run = (helmDir: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, HELM_BIN: join(helmDir, 'helm') },
      });
    const v3 = run(helmV3());
    expect(v3.stderr).toBe('');
    expect(v3.stdout).toBe('fake helm template x\n');
    const v4 = run(helmV4());
    expect(v4.status).not.toBe(0);
    expect(v4.stderr).toContain('is helm v4.0.0+gfake: the chart tests need helm v3');
  });
});

describe('make unit', { timeout: 60_000 }, () => {
  let greenReport: string;
  beforeAll(async () => {
    const dir = scratchDir('make-unit-report');
    scratch.push(dir);
    greenReport = (
      await vitestReport(dir, { 'a.fixture.mjs': "test('one', () => {});\ntest('two', () => {});\n" })
    ).report;
  }, 60_000);

  /** A sandbox whose vitest is `body` (a shell script), with a helm v3 on PATH. */
  function unit(body: string): { dir: string; run: () => ReturnType<typeof make> } {
    const dir = sandbox();
    writeExecutable(join(dir, 'node_modules/.bin/vitest'), `#!/bin/sh\n${body}\n`);
    return { dir, run: () => make(dir, ['unit'], [helmV3(), farm]) };
  }
  const reportArg =
    'for a in "$@"; do case "$a" in --outputFile.json=*) report="${a#--outputFile.json=}";; esac; done';

  it('ends with the closing line of the report vitest wrote', () => {
    const { run } = unit(`${reportArg}\ncp '${greenReport}' "$report"`);
    const result = run();
    expect(result.status).toBe(0);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('tests: 2 passed, 0 failed');
  });

  it("never reads an earlier run's report: a vitest that ends without one fails the run", () => {
    const { dir, run } = unit('echo "vitest: crashed" >&2; exit 1');
    mkdirSync(join(dir, 'test/.tmp'), { recursive: true });
    writeFileSync(join(dir, 'test/.tmp/vitest-report.json'), readFileSync(greenReport));
    const result = run();
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('test summary: no report at test/.tmp/vitest-report.json');
    expect(result.stdout).not.toContain('tests: 2 passed');
  });

  it('fails when vitest exits non-zero although its report counts no failure (an unhandled error)', () => {
    const { run } = unit(`${reportArg}\ncp '${greenReport}' "$report"\nexit 1`);
    const result = run();
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('vitest exited with status 1 although no test failed');
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('tests: 2 passed, 0 failed');
  });
});

describe('make with no target', () => {
  it('prints a usage line and every documented target, descriptions in one column', () => {
    const dir = sandbox();
    const result = make(dir, [], [farm]);
    expect(result.status).toBe(0);
    const [usage, ...lines] = result.stdout.trimEnd().split('\n');
    expect(usage).toMatch(/^usage: make <target>/);
    const documented = [
      ...readFileSync(join(ROOT, 'Makefile'), 'utf8').matchAll(/^([a-z0-9-]+):.*## /gm),
    ].map((m) => m[1]);
    expect(lines.map((l) => l.trim().split(/\s+/)[0]).sort()).toEqual(documented.sort());
    const column = new Set(lines.map((l) => /^ {2}\S+\s+/.exec(l)![0].length));
    expect(column.size).toBe(1);
  });
});
