/**
 * `make run` (scripts/run-quickstart.sh) for real: the simulator and the gateway on free ports,
 * the banner only once both answer, a clear failure (which process, its exit code, its last lines)
 * and nothing left running when either cannot start, and both stopped by SIGTERM or SIGINT.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  NODE_DIR,
  ROOT,
  alive,
  descendants,
  freePorts,
  occupy,
  removeLater,
  scratchDir,
  writeExecutable,
} from './support.ts';

const BANNER = 'Ctrl-C stops both.';

interface Quickstart {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stderr contains `text`; rejects when the script exits first or after 45 s. */
  waitForStderr: (text: string) => Promise<void>;
  /** The pids the simulator and the gateway log (pino's `pid`), by `name`. */
  pids: () => Record<string, number>;
}

const running: ChildProcess[] = [];
const scratch: string[] = [];
const listeners: Server[] = [];
afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      for (const pid of descendants(child.pid!)) process.kill(pid, 'SIGKILL');
      child.kill('SIGKILL');
    }
  }
  await Promise.all(listeners.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  removeLater(scratch)();
});

/** With `group`, the script leads a process group of its own, which a test can signal whole. */
function quickstart(env: Record<string, string>, options: { group?: boolean } = {}): Quickstart {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !['CONFIG', 'NODE_OPTIONS'].includes(key)),
  );
  const child = spawn('bash', [join(ROOT, 'scripts/run-quickstart.sh')], {
    cwd: ROOT,
    env: { ...base, PATH: `${NODE_DIR}:${process.env.PATH ?? ''}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  running.push(child);
  let stdout = '';
  let stderr = '';
  const stderrWaiters: (() => void)[] = [];
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const waiter of stderrWaiters) waiter();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  const waitForStderr = (text: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "${text}" within 45 s:\n${stderr}\n${stdout}`)),
        45_000,
      );
      const check = (): void => {
        if (!stderr.includes(text)) return;
        clearTimeout(timer);
        resolve();
      };
      stderrWaiters.push(check);
      check();
      void exited.then(({ code }) => {
        clearTimeout(timer);
        reject(new Error(`the script exited (${code}) before "${text}":\n${stderr}\n${stdout}`));
      });
    });
  const pids = (): Record<string, number> => {
    const found: Record<string, number> = {};
    for (const line of stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { name?: string; pid?: number };
      if (entry.name && entry.pid) found[entry.name] = entry.pid;
    }
    return found;
  };
  return { child, stdout: () => stdout, stderr: () => stderr, exited, waitForStderr, pids };
}

async function ports(): Promise<{
  env: Record<string, string>;
  sim: number;
  gateway: number;
  admin: number;
}> {
  const [sim, gateway, admin] = (await freePorts(3)) as [number, number, number];
  return {
    env: { SIM_PORT: String(sim), GATEWAY_PORT: String(gateway), GATEWAY_METRICS_PORT: String(admin) },
    sim,
    gateway,
    admin,
  };
}

