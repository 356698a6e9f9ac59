import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat } from '../helpers/client.js';
import { startGateway } from '../helpers/gateway.js';
import { spawnProgram } from '../helpers/process.js';
import { jsonReply, completion, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** `--access-log <path>`: lines appended to a file, written out at shutdown; a bad path stops the start. */

let upstream: RecordingUpstream;
const dirs: string[] = [];
/** A fresh directory, removed after the suite. */
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'access-log-'));
  dirs.push(dir);
  return dir;
}
beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, completion('up')));
});
afterAll(async () => {
  await upstream?.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('--access-log <path>', () => {
  it('appends one line per request to the file, every line written out by a graceful stop', async () => {
    const path = join(await tempDir(), 'access.log');
    const gateway = await startGateway(
      { targets: { up: { url: upstream.url } } },
      { args: ['--access-log', path] },
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': `file-${i}` },
        body: JSON.stringify(chat('up')),
      });
      await response.text();
      ids.push(response.headers.get('x-request-id')!);
    }
    // Stopped (SIGTERM) before the 200 ms batch timer: the shutdown writes the batch.
    gateway.program.proc.kill('SIGTERM');
    expect((await gateway.program.exited).code).toBe(0);
    await gateway.stop();
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { requestId: string }).requestId)).toEqual(ids);
    expect(ids).toEqual(['file-0', 'file-1', 'file-2', 'file-3', 'file-4']);
    // The access log is not in the process's own log.
    expect(gateway.program.logs.some((line) => line.log === 'access')).toBe(false);
  });

  it('a path that cannot be opened stops the start with exit code 2, naming it', async () => {
    const dir = await tempDir();
    const program = spawnProgram('gateway', [
      '--targets',
      join(dir, 'unused.json'),
      '--access-log',
      join(dir, 'missing-dir', 'access.log'),
    ]);
    const { code } = await program.exited;
    expect(code).toBe(2);
    expect(program.text()).toContain(
      `cannot open ${join(dir, 'missing-dir', 'access.log')} for appending (ENOENT)`,
    );
  });
});
