// Makes sure the pinned Claude Code CLI is in the user's cache, outside the repository, and prints
// the path of its binary: the tests that drive the gateway with a real Messages API client run it.
//
//   node scripts/claude-code.ts      (make claude-code)
//
// The CLI is the standalone Linux x64 binary of @anthropic-ai/claude-code-linux-x64 (about 170 MB to
// download, 373 MB unpacked, no Node needed to run it), fetched with `npm pack` so the registry, proxy
// and CA settings of npm apply, and checked against the integrity pinned here. It is unpacked under a
// temporary name next to its final place and renamed there once it has run, so a binary at that path
// is always complete: an interrupted fetch leaves only a `.fetch-<pid>-*` folder, removed by the next
// fetch. Progress goes to stderr, the path alone to stdout.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { pipeline } from 'node:stream/promises';

export const CLAUDE_CODE_VERSION = '2.1.328';
const PACKAGE = '@anthropic-ai/claude-code-linux-x64';
/** `dist.integrity` of PACKAGE@CLAUDE_CODE_VERSION on the npm registry. */
const INTEGRITY =
  'sha512-KuzL+dBHgDCFTHJxwW+xuBJdVKfBsesGx2BBcTOG9sYDGoAD7b1hUV8rsTS4xjoJsB2SmeGraGjBiFuhrYuC9w==';
const BINARY_IN_PACKAGE = 'package/claude';

/**
 * `${XDG_CACHE_HOME:-$HOME/.cache}/llm-gateway/claude-code/<version>`; a relative XDG_CACHE_HOME is
 * ignored, as the XDG spec asks.
 */
function cacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const cacheHome = xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache');
  return join(cacheHome, 'llm-gateway', 'claude-code', CLAUDE_CODE_VERSION);
}

/** Where the pinned binary is once fetched; nothing is checked or fetched. */
export function claudeCodeBinaryPath(): string {
  return join(cacheDir(), 'claude');
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): string {
  const result = spawnSync(command, args, {
    ...options,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.error) throw new Error(`${command} could not be started: ${result.error.message}`);
  if (result.status !== 0) {
    const how = result.signal ? `signal ${result.signal}` : `status ${result.status}`;
    throw new Error(`${command} ${args.join(' ')} failed (${how}):\n${result.stderr.trim()}`);
  }
  return result.stdout;
}

/**
 * `npm pack` of `spec` into `work`, its JSON report returned. npm's cache and logs go to `work` too,
 * so the download is not kept twice and the error names no log file that is about to be removed.
 */
function packFromRegistry(spec: string, work: string): string {
  const cache = join(work, 'npm-cache');
  try {
    return run('npm', ['pack', '--json', '--loglevel=error', '--logs-max=0', '--cache', cache, spec], {
      cwd: work,
    });
  } catch (error) {
    throw new Error(`could not fetch ${spec} from the npm registry: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function sha512Integrity(file: string): Promise<string> {
  const hash = createHash('sha512');
  await pipeline(createReadStream(file), hash);
  return `sha512-${hash.digest('base64')}`;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the folders of fetches whose process is gone (killed before it could clean up). */
function removeAbandonedFetches(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const pid = /^\.fetch-(\d+)-/.exec(entry)?.[1];
    if (pid !== undefined && !isRunning(Number(pid)))
      rmSync(join(dir, entry), { recursive: true, force: true });
  }
}

async function fetchInto(dir: string, binary: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  removeAbandonedFetches(dir);
  const work = mkdtempSync(join(dir, `.fetch-${process.pid}-`));
  // Interrupted by the user: remove the partial download, then end as the signal would have.
  const onSignal = (signal: NodeJS.Signals): void => {
    rmSync(work, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    const spec = `${PACKAGE}@${CLAUDE_CODE_VERSION}`;
    process.stderr.write(
      `fetching Claude Code ${CLAUDE_CODE_VERSION} (${spec}, about 170 MB) from the npm registry\n`,
    );
    const packed = JSON.parse(packFromRegistry(spec, work)) as { filename: string }[];
    const tarball = join(work, packed[0]!.filename);
    const integrity = await sha512Integrity(tarball);
    if (integrity !== INTEGRITY) {
      throw new Error(`${spec} from the registry has integrity ${integrity}, not the pinned ${INTEGRITY}`);
    }
    process.stderr.write(`unpacking the claude binary into ${dir}\n`);
    run('tar', ['-xzf', tarball, '-C', work, BINARY_IN_PACKAGE], { cwd: work });
    const unpacked = join(work, BINARY_IN_PACKAGE);
    chmodSync(unpacked, 0o755);
    // It must run on this machine (a musl system cannot load it) before taking its final name.
    const version = run(unpacked, ['--version'], { cwd: work, env: { HOME: work, PATH: process.env.PATH } });
    if (!version.startsWith(`${CLAUDE_CODE_VERSION} `)) {
      throw new Error(`the unpacked binary reports version ${JSON.stringify(version.trim())}`);
    }
    renameSync(unpacked, binary);
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    rmSync(work, { recursive: true, force: true });
  }
}

/** The pinned binary's path, fetched first when it is not in the cache yet. */
export async function ensureClaudeCode(): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `the pinned Claude Code binary is for Linux x64 only; this machine is ${process.platform} ${process.arch}`,
    );
  }
  const binary = claudeCodeBinaryPath();
  if (!existsSync(binary)) await fetchInto(cacheDir(), binary);
  return binary;
}

if (import.meta.main) {
  try {
    process.stdout.write(`${await ensureClaudeCode()}\n`);
  } catch (error) {
    process.stderr.write(`claude-code: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