async function refused(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/`).then(
    () => false,
    () => true,
  );
}

async function gone(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 50 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
  return !pids.some(alive);
}

const chat = (port: number): Promise<Response> =>
  fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'Hello' }] }),
  });

describe('make run (scripts/run-quickstart.sh)', { timeout: 60_000 }, () => {
  it('prints the banner once both answer; requests pass through; a second run fails; SIGTERM stops both', async () => {
    const p = await ports();
    const run = quickstart(p.env);
    await run.waitForStderr(BANNER);
    // Both answer the moment the banner is out: no retry here.
    expect((await fetch(`http://127.0.0.1:${p.sim}/health`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${p.admin}/readyz`)).status).toBe(200);
    const response = await chat(p.gateway);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { choices: unknown[] }).choices).toHaveLength(1);
    // Served by this run's simulator, on SIM_PORT, not by whatever listens on the default port.
    const metrics = await (await fetch(`http://127.0.0.1:${p.sim}/metrics`)).text();
    expect(metrics).toMatch(/^vllm:e2e_request_latency_seconds_count\{model_name="sim"\} 1$/m);
    expect(run.stderr()).toContain(`gateway    http://127.0.0.1:${p.gateway}/v1`);

    // `make run` again on the same ports: refused up front, the first one undisturbed.
    const again = quickstart(p.env);
    const second = await again.exited;
    expect(second.code).toBe(1);
    expect(again.stderr()).toMatch(
      new RegExp(`simulator cannot start: port ${p.sim} \\(SIM_PORT\\) is already in use`),
    );
    expect(again.stderr()).toContain("an earlier 'make run' still running?");
    expect(again.stderr()).not.toContain(BANNER);
    expect((await chat(p.gateway)).status).toBe(200);

    const pids = run.pids();
    expect(Object.keys(pids).sort()).toEqual(['gateway', 'sim']);
    const tree = [...descendants(run.child.pid!), pids.sim!, pids.gateway!];
    run.child.kill('SIGTERM');
    expect((await run.exited).code).toBe(143);
    expect(await gone(tree)).toBe(true);
    expect(await refused(p.gateway)).toBe(true);
    expect(await refused(p.sim)).toBe(true);
  });

  it('stops both on SIGINT (Ctrl-C)', async () => {
    const p = await ports();
    const run = quickstart(p.env);
    await run.waitForStderr(BANNER);
    const tree = [...descendants(run.child.pid!), ...Object.values(run.pids())];
    expect(tree.length).toBeGreaterThanOrEqual(2);
    run.child.kill('SIGINT');
    expect((await run.exited).code).toBe(130);
    expect(await gone(tree)).toBe(true);
  });

  it('a SIGINT to its whole process group (a supervisor, `timeout`) is a normal stop, not a failure', async () => {
    const p = await ports();
    const run = quickstart(p.env, { group: true });
    await run.waitForStderr(BANNER);
    const tree = [...descendants(run.child.pid!), ...Object.values(run.pids())];
    process.kill(-run.child.pid!, 'SIGINT');
    expect((await run.exited).code).toBe(130);
    expect(run.stderr()).not.toContain('exited with code');
    expect(await gone(tree)).toBe(true);
  });

  it('the programs stopped by the signal before the script hears it: still a normal stop', async () => {
    // The order a group signal may take: the simulator and the gateway stop cleanly first.
    const p = await ports();
    const run = quickstart(p.env);
    await run.waitForStderr(BANNER);
    // The gateway's log is shown from the banner on: its first line (with its pid) follows it.
    for (let waited = 0; Object.keys(run.pids()).length < 2 && waited < 5000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const programs = Object.values(run.pids());
    expect(programs).toHaveLength(2);
    for (const pid of programs) process.kill(pid, 'SIGINT');
    expect((await run.exited).code).toBe(130);
    expect(run.stderr()).not.toContain('exited with code');
    expect(run.stderr()).toContain('was stopped by a signal; stopping both');
    expect(await gone(programs)).toBe(true);
  });

  it("fails naming the gateway, without the banner, when the gateway's port is taken", async () => {
    const p = await ports();
    listeners.push(await occupy(p.gateway));
    const run = quickstart(p.env);
    const { code } = await run.exited;
    expect(code).toBe(1);
    expect(run.stderr()).toContain(
      `the gateway cannot start: port ${p.gateway} (GATEWAY_PORT) is already in use`,
    );
    expect(run.stderr()).toContain('GATEWAY_PORT=<port> make run');
    expect(run.stderr()).not.toContain(BANNER);
    expect(await refused(p.sim)).toBe(true);
  });

  it('says which process died, its exit code and last lines, and stops the other one', async () => {
    const p = await ports();
    const dir = scratchDir('quickstart-config');
    scratch.push(dir);
    const config = join(dir, 'config.yaml');
    writeFileSync(config, 'targets:\n  sim: 1\n');
    const run = quickstart({ ...p.env, CONFIG: config });
    const { code } = await run.exited;
    expect(code).toBe(1);
    const stderr = run.stderr();
    expect(stderr).toContain(
      'quickstart: the gateway exited with code 2 before it was ready; its last output lines:',
    );
    // Each configuration error once: its plain line, quoted; not its JSON log line too, nor the
    // output shown live beside it.
    expect(stderr).toMatch(/ {2}\| .*config\.yaml: \$\.targets\.sim: must be an object/);
    const everything = run.stdout() + stderr;
    expect(everything.split('must be an object').length - 1).toBe(1);
    expect(stderr).not.toContain(BANNER);
    // The simulator had started: it is stopped again.
    const sim = run.pids().sim;
    expect(sim).toBeTypeOf('number');
    expect(await gone([sim!])).toBe(true);
    expect(await refused(p.sim)).toBe(true);
  });

  it('gives up after READY_TIMEOUT_SECS, saying what did not answer, and stops both', async () => {
    const p = await ports();
    // 0 s: the first check comes before either process listens.
    const run = quickstart({ ...p.env, READY_TIMEOUT_SECS: '0' });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toMatch(
      /quickstart: the (simulator|gateway) is running but http:\/\/127\.0\.0\.1:\d+\/(health|readyz) did not answer 200 within 0s \(READY_TIMEOUT_SECS\)/,
    );
    expect(run.stderr()).not.toContain(BANNER);
    expect(await gone(Object.values(run.pids()))).toBe(true);
    expect(await refused(p.sim)).toBe(true);
    expect(await refused(p.gateway)).toBe(true);
  });

  it.each(['20.20.2', '22.18.0'])('refuses node %s, older than 22.19, with what to do', async (version) => {
    const dir = scratchDir('quickstart-old-node');
    scratch.push(dir);
    writeExecutable(join(dir, 'node'), `#!/bin/sh\necho ${version}\n`);
    const run = quickstart({ ...(await ports()).env, PATH: `${dir}:/usr/bin:/bin` });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toContain(`node ${version} is older than 22.19: run 'make run'`);
    expect(run.stderr()).not.toContain(BANNER);
  });

  it('refuses a port that is not a number, and ports that collide', async () => {
    const bad = quickstart({ SIM_PORT: 'abc' });
    expect((await bad.exited).code).toBe(1);
    expect(bad.stderr()).toContain("SIM_PORT must be a port number from 1 to 65535, got 'abc'");
    const same = quickstart({ SIM_PORT: '18123', GATEWAY_PORT: '18123' });
    expect((await same.exited).code).toBe(1);
    expect(same.stderr()).toContain('must differ');
  });
});
