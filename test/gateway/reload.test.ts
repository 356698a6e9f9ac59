import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, spawnGateway, gatewaysPerTest } from '../helpers/gateway.js';
import { ROOT, spawnProgram } from '../helpers/process.js';
import { untilEquals } from '../helpers/wait.js';
import { jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
const startGateway = gatewaysPerTest();

beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, { id: 'ok' }));
});
afterAll(async () => {
  await upstream.close();
});

function configWith(aliases: string[]): unknown {
  return { targets: Object.fromEntries(aliases.map((a) => [a, { url: upstream.url }])) };
}

async function statusFor(gateway: { url: string }, alias: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: alias, messages: [] }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Polls until the alias answers with the expected status (reloads are asynchronous). */
const eventuallyStatus = (gateway: { url: string }, alias: string, expected: number) =>
  untilEquals(() => statusFor(gateway, alias), expected, `alias ${alias}`);

describe('hot reload', () => {
  it('applies an in-place write and reports it in the metrics', async () => {
    const gateway = await startGateway(configWith(['a']));
    expect(await statusFor(gateway, 'b')).toBe(404);
    await writeFile(gateway.configPath, JSON.stringify(configWith(['a', 'b'])));
    await eventuallyStatus(gateway, 'b', 200);
    const metrics = await gateway.metrics();
    expect(metricValue(metrics, 'gateway_config_reloads_total', { result: 'success' })).toBe(1);
    expect(metricValue(metrics, 'gateway_config_last_reload_success_timestamp_seconds')).toBeGreaterThan(
      Date.now() / 1000 - 60,
    );
    const reloaded = gateway.program.logs.find((l) => l.msg === 'configuration reloaded');
    expect(metrics).toContain(`gateway_config_info{hash="${String(reloaded?.hash)}"} 1`);
    // Only the hash now serving is reported.
    expect(metrics.match(/gateway_config_info\{/g)).toHaveLength(1);
  });

  it('applies an editor-style write to a temp file followed by rename', async () => {
    const gateway = await startGateway(configWith(['a']));
    await gateway.writeConfig(configWith(['a', 'renamed']));
    await eventuallyStatus(gateway, 'renamed', 200);
  });

  it('follows a Kubernetes ConfigMap volume update (timestamped dir + ..data symlink swap), once', async () => {
    // Exactly the kubelet's atomic writer: config.json -> ..data/config.json, ..data -> ..<ts1>.
    const dir = await mkdtemp(join(tmpdir(), 'gateway-configmap-'));
    const ts1 = join(dir, '..2026_01_01_00_00_00.000000001');
    await mkdir(ts1);
    await writeFile(join(ts1, 'config.json'), JSON.stringify(configWith(['a'])));
    await symlink('..2026_01_01_00_00_00.000000001', join(dir, '..data'));
    await symlink('..data/config.json', join(dir, 'config.json'));
    const gateway = await spawnGateway(join(dir, 'config.json'), ['--config-poll-secs', '60']);
    const program = gateway.program;
    try {
      expect(await statusFor(gateway, 'swapped')).toBe(404);

      // Update: new timestamped dir, ..data_tmp -> new dir, rename over ..data, remove the old dir.
      const ts2 = join(dir, '..2026_01_01_00_01_00.000000002');
      await mkdir(ts2);
      await writeFile(join(ts2, 'config.json'), JSON.stringify(configWith(['a', 'swapped'])));
      await symlink('..2026_01_01_00_01_00.000000002', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(ts1, { recursive: true });

      await eventuallyStatus(gateway, 'swapped', 200);
      await sleep(600); // past the debounce: a second reload of the same content would show now
      expect(program.logs.filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);
    } finally {
      await program.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('follows the ..data swap when the file is named relative to the working directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gateway-configmap-relative-'));
    await mkdir(join(dir, '..2026_01_01_00_00_00.000000001'));
    await writeFile(
      join(dir, '..2026_01_01_00_00_00.000000001', 'config.json'),
      JSON.stringify(configWith(['a'])),
    );
    await symlink('..2026_01_01_00_00_00.000000001', join(dir, '..data'));
    await symlink('..data/config.json', join(dir, 'config.json'));
    const program = spawnProgram(
      'gateway',
      ['-f', 'config.json', '--host', '127.0.0.1', '--port', '0', '--metrics-port', '0'],
      { cwd: dir, env: { GATEWAY_SHUTDOWN_DELAY_SECS: '0', GATEWAY_CONFIG_POLL_SECS: '60' } },
    );
    try {
      const listening = await program.waitForLog((l) => l.msg === 'listening' && l.listener === 'proxy');
      const gateway = { url: `http://127.0.0.1:${String(listening.port)}` };
      const ts2 = join(dir, '..2026_01_01_00_01_00.000000002');
      await mkdir(ts2);
      await writeFile(join(ts2, 'config.json'), JSON.stringify(configWith(['a', 'swapped'])));
      await symlink('..2026_01_01_00_01_00.000000002', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      // Well within the 60 s poll: only the watcher can have seen it.
      await eventuallyStatus(gateway, 'swapped', 200);
    } finally {
      await program.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps serving the last good config when a reload is invalid, then recovers', async () => {
    const gateway = await startGateway(configWith(['a']));
    await gateway.writeConfig({ targets: { a: { url: upstream.url, no_such_field: true } } });
    const rejected = await gateway.program.waitForLog(
      (l) => l.msg?.startsWith('configuration reload rejected') ?? false,
    );
    expect(JSON.stringify(rejected.errors)).toContain('no_such_field');
    expect(await statusFor(gateway, 'a')).toBe(200);
    const metrics = await gateway.metrics();
    expect(metricValue(metrics, 'gateway_config_reloads_total', { result: 'failure' })).toBe(1);
    // /readyz stays 200: a bad edit must not take the pod out of service.
    expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);

    await gateway.writeConfig(configWith(['a', 'fixed']));
    await eventuallyStatus(gateway, 'fixed', 200);
  });

  it('survives the file vanishing for a moment (ENOENT race) and a burst of swaps', async () => {
    const gateway = await startGateway(configWith(['a']));
    await unlink(gateway.configPath);
    await sleep(50);
    for (let i = 1; i <= 5; i++) await gateway.writeConfig(configWith(['a', `burst${i}`]));
    await eventuallyStatus(gateway, 'burst5', 200);
    expect(await statusFor(gateway, 'burst4')).toBe(404);
    // Five rapid swaps are debounced: far fewer reloads than writes.
    await sleep(600);
    const reloads = gateway.program.logs.filter((l) => l.msg === 'configuration reloaded').length;
    expect(reloads).toBeGreaterThanOrEqual(1);
    expect(reloads).toBeLessThan(5);
  });

  it('falls back to polling when no directory event can arrive', async () => {
    // The flag points at a symlink whose target lives in another directory: the watched directory
    // sees nothing when the target changes, so only the poll can notice.
    const dir = await mkdtemp(join(tmpdir(), 'gateway-poll-'));
    const elsewhere = await mkdtemp(join(tmpdir(), 'gateway-poll-target-'));
    await writeFile(join(elsewhere, 'real.json'), JSON.stringify(configWith(['a'])));
    await symlink(join(elsewhere, 'real.json'), join(dir, 'config.json'));
    const gateway = await spawnGateway(join(dir, 'config.json'), ['--config-poll-secs', '0.5']);
    const program = gateway.program;
    try {
      await writeFile(join(elsewhere, 'real.json'), JSON.stringify(configWith(['a', 'polled'])));
      await eventuallyStatus(gateway, 'polled', 200);
    } finally {
      await program.kill();
      await rm(dir, { recursive: true, force: true });
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('does not reload with --watch false', async () => {
    const gateway = await startGateway(configWith(['a']), { args: ['--watch', 'false'] });
    await gateway.writeConfig(configWith(['a', 'ignored']));
    await sleep(1_500); // longer than the debounce and the 1 s poll the helper configures
    expect(await statusFor(gateway, 'ignored')).toBe(404);
    expect(gateway.program.logs.some((l) => l.msg === 'configuration reloaded')).toBe(false);
  });
});

describe('a log written next to the configuration', () => {
  it('debug output into the config directory and a busy neighbour file never trigger a reload; an edit does', async () => {
    // `gateway -f dir/config.json > dir/gateway.log` at debug: the watcher must not hear its own log.
    const dir = await mkdtemp(join(tmpdir(), 'gateway-logdir-'));
    const configPath = join(dir, 'config.json');
    const logPath = join(dir, 'gateway.log');
    await writeFile(configPath, JSON.stringify(configWith(['a'])));
    const fd = openSync(logPath, 'a');
    const proc = spawn(
      process.execPath,
      [`${ROOT}bin/gateway.js`, '-f', configPath, '--host', '127.0.0.1', '--port', '0'],
      {
        env: {
          ...process.env,
          LOG_LEVEL: 'debug',
          GATEWAY_METRICS_PORT: '0',
          GATEWAY_SHUTDOWN_DELAY_SECS: '0',
          // Only the watcher can see the edit within the test's time.
          GATEWAY_CONFIG_POLL_SECS: '60',
        },
        stdio: ['ignore', fd, fd],
      },
    );
    closeSync(fd);
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    const lines = async (): Promise<{ msg?: string; changed?: unknown }[]> => {
      // A watcher feeding on its log grows it by megabytes a second: stop before reading that.
      if ((await stat(logPath)).size > 1_000_000) throw new Error('the log grew past 1 MB');
      return (await readFile(logPath, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg?: string });
    };
    const waitForMsg = async (msg: string): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!(await lines()).some((l) => l.msg === msg)) {
        if (Date.now() > deadline) throw new Error(`no "${msg}" in the log`);
        await sleep(50);
      }
    };
    try {
      await waitForMsg('gateway started');
      const atStart = (await lines()).length;
      for (let i = 0; i < 20; i++) {
        await writeFile(join(dir, 'notes.txt'), `noise ${i}\n`, { flag: 'a' });
        await sleep(50);
      }
      await sleep(1_000);
      const quiet = await lines();
      expect(quiet.length - atStart).toBeLessThan(5);
      expect(quiet.some((l) => l.msg === 'configuration sources changed')).toBe(false);
      expect(quiet.some((l) => l.msg === 'configuration reloaded')).toBe(false);

      await rename(configPath, join(dir, 'previous.json'));
      await writeFile(configPath, JSON.stringify(configWith(['a', 'edited'])));
      await waitForMsg('configuration reloaded');
      await sleep(1_000);
      const after = await lines();
      expect(after.filter((l) => l.msg === 'configuration reloaded')).toHaveLength(1);
      expect(after.find((l) => l.msg === 'configuration sources changed')?.changed).toEqual(['config']);
      expect(after.length - atStart).toBeLessThan(10);
    } finally {
      proc.kill('SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
