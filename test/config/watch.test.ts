import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { entriesBehind } from '../../src/gateway/config/directory-watch.js';
import { readSecretFile } from '../../src/gateway/config/secret-file.js';
import { FileConfigSource, type FileDocument } from '../../src/gateway/config/file-origin.js';
import { ConfigWatcher, type ConfigChange } from '../../src/gateway/config/watch.js';
import { ROOT } from '../helpers/process.js';
import { secretVolume } from '../helpers/secret-volume.js';
import { until } from '../helpers/wait.js';

let dir: string;
const watchers: ConfigWatcher<FileDocument>[] = [];

beforeEach(async () => {
  await mkdir(join(ROOT, 'test/.tmp'), { recursive: true });
  dir = await mkdtemp(join(ROOT, 'test/.tmp/watch-'));
});
afterEach(async () => {
  for (const watcher of watchers.splice(0)) watcher.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A logger at debug whose lines the test can read. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

async function startWatcher(configPath: string, keyFiles: string[], pollMs = 60_000) {
  const { logger, lines } = capturingLogger();
  const changes: ConfigChange<FileDocument>[] = [];
  const files = new Map<string, string>();
  for (const file of keyFiles) files.set(file, (await readSecretFile(file)).fingerprint);
  const watcher = new ConfigWatcher({
    source: new FileConfigSource(configPath, { onReadError: () => undefined }),
    initial: {
      version: createHash('sha256')
        .update(await readFile(configPath))
        .digest('hex'),
      files,
    },
    logger,
    pollMs,
    debounceMs: 50,
    onChange: async (change) => {
      changes.push(change);
      // What a load would report: the same files, read now.
      const read = new Map<string, string>();
      for (const file of keyFiles) read.set(file, (await readSecretFile(file)).fingerprint);
      return read;
    },
  });
  watchers.push(watcher);
  watcher.start();
  return { watcher, changes, lines };
}

describe('entriesBehind', () => {
  it('is the name itself, plus the first entry a symlink into the same directory goes through', async () => {
    await writeFile(join(dir, 'plain'), 'x');
    await mkdir(join(dir, '..2026'));
    await writeFile(join(dir, '..2026', 'team-a'), 'x');
    await symlink('..2026', join(dir, '..data'));
    await symlink('..data/team-a', join(dir, 'team-a'));
    await symlink(join(dir, 'plain'), join(dir, 'absolute'));
    await symlink('/elsewhere/file', join(dir, 'outside'));
    expect(entriesBehind(join(dir, 'plain'))).toEqual(['plain']);
    expect(entriesBehind(join(dir, 'team-a'))).toEqual(['team-a', '..data']);
    expect(entriesBehind(join(dir, 'absolute'))).toEqual(['absolute', 'plain']);
    expect(entriesBehind(join(dir, 'outside'))).toEqual(['outside']);
    expect(entriesBehind(join(dir, 'missing'))).toEqual(['missing']);
    // A relative name (`-f config.yaml`) is resolved before its link is compared with its directory.
    expect(entriesBehind(relative(process.cwd(), join(dir, 'team-a')))).toEqual(['team-a', '..data']);
  });
});

describe('watching referenced key files', () => {
  it('a ..data swap of the Secret volume is a change of that key file only, seen once', async () => {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const keys = join(dir, 'keys');
    const volume = await secretVolume(keys, { 'team-a': 'sk-one\n', upstream: 'sk-up\n' });
    const { changes } = await startWatcher(configPath, [join(keys, 'team-a'), join(keys, 'upstream')]);

    await volume.update({ 'team-a': 'sk-two\n', upstream: 'sk-up\n' });
    await until(() => changes.length === 1);
    expect(changes[0]).toMatchObject({ changed: [join(keys, 'team-a')], trigger: 'watch' });
    await sleep(300); // past the debounce: the same content must not count twice
    expect(changes).toHaveLength(1);
  });

  it('ignores events of other entries in a watched directory; reacts to its own', async () => {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const keyFile = join(dir, 'team-a');
    await writeFile(keyFile, 'sk-one\n');
    const { changes, lines } = await startWatcher(configPath, [keyFile]);

    await writeFile(join(dir, 'unrelated'), 'noise');
    await writeFile(join(dir, 'team-a.bak'), 'noise');
    await sleep(300);
    expect(changes).toEqual([]);
    expect(lines).toEqual([]);

    await writeFile(keyFile, 'sk-two\n');
    await until(() => changes.length === 1);
    const changed = lines.find((l) => l.msg === 'configuration sources changed');
    expect(changed?.events).toContain('team-a');
    expect(changes[0]!.changed).toEqual([keyFile]);
  });

  it('the poll compares key file contents when no event can arrive', async () => {
    // The key path is a symlink into another directory: its own directory never sees the change.
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const elsewhere = join(dir, 'elsewhere');
    await mkdir(elsewhere);
    await writeFile(join(elsewhere, 'real'), 'sk-one\n');
    const linkDir = join(dir, 'links');
    await mkdir(linkDir);
    await symlink(join(elsewhere, 'real'), join(linkDir, 'team-a'));
    const { changes } = await startWatcher(configPath, [join(linkDir, 'team-a')], 200);

    await writeFile(join(elsewhere, 'real'), 'sk-two\n');
    await until(() => changes.length === 1);
    expect(changes[0]).toMatchObject({ changed: [join(linkDir, 'team-a')], trigger: 'poll' });
  });

  it('a key file that disappears and comes back counts as two changes; logs carry no digest', async () => {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const keyFile = join(dir, 'team-a');
    await writeFile(keyFile, 'sk-one\n');
    const { changes, lines } = await startWatcher(configPath, [keyFile]);

    await rm(keyFile);
    await until(() => changes.length === 1);
    await writeFile(keyFile, 'sk-one\n');
    await until(() => changes.length === 2);
    const digest = createHash('sha256').update('sk-one\n').digest('hex');
    expect(JSON.stringify(lines)).not.toContain(digest);
    expect(JSON.stringify(lines)).not.toContain('sk-one');
  });

  it('starts watching a key file a new configuration references', async () => {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const keyDir = join(dir, 'new-keys');
    await mkdir(keyDir);
    const keyFile = join(keyDir, 'team-b');
    await writeFile(keyFile, 'sk-b\n');
    const { logger } = capturingLogger();
    const changes: ConfigChange<FileDocument>[] = [];
    const watcher = new ConfigWatcher({
      source: new FileConfigSource(configPath, { onReadError: () => undefined }),
      initial: { version: createHash('sha256').update('{}').digest('hex'), files: new Map() },
      logger,
      pollMs: 60_000,
      debounceMs: 50,
      // The new configuration references the key file: the load reports it.
      onChange: async (change) => {
        changes.push(change);
        return new Map([[keyFile, (await readSecretFile(keyFile)).fingerprint]]);
      },
    });
    watchers.push(watcher);
    watcher.start();

    await writeFile(configPath, '{"references": "team-b"}');
    await until(() => changes.length === 1);
    expect(watcher.watchedFiles()).toEqual([configPath, keyFile]);
    await writeFile(keyFile, 'sk-b2\n');
    await until(() => changes.length === 2);
    expect(changes[1]!.changed).toEqual([keyFile]);
  });
});
