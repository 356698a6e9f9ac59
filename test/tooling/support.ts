/**
 * Running the project's own tooling for real: the Makefile in a scratch copy of the repository
 * (with a PATH of chosen tools, so that which helm and which go exist is the test's choice), and
 * vitest on scratch fixtures to produce real JSON reports.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The directory of the node running the tests (Node 22 or newer), for a child's PATH. */
export const NODE_DIR = dirname(process.execPath);

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `${prefix}-`));
}

export function writeExecutable(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

/** A fake helm whose `helm version --short` prints `version`. */
export function fakeHelm(dir: string, version: string): string {
  return writeExecutable(
    join(dir, 'helm'),
    `#!/bin/sh\nif [ "$1" = version ]; then echo '${version}'; else echo "fake helm $*"; fi\n`,
  );
}

/** A fake go whose `go install` writes a fake helm v3 into $GOBIN and records its arguments. */
export function fakeGo(dir: string): string {
  return writeExecutable(
    join(dir, 'go'),
    [
      '#!/bin/sh',
      `echo "$*" >> '${join(dir, 'go.log')}'`,
      '[ "$1" = install ] || exit 0',
      'mkdir -p "$GOBIN"',
      `printf '#!/bin/sh\\necho v3.0.0-built\\n' > "$GOBIN/helm"`,
      'chmod +x "$GOBIN/helm"',
      '',
    ].join('\n'),
  );
}

/**
 * A directory of links to the commands the Makefile's recipes need, and nothing else: no helm and
 * no go unless the test adds them. `node` is the test's own node.
 */
export function toolFarm(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const tools = ['bash', 'sh', 'env', 'uname', 'find', 'grep', 'sed', 'sort', 'awk', 'mkdir', 'rm'];
  tools.push('touch', 'cat', 'head', 'tail', 'tr', 'dirname', 'basename', 'ls', 'cp', 'chmod', 'npm');
  for (const tool of tools) {
    const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found.startsWith('/')) symlinkSync(found, join(dir, tool));
  }
  symlinkSync(process.execPath, join(dir, 'node'));
  return dir;
}

/**
 * The Makefile and scripts/ in a scratch directory with dependencies and build taken as up to date
 * (their stamps newer than their inputs), and no src/: targets run their real recipes, and
 * node_modules/.bin holds what the test puts there.
 */
export function makeSandbox(): string {
  const dir = scratchDir('make-sandbox');
  for (const file of [
    'Makefile',
    'package.json',
    'package-lock.json',
    'tsconfig.build.json',
    'tsconfig.base.json',
  ]) {
    copyFileSync(join(ROOT, file), join(dir, file));
    utimesSync(join(dir, file), new Date('2020-01-01'), new Date('2020-01-01'));
  }
  cpSync(join(ROOT, 'scripts'), join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/.deps-stamp'), '');
  mkdirSync(join(dir, 'dist'));
  writeFileSync(join(dir, 'dist/.build-stamp'), '');
  return dir;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function make(sandbox: string, args: string[], path: string[]): Run {
  const result = spawnSync(findMake(), ['--no-print-directory', ...args], {
    cwd: sandbox,
    encoding: 'utf8',
    env: { HOME: sandbox, PATH: path.join(delimiter) },
    timeout: 60_000,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function findMake(): string {
  const found = spawnSync('bash', ['-c', 'command -v make'], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error('make is not on PATH');
  return found;
}

/** Runs the real vitest on `files` (name -> source) in a scratch root; resolves with its JSON report path. */
export async function vitestReport(
  root: string,
  files: Record<string, string>,
): Promise<{ report: string; status: number | null }> {
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'vitest.config.mjs'),
    "export default { test: { include: ['*.fixture.mjs'], globals: true, reporters: ['json'] } };\n",
  );
  for (const [name, source] of Object.entries(files)) writeFileSync(join(root, name), source);
  const report = join(root, 'report.json');
  // The child is a vitest run of its own, not a worker of this one.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST') && key !== 'NODE_OPTIONS'),
  );
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--root',
      root,
      '--config',
      join(root, 'vitest.config.mjs'),
      `--outputFile.json=${report}`,
    ],
    { cwd: root, env, stdio: 'ignore' },
  );
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (!existsSync(report)) throw new Error(`vitest wrote no report in ${root} (status ${status})`);
  return { report, status };
}

/** `count` loopback ports that were free a moment ago. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    ports.push((server.address() as { port: number }).port);
  }
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** A listener on 127.0.0.1:`port`, as another program holding the port. */
export async function occupy(port: number): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `pid`, from ps. */
export function descendants(pid: number): number[] {
  const list = spawnSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' }).stdout;
  const children = new Map<number, number[]>();
  for (const line of list.trim().split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number);
    children.set(parent!, [...(children.get(parent!) ?? []), child!]);
  }
  const found: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

export function removeLater(dirs: string[]): () => void {
  return () => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  };
}
