/**
 * Keys kept out of the configuration file (`from_file`, `from_env`), through a real gateway process:
 * the resolved keys are the ones accepted and sent upstream, and a key file rotated the way the
 * kubelet updates a Secret volume is picked up by the running process.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, spawnGateway, type SpawnedGateway } from '../helpers/gateway.js';
import { ROOT, spawnProgram, type RunningProgram } from '../helpers/process.js';
import { secretVolume } from '../helpers/secret-volume.js';
import { jsonReply, OK_COMPLETION, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { untilEquals } from '../helpers/wait.js';

let upstream: RecordingUpstream;
let dir: string;
const programs: RunningProgram[] = [];

beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, OK_COMPLETION));
});
afterAll(async () => {
  await upstream.close();
});
afterEach(async () => {
  await Promise.all(programs.splice(0).map((p) => p.kill()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  await mkdir(join(ROOT, 'test/.tmp'), { recursive: true });
  dir = await mkdtemp(join(ROOT, 'test/.tmp/gateway-secrets-'));
  return dir;
}

async function writeConfig(config: unknown): Promise<string> {
  const path = join(dir, 'config.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  return path;
}

async function start(configPath: string, env?: Record<string, string>): Promise<SpawnedGateway> {
  // A long poll: a rotation must be noticed through the directory watch.
  const gateway = await spawnGateway(configPath, ['--config-poll-secs', '60'], env);
  programs.push(gateway.program);
  return gateway;
}

/** A config whose client key and upstream key are both read from files. */
function fileKeyedConfig(clientKeyFile: string, upstreamKeyFile: string) {
  return {
    targets: { a: { url: upstream.url, keys: ['team-a'], gateway_key: { from_file: upstreamKeyFile } } },
    auth: {
      key_definitions: { 'team-a': { key: { from_file: clientKeyFile }, labels: { account: 'acme' } } },
    },
  };
}

