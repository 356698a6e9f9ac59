import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FileConfigSource, type FileDocument } from '../../src/gateway/config/file-origin.js';
import { ConfigWatcher, type ConfigChange } from '../../src/gateway/config/watch.js';
import { ROOT } from '../helpers/process.js';

// Some platforms report directory events without the entry's name. This file plays such a platform:
// every event the watcher hears carries `null`, so it cannot tell its own log file from the config.
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const watch = ((
    path: string,
    options: { persistent?: boolean },
    listener: (event: string, name: string | null) => void,
  ) => fs.watch(path, options, (event) => listener(event, null))) as unknown as typeof fs.watch;
  return { ...fs, default: { ...fs, watch }, watch };
});

let dir: string;
let watcher: ConfigWatcher<FileDocument> | undefined;

beforeEach(async () => {
  await mkdir(join(ROOT, 'test/.tmp'), { recursive: true });
  dir = await mkdtemp(join(ROOT, 'test/.tmp/watch-nameless-'));
});
afterEach(async () => {
  watcher?.stop();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A debug logger appending to `file`. A watcher that feeds on its own log writes gigabytes in
 * seconds, so past `cap` lines the sink stops the watcher and writes no more: the test then fails
 * on the count instead of filling the disk.
 */
function fileLogger(file: string, cap: number) {
  let lines = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (lines < cap) {
        lines++;
        appendFileSync(file, chunk);
      } else watcher?.stop();
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines: () => lines };
}

describe('a watcher on a platform without event names', () => {
  it('logging at debug into the watched directory does not feed it; a config edit still loads', async () => {
    const configPath = join(dir, 'config.json');
    await writeFile(configPath, '{}');
    const { logger, lines } = fileLogger(join(dir, 'gateway.log'), 100);
    const changes: ConfigChange<FileDocument>[] = [];
    watcher = new ConfigWatcher({
      source: new FileConfigSource(configPath, { onReadError: () => undefined }),
      initial: { version: createHash('sha256').update('{}').digest('hex'), files: new Map() },
      logger,
      pollMs: 60_000,
      debounceMs: 20,
      onChange: (change) => {
        changes.push(change);
        return Promise.resolve(new Map());
      },
    });
    watcher.start();

    for (let i = 0; i < 10; i++) {
      await writeFile(join(dir, 'unrelated'), `noise ${i}`);
      await sleep(20);
    }
    await sleep(500);
    expect(changes).toEqual([]);
    expect(lines()).toBe(0);

    await writeFile(configPath, '{"edited": true}');
    await vi.waitFor(() => expect(changes).toHaveLength(1), { timeout: 5_000 });
    await sleep(500);
    // The change is reported once, and the report's own write changes nothing further.
    expect(lines()).toBe(1);
    expect(changes).toHaveLength(1);
  });
});
