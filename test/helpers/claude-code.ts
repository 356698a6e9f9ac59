import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureClaudeCode } from '../../scripts/claude-code.js';

/**
 * Runs the real Claude Code CLI (the pinned standalone binary, fetched into the user's cache on first
 * use, as `make claude-code` does) in print mode against a Messages API server, the way a user points it at a gateway.
 *
 * Tool permissions: print mode cannot ask, so whatever would ask is refused and the server gets a
 * `tool_result` with `is_error: true` saying so. Reading files under the working directory (the `Read`
 * tool) needs no permission; reading elsewhere, a shell command that changes files, and the editing
 * tools (`Write`, `Edit`) do, even under the working directory. `extraArgs: ['--allowedTools', 'Read',
 * 'Bash']` allows the named tools everywhere, `['--permission-mode', 'acceptEdits']` allows the editing
 * tools under the working directories, and `['--add-dir', dir]` adds one to them.
 * `--permission-mode bypassPermissions` and `--dangerously-skip-permissions` make the CLI exit 1 when
 * run as root, as in containers.
 *
 * The prompt is passed after `--`, so a variadic option such as `--allowedTools` at the end of
 * `extraArgs` cannot swallow it.
 */

export interface ClaudeCodeRun {
  /** The CLI's exit status. */
  exitCode: number;
  /** The result object `--output-format json` prints (`is_error`, `result`, ...), if stdout held one. */
  result: Record<string, unknown> | undefined;
  stdout: string;
  stderr: string;
}

export interface ClaudeCodeOptions {
  /** `http://127.0.0.1:<port>`: the only place the CLI sends anything. */
  baseUrl: string;
  /** Sent as `x-api-key`. */
  apiKey?: string;
  /** Sent as `Authorization: Bearer`. */
  authToken?: string;
  prompt: string;
  /** `--model`; any name is accepted. */
  model?: string;
  /** The working directory; a fresh temporary one (removed afterwards) when not given. */
  cwd?: string;
  /** More CLI arguments, placed before the prompt. */
  extraArgs?: string[];
  /** The run is killed, and the promise rejected, after this long; 60 s by default. */
  timeoutMs?: number;
}

/**
 * The CLI's whole environment, built here rather than inherited: no proxy, config directory, cloud
 * provider switch or key of the machine's may send it anywhere but `baseUrl`. HOME is a fresh
 * directory, since the CLI writes its config and sessions there, and holds its TMPDIR (it leaves
 * probe folders and command output in a temporary directory). The test run's marker is passed on
 * so the suite's teardown can stop a CLI a killed worker left behind.
 */
function environment(options: ClaudeCodeOptions, home: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    TMPDIR: join(home, 'tmp'),
    ANTHROPIC_BASE_URL: options.baseUrl,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
  };
  if (options.apiKey !== undefined) env.ANTHROPIC_API_KEY = options.apiKey;
  if (options.authToken !== undefined) env.ANTHROPIC_AUTH_TOKEN = options.authToken;
  const runMarker = process.env.LLM_GATEWAY_TEST_RUN;
  if (runMarker !== undefined) env.LLM_GATEWAY_TEST_RUN = runMarker;
  return env;
}

function parseResult(stdout: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(stdout);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** SIGKILL to the CLI's process group: the CLI itself, or what it left running once it exited. */
function stopGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already empty
  }
}

export async function runClaudeCode(options: ClaudeCodeOptions): Promise<ClaudeCodeRun> {
  // Fetched from the npm registry on first use (as `make claude-code` does); a test that cannot get
  // it fails with the registry's reason.
  const binary = await ensureClaudeCode();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const home = mkdtempSync(join(tmpdir(), 'claude-code-home-'));
  mkdirSync(join(home, 'tmp'));
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'claude-code-cwd-'));
  const args = ['--print', '--output-format', 'json'];
  if (options.model !== undefined) args.push('--model', options.model);
  args.push(...(options.extraArgs ?? []), '--', options.prompt);
  try {
    // Its own process group, so a timeout also ends the tools it started.
    const child = spawn(binary, args, {
      cwd,
      env: environment(options, home),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stopGroup(child.pid);
    }, timeoutMs);
    const exitCode = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      // Ended by a signal: the status a shell would report.
      child.once('close', (code, signal) => resolve(code ?? 128 + constants.signals[signal!]));
    }).finally(() => {
      clearTimeout(timer);
      stopGroup(child.pid);
    });
    if (timedOut) {
      throw new Error(
        `Claude Code did not finish within ${timeoutMs} ms and was killed\nstdout:\n${stdout}\nstderr:\n${stderr}`,
      );
    }
    return { exitCode, result: parseResult(stdout), stdout, stderr };
  } finally {
    rmSync(home, { recursive: true, force: true });
    if (options.cwd === undefined) rmSync(cwd, { recursive: true, force: true });
  }
}