async function statusWith(gateway: { url: string }, key: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'a', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

const eventuallyStatus = (gateway: { url: string }, key: string, expected: number) =>
  untilEquals(() => statusWith(gateway, key), expected, `key ${key.slice(0, 6)}...`);

async function metrics(gateway: { adminUrl: string }): Promise<string> {
  return (await fetch(`${gateway.adminUrl}/metrics`)).text();
}

const lastUpstreamAuthorization = (): string | undefined => upstream.requests.at(-1)?.headers.authorization;

const reloads = (program: RunningProgram, msg: string) =>
  program.logs.filter((l) => l.msg?.startsWith(msg) ?? false);

/** Every log line and all raw output of the process, to search for a leaked key. */
const everything = (program: RunningProgram): string => JSON.stringify(program.logs) + program.text();

describe('keys read from files', () => {
  it('accepts the client key of a file and sends the upstream key of a file', async () => {
    await freshDir();
    const volume = await secretVolume(join(dir, 'keys'), {
      'team-a': 'sk-client-0001\n',
      upstream: 'sk-upstream-0001\n',
    });
    const gateway = await start(
      await writeConfig(fileKeyedConfig(volume.path('team-a'), volume.path('upstream'))),
    );

    expect(await statusWith(gateway, 'sk-client-0001')).toBe(200);
    expect(lastUpstreamAuthorization()).toBe('Bearer sk-upstream-0001');
    expect(await statusWith(gateway, 'sk-client-0002')).toBe(401);
    const loaded = gateway.program.logs.find((l) => l.msg === 'configuration loaded');
    expect(loaded?.keyFiles).toEqual([volume.path('team-a'), volume.path('upstream')]);
    expect(everything(gateway.program)).not.toContain('sk-client-0001');
    expect(everything(gateway.program)).not.toContain('sk-upstream-0001');
  });

  it('rotates both keys on a Secret volume update, in the same process', async () => {
    await freshDir();
    const volume = await secretVolume(join(dir, 'keys'), {
      'team-a': 'sk-old-client\n',
      upstream: 'sk-old-up\n',
    });
    const configPath = await writeConfig(fileKeyedConfig(volume.path('team-a'), volume.path('upstream')));
    const gateway = await start(configPath);
    const pid = gateway.program.proc.pid;
    expect(await statusWith(gateway, 'sk-old-client')).toBe(200);
    const before = await metrics(gateway);
    expect(metricValue(before, 'gateway_config_reloads_total', { result: 'success' })).toBe(0);
    const hashBefore = /gateway_config_info\{hash="([0-9a-f]{64})"\} 1/.exec(before)?.[1];
    expect(hashBefore).toBeDefined();

    await volume.update({ 'team-a': 'sk-new-client\n', upstream: 'sk-new-up\n' });

    await eventuallyStatus(gateway, 'sk-old-client', 401);
    expect(await statusWith(gateway, 'sk-new-client')).toBe(200);
    expect(lastUpstreamAuthorization()).toBe('Bearer sk-new-up');
    expect(gateway.program.proc.pid).toBe(pid);
    expect(gateway.program.proc.exitCode).toBeNull();

    const after = await metrics(gateway);
    expect(metricValue(after, 'gateway_config_reloads_total', { result: 'success' })).toBe(1);
    expect(metricValue(after, 'gateway_config_reloads_total', { result: 'failure' })).toBe(0);
    // The hash covers the configuration file, which did not change: the reload counter shows the rotation.
    expect(after).toContain(`gateway_config_info{hash="${hashBefore}"} 1`);
    const reloaded = reloads(gateway.program, 'configuration reloaded');
    expect(reloaded).toHaveLength(1);
    expect(reloaded[0]!.changed).toEqual([volume.path('team-a'), volume.path('upstream')]);
    for (const key of ['sk-old-client', 'sk-old-up', 'sk-new-client', 'sk-new-up'])
      expect(everything(gateway.program)).not.toContain(key);
  });

  it('refuses a rotation to a missing or an empty key file and keeps the old key, then recovers', async () => {
    await freshDir();
    const volume = await secretVolume(join(dir, 'keys'), { 'team-a': 'sk-kept-0001\n', upstream: 'sk-up\n' });
    const gateway = await start(
      await writeConfig(fileKeyedConfig(volume.path('team-a'), volume.path('upstream'))),
    );
    const keyPath = volume.path('team-a');
    const rejected = () => reloads(gateway.program, 'configuration reload rejected');

    // The new generation lacks the key: `team-a -> ..data/team-a` dangles.
    await volume.update({ upstream: 'sk-up\n' });
    await gateway.program.waitForLog(() => rejected().length === 1);
    expect(rejected()[0]!.errors).toEqual([
      `$.auth.key_definitions["team-a"].key.from_file: cannot read ${keyPath}: no such file (ENOENT)`,
    ]);
    expect(await statusWith(gateway, 'sk-kept-0001')).toBe(200);
    let text = await metrics(gateway);
    expect(metricValue(text, 'gateway_config_reloads_total', { result: 'failure' })).toBe(1);
    expect(metricValue(text, 'gateway_config_last_reload_successful')).toBe(0);
    expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);

    await volume.update({ 'team-a': '', upstream: 'sk-up\n' });
    await gateway.program.waitForLog(() => rejected().length === 2);
    expect(rejected()[1]!.errors).toEqual([
      `$.auth.key_definitions["team-a"].key.from_file: ${keyPath} is empty`,
    ]);
    expect(await statusWith(gateway, 'sk-kept-0001')).toBe(200);
    text = await metrics(gateway);
    expect(metricValue(text, 'gateway_config_reloads_total', { result: 'failure' })).toBe(2);

    await volume.update({ 'team-a': 'sk-fixed-0001\n', upstream: 'sk-up\n' });
    await eventuallyStatus(gateway, 'sk-fixed-0001', 200);
    expect(await statusWith(gateway, 'sk-kept-0001')).toBe(401);
    text = await metrics(gateway);
    expect(metricValue(text, 'gateway_config_reloads_total', { result: 'success' })).toBe(1);
    expect(metricValue(text, 'gateway_config_last_reload_successful')).toBe(1);
    expect(everything(gateway.program)).not.toContain('sk-kept-0001');
    expect(everything(gateway.program)).not.toContain('sk-fixed-0001');
  });

  it('does not reload for other files of the key directory, nor for keys it does not reference', async () => {
    await freshDir();
    const volume = await secretVolume(join(dir, 'keys'), {
      'team-a': 'sk-stable-0001\n',
      upstream: 'sk-up\n',
      unreferenced: 'sk-other-1\n',
    });
    const gateway = await start(
      await writeConfig(fileKeyedConfig(volume.path('team-a'), volume.path('upstream'))),
    );
    const changes = () => gateway.program.logs.filter((l) => l.msg === 'configuration sources changed');

    await writeFile(join(volume.root, 'notes.txt'), 'unrelated');
    await writeFile(join(volume.root, 'team-a.swp'), 'unrelated');
    await sleep(600);
    expect(changes()).toEqual([]);

    // The Secret changes, but only in a key the configuration does not reference: the `..data` swap
    // is heard, and the check past the debounce finds nothing that changed.
    await volume.update({ 'team-a': 'sk-stable-0001\n', upstream: 'sk-up\n', unreferenced: 'sk-other-2\n' });
    await sleep(1_000);
    expect(changes()).toEqual([]);
    expect(reloads(gateway.program, 'configuration reloaded')).toHaveLength(0);
    expect(reloads(gateway.program, 'configuration reload rejected')).toHaveLength(0);

    // Control: a change of a referenced key is picked up.
    await volume.update({ 'team-a': 'sk-moved-0001\n', upstream: 'sk-up\n', unreferenced: 'sk-other-2\n' });
    await eventuallyStatus(gateway, 'sk-moved-0001', 200);
  });

  it('watches a key file a reloaded configuration starts to reference', async () => {
    await freshDir();
    const configPath = await writeConfig({
      targets: { a: { url: upstream.url, keys: ['team-a'] } },
      auth: { key_definitions: { 'team-a': { key: 'sk-literal-0001' } } },
    });
    const gateway = await start(configPath);
    expect(await statusWith(gateway, 'sk-literal-0001')).toBe(200);

    const volume = await secretVolume(join(dir, 'keys'), { 'team-a': 'sk-from-file-1\n' });
    await writeFile(
      configPath,
      JSON.stringify({
        targets: { a: { url: upstream.url, keys: ['team-a'] } },
        auth: { key_definitions: { 'team-a': { key: { from_file: volume.path('team-a') } } } },
      }),
    );
    await eventuallyStatus(gateway, 'sk-from-file-1', 200);
    expect(await statusWith(gateway, 'sk-literal-0001')).toBe(401);

    await volume.update({ 'team-a': 'sk-from-file-2\n' });
    await eventuallyStatus(gateway, 'sk-from-file-2', 200);
    expect(await statusWith(gateway, 'sk-from-file-1')).toBe(401);
  });
});

