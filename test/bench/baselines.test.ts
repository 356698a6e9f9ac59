import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import {
  findNginx,
  nginxConfig,
  prepareNginx,
  startNginx,
  testNginxConfig,
} from '../../bench/support/nginx.ts';
import { checkPassThrough } from '../../bench/support/pass-through.ts';
import { ensurePortkey, portkeyHeaders, startPortkey } from '../../bench/support/portkey.ts';
import { SHIPPED_NODE_ARGS, startUpstream, type RunningUpstream } from '../../bench/support/services.ts';

/** Skips a test that needs a program this machine cannot have, saying why in the output. */
function skipBecause(ctx: TestContext, reason: string): void {
  console.warn(`skipped: ${reason}`);
  ctx.skip(reason);
}

/** Local addresses (hex, as /proc/net/tcp writes them) with a socket listening on `port`. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const addresses: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let table: string;
    try {
      table = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === '0A' && local?.endsWith(`:${hexPort}`))
        addresses.push(local.slice(0, local.lastIndexOf(':')));
    }
  }
  return addresses;
}

const LOOPBACK = '0100007F';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the nginx baseline config', () => {
  const config = nginxConfig({ dir: '/tmp/x', listenPort: 18080, upstreamPort: 19090 });

  it('runs one worker on loopback, HTTP/1.1 with kept-alive upstream connections, streams unbuffered', () => {
    expect(config).toMatch(/^worker_processes 1;$/m);
    expect(config).toMatch(/^\s*listen 127\.0\.0\.1:18080;$/m);
    expect(config).toMatch(/^\s*server 127\.0\.0\.1:19090;$/m);
    expect(config).toMatch(/^\s*keepalive \d+;$/m);
    expect(config).toMatch(/^\s*proxy_http_version 1\.1;$/m);
    expect(config).toMatch(/^\s*proxy_set_header Connection "";$/m);
    expect(config).toMatch(/^\s*proxy_buffering off;$/m);
  });

  it('keeps its pid file, error log and temp paths in its own directory', () => {
    for (const directive of [
      'pid',
      'error_log',
      'client_body_temp_path',
      'proxy_temp_path',
      'fastcgi_temp_path',
      'uwsgi_temp_path',
      'scgi_temp_path',
    ]) {
      expect(config).toMatch(new RegExp(`^\\s*${directive} /tmp/x/`, 'm'));
    }
  });

  it('is accepted by nginx -t', async (ctx) => {
    const nginx = findNginx();
    if ('reason' in nginx) return skipBecause(ctx, nginx.reason);
    const dir = await prepareNginx(18080, 19090);
    try {
      const result = testNginxConfig(nginx.path, dir);
      expect(result.output).toMatch(/test is successful/);
      expect(result.ok).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the baselines on loopback', () => {
  let upstream: RunningUpstream;
  beforeAll(async () => {
    upstream = await startUpstream(1);
  });
  afterAll(async () => {
    await upstream?.service.stop();
  });

  it('nginx passes a completion and a paced stream through unbuffered, and stops with its worker', async (ctx) => {
    const nginx = findNginx();
    if ('reason' in nginx) return skipBecause(ctx, nginx.reason);
    const running = await startNginx(nginx.path, nginx.version, upstream.ports[0]!);
    const port = Number(new URL(running.origin).port);
    try {
      expect(running.processes.length).toBe(2);
      expect(listeningAddresses(port)).toEqual([LOOPBACK]);
      const check = await checkPassThrough({
        name: 'nginx',
        origin: running.origin,
        pid: running.service.pid,
        headers: {},
      });
      expect(check.problem).toBeUndefined();
      // Paced 100 ms apart, the events arrive 100 ms apart, not together at the end.
      expect(check.gaps.length).toBe(5);
      for (const gap of check.gaps.slice(1)) expect(gap).toBeGreaterThan(50);
    } finally {
      await running.stop();
    }
    for (const pid of running.processes) expect(isAlive(pid)).toBe(false);
    expect(await accepts(port)).toBe(false);
  });

  it(
    'Portkey routes a completion and a paced stream to the upstream unbuffered, on loopback only',
    { timeout: 300_000 },
    async (ctx) => {
      const install = await ensurePortkey((message) => console.warn(message));
      if ('reason' in install) return skipBecause(ctx, install.reason);
      const running = await startPortkey(install, upstream.ports[0]!, SHIPPED_NODE_ARGS);
      try {
        expect(listeningAddresses(Number(new URL(running.origin).port))).toEqual([LOOPBACK]);
        expect(running.headers).toEqual(portkeyHeaders(upstream.ports[0]!));
        const check = await checkPassThrough({
          name: 'portkey',
          origin: running.origin,
          pid: running.service.pid,
          headers: running.headers,
        });
        expect(check.problem).toBeUndefined();
        expect(check.gaps.length).toBe(5);
        for (const gap of check.gaps.slice(1)) expect(gap).toBeGreaterThan(50);
      } finally {
        await running.stop();
      }
      expect(isAlive(running.service.pid)).toBe(false);
    },
  );
});
