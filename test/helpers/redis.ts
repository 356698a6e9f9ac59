import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * A real Redis server for the shared-state tests: Debian's `redis-server`, installed on demand when
 * the tests run as root (CI runs `make test` as root on a fresh machine), started on a free loopback
 * port with persistence off in a temp dir. When it cannot be found or installed, `startRedis` throws
 * with the reason, so the suites fail rather than skip: a shared limit that was never tested against
 * Redis must not look green.
 */

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); the port stays reserved for `start()`. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty (persistence is off), as a restarted Redis would be. */
  start(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP): connections stay open and every call times out, as with a hung or
   * partitioned Redis; its data stays. `resume()` (SIGCONT) lets it answer again.
   */
  pause(): void;
  resume(): void;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

const INSTALL_TIMEOUT_MS = 300_000;
const START_TIMEOUT_MS = 10_000;

function findRedisServer(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/usr/local/bin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, 'redis-server');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function run(file: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        timeout: INSTALL_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      },
      (error, stdout, stderr) => resolve({ ok: error === null, output: `${stdout}${stderr}` }),
    );
  });
}

let located: Promise<string> | undefined;

/**
 * The path of `redis-server`, installing Debian's package when it is missing and this is root. Test
 * files run in parallel workers, so the install runs under `flock`: one worker installs, the others
 * wait and then find it.
 */
export function ensureRedisServer(): Promise<string> {
  located ??= (async () => {
    const found = findRedisServer();
    if (found !== undefined) return found;
    if (process.getuid?.() !== 0) {
      throw new Error(
        'redis-server is not installed and these tests are not running as root, so they cannot install it. ' +
          'Install it (Debian: apt-get install -y redis-server) and run the tests again; the shared-state ' +
          'tests need a real Redis and do not skip.',
      );
    }
    const script =
      'command -v redis-server >/dev/null 2>&1 || ' +
      'apt-get install -y -o DPkg::Lock::Timeout=240 redis-server || ' +
      '{ apt-get update -o DPkg::Lock::Timeout=240 && apt-get install -y -o DPkg::Lock::Timeout=240 redis-server; }';
    const lock = join(tmpdir(), 'gateway-test-redis-install.lock');
    const result = existsSync('/usr/bin/flock')
      ? await run('/usr/bin/flock', [lock, 'sh', '-c', script])
      : await run('sh', ['-c', script]);
    const installed = findRedisServer();
    if (installed !== undefined) return installed;
    throw new Error(
      `redis-server could not be installed with apt-get (the shared-state tests need a real Redis and do not skip):\n` +
        result.output.split('\n').slice(-20).join('\n'),
    );
  })();
  // A failed attempt is not cached: the next suite tries again and reports its own failure.
  located.catch(() => (located = undefined));
  return located;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function launch(binary: string, port: number, dir: string): Promise<ChildProcess> {
  const proc = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--loglevel',
      'notice',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  return new Promise((resolve, reject) => {
    const fail = (message: string): void => {
      clearTimeout(timer);
      proc.kill('SIGKILL');
      reject(new Error(`redis-server on port ${port}: ${message}\n${output}`));
    };
    const timer = setTimeout(() => fail(`not ready within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        proc.stdout!.off('data', onData);
        // Keep draining the pipes so a chatty server never blocks on a full pipe.
        proc.stdout!.resume();
        proc.stderr!.resume();
        resolve(proc);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    proc.once('error', (error) => fail(error.message));
    proc.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
  });
}

async function terminate(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** Starts a private Redis on a free loopback port. Call `close()` in afterAll. */
export async function startRedis(): Promise<RedisServer> {
  const binary = await ensureRedisServer();
  const dir = await mkdtemp(join(tmpdir(), 'gateway-redis-'));
  let port = 0;
  let proc: ChildProcess | undefined;
  // Another worker may take the free port between the probe and the bind: try a few.
  for (let attempt = 1; proc === undefined; attempt++) {
    port = await freePort();
    try {
      proc = await launch(binary, port, dir);
    } catch (error) {
      if (attempt >= 5) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  let current: ChildProcess | undefined = proc;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      current?.kill('SIGCONT');
      if (current !== undefined) await terminate(current);
      current = undefined;
    },
    async start() {
      if (current !== undefined) return;
      current = await launch(binary, port, dir);
    },
    pause() {
      current?.kill('SIGSTOP');
    },
    resume() {
      current?.kill('SIGCONT');
    },
    async close() {
      current?.kill('SIGCONT');
      if (current !== undefined) await terminate(current);
      current = undefined;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