describe('keys read from the environment', () => {
  it('accepts the client key of a variable and sends the upstream key of a variable', async () => {
    await freshDir();
    const gateway = await start(
      await writeConfig({
        targets: {
          a: {
            url: upstream.url,
            keys: [{ from_env: 'TEST_CLIENT_KEY' }],
            gateway_key: { from_env: 'TEST_UP_KEY' },
          },
        },
      }),
      { TEST_CLIENT_KEY: 'sk-env-client-1', TEST_UP_KEY: 'sk-env-up-1\n' },
    );
    expect(await statusWith(gateway, 'sk-env-client-1')).toBe(200);
    expect(lastUpstreamAuthorization()).toBe('Bearer sk-env-up-1');
    expect(await statusWith(gateway, 'TEST_CLIENT_KEY')).toBe(401);
    const loaded = gateway.program.logs.find((l) => l.msg === 'configuration loaded');
    expect(loaded?.keyEnv).toEqual(['TEST_CLIENT_KEY', 'TEST_UP_KEY']);
    expect(everything(gateway.program)).not.toContain('sk-env-client-1');
  });
});

describe('startup with a reference that cannot be resolved', () => {
  async function failedStart(config: unknown, env: Record<string, string> = {}) {
    const configPath = await writeConfig(config);
    const program = spawnProgram('gateway', ['--targets', configPath, '--port', '0', '--metrics-port', '0'], {
      env,
    });
    programs.push(program);
    const { code } = await program.exited;
    return { code, output: everything(program) };
  }

  it('exits 2 naming the field and the file or variable, never the value', async () => {
    await freshDir();
    const twoLines = join(dir, 'two-lines');
    await writeFile(twoLines, 'sk-line-one-01\nsk-line-two-02\n');
    const missing = join(dir, 'missing-key');
    const { code, output } = await failedStart(
      {
        targets: {
          a: { url: upstream.url, keys: ['team-a'], gateway_key: { from_file: twoLines } },
          b: { url: upstream.url, gateway_key: { from_env: 'TEST_EMPTY_KEY' } },
        },
        auth: { key_definitions: { 'team-a': { key: { from_file: missing } } } },
      },
      { TEST_EMPTY_KEY: '' },
    );
    expect(code).toBe(2);
    expect(output).toContain(
      `$.auth.key_definitions[\\"team-a\\"].key.from_file: cannot read ${missing}: no such file (ENOENT)`,
    );
    expect(output).toContain(
      `$.targets.a.gateway_key.from_file: content of ${twoLines}: must not contain line breaks or NUL characters`,
    );
    expect(output).toContain(
      '$.targets.b.gateway_key.from_env: environment variable TEST_EMPTY_KEY is empty',
    );
    expect(output).not.toContain('sk-line-one-01');
    expect(output).not.toContain('sk-line-two-02');
  });
});
