import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

// Plain JavaScript without declarations (it must parse on any Node): typed here.
const PREFLIGHT: string = '../../bin/preflight.js';
const { MINIMUM_NODE } = (await import(PREFLIGHT)) as { MINIMUM_NODE: number[] };

function nodeVersion(executable: string): number[] | undefined {
  const result = spawnSync(executable, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  if (result.status !== 0) return undefined;
  return result.stdout.trim().split('.').map(Number);
}

function older(version: number[], than: number[]): boolean {
  return version[0]! < than[0]! || (version[0] === than[0] && version[1]! < than[1]!);
}

/** A Node on this machine older than the programs need, if there is one. */
function findOldNode(): string | undefined {
  const candidates = new Set(['/usr/bin/node', '/usr/local/bin/node', '/bin/node']);
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir) candidates.add(join(dir, 'node'));
  for (const candidate of candidates) {
    const version = nodeVersion(candidate);
    if (version !== undefined && older(version, MINIMUM_NODE)) return candidate;
  }
  return undefined;
}

/** Whether `version` satisfies one alternative of an `engines.node` range (the forms npm packages use). */
function satisfies(version: number[], range: string): boolean {
  return range.split('||').some((alternative) => {
    const match = /^\s*(>=|\^)\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(alternative);
    if (match === null) throw new Error(`unrecognised engines range ${JSON.stringify(range)}`);
    const bound = [Number(match[2]), Number(match[3] ?? 0)];
    if (older(version, bound)) return false;
    return match[1] === '>=' || version[0] === bound[0];
  });
}

const oldNode = findOldNode();
if (oldNode === undefined)
  process.stderr.write(
    `skipping the old-Node test: no Node older than ${MINIMUM_NODE.join('.')} on this machine\n`,
  );

describe('the checks of bin/gateway.js and bin/sim.js before they load anything', () => {
  it.skipIf(oldNode === undefined).each([
    ['gateway', ['--help']],
    ['sim', ['serve']],
  ])('%s on an older Node says which one it needs and exits 2', (program, args) => {
    // Bounded: without the check, `sim serve` happens to start on some older Nodes and would not end.
    const result = spawnSync(oldNode!, [`${ROOT}bin/${program}.js`, ...args], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    const version = spawnSync(oldNode!, ['-p', 'process.version'], { encoding: 'utf8' }).stdout.trim();
    expect(result.stderr).toBe(
      `${program} needs Node.js ${MINIMUM_NODE.join('.')} or newer (this is ${version} at ${oldNode}). ` +
        `Run it through the Makefile's Node: \`make node-info\` shows it, ` +
        `\`.tools/node/bin/node bin/${program}.js ...\`, or install Node 24.\n`,
    );
  });

  it('the minimum is one every runtime dependency accepts', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const refused: string[] = [];
    for (const name of Object.keys(manifest.dependencies)) {
      const dependency = JSON.parse(
        readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'),
      ) as { engines?: { node?: string } };
      const range = dependency.engines?.node;
      if (range !== undefined && !satisfies([...MINIMUM_NODE, 0], range)) refused.push(`${name} (${range})`);
    }
    expect(refused).toEqual([]);
  });
});

/** A copy of the checkout's `bin/` and package.json, with `extra` entries of the checkout linked or copied in. */
function partialCheckout(extra: { link?: string[]; copy?: string[] }): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-checkout-'));
  cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  for (const name of extra.link ?? []) symlinkSync(join(ROOT, name), join(dir, name));
  for (const name of extra.copy ?? []) cpSync(join(ROOT, name), join(dir, name), { recursive: true });
  return dir;
}

function runIn(dir: string, program: string, args: string[]) {
  return spawnSync(process.execPath, [join(dir, 'bin', `${program}.js`), ...args], {
    encoding: 'utf8',
    timeout: 10_000,
  });
}

describe('a checkout that is not built, or has no dependencies', () => {
  it.each([
    ['gateway', ['--help'], 'gateway/cli.js'],
    ['sim', ['serve', '--port', '0'], 'simulator/cli.js'],
  ])('%s without dist/ says to build it, exit 2', (program, args, entry) => {
    const dir = partialCheckout({ link: ['node_modules'] });
    try {
      const result = runIn(dir, program, args);
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `${program} is not built: ${join(dir, 'dist', entry)} is missing. Run \`make build\` first.\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['gateway', ['--help']],
    ['sim', ['serve', '--port', '0']],
  ])('%s without node_modules/ says to install them, exit 2', (program, args) => {
    // A copy of dist/, not a link: a link would resolve packages from the checkout it points into.
    const dir = partialCheckout({ copy: ['dist'] });
    try {
      const result = runIn(dir, program, args);
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        new RegExp(
          `^${program}'s dependencies are not installed \\(Cannot find package '[^']+'\\)\\. Run \`make build\` \\(or \`npm ci\`\\) first\\.\\n$`,
        ),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
