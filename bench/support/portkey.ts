/**
 * Portkey's open-source gateway as a baseline: the pinned release from the npm registry, installed
 * on demand into a cache directory outside the repository, run with this process's Node.js on a
 * loopback port, and pointed at the benchmark's upstream per request with its own headers (an
 * OpenAI provider with a custom host).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { INTERVAL_HEADER, STREAM_HEADER } from './payloads.ts';
import { spawnService, type Service } from './process.ts';

export const PORTKEY_PACKAGE = '@portkey-ai/gateway';
export const PORTKEY_VERSION = '1.15.2';
/**
 * Portkey asks for `@hono/node-server` ^1.3.3, which the registry resolves to 1.19.x today; with
 * any release after 1.14.1, Portkey's streamed responses fail (`TypeError: immutable` when it adds
 * its headers to the provider's response: Portkey-AI/gateway issue 1389). 1.13.5 is the release
 * Portkey's own repository locks and patches. On Node.js 24 it logs "Failed to find Response
 * internal state key" at start and then sends bodies through its stream path.
 */
export const HONO_NODE_SERVER_VERSION = '1.13.5';

/** `~/.cache/llm-gateway/portkey/<pins>` (or under `$XDG_CACHE_HOME`); never in the repository. */
export function portkeyDir(): string {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(
    cache,
    'llm-gateway',
    'portkey',
    `${PORTKEY_VERSION}-hono-node-server-${HONO_NODE_SERVER_VERSION}`,
  );
}

const START_SCRIPT = 'node_modules/@portkey-ai/gateway/build/start-server.js';
const LOOPBACK_LISTEN = fileURLToPath(new URL('./loopback-listen.ts', import.meta.url));

function installedVersion(dir: string, name: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    return undefined;
  }
}

function isInstalled(dir: string): boolean {
  return (
    existsSync(join(dir, START_SCRIPT)) &&
    installedVersion(dir, PORTKEY_PACKAGE) === PORTKEY_VERSION &&
    installedVersion(dir, '@hono/node-server') === HONO_NODE_SERVER_VERSION
  );
}

export type PortkeyInstall = { script: string; version: string } | { reason: string };

/**
 * The pinned Portkey, installed with npm if the cache does not hold it yet (about 10 s). The
 * install goes to a staging directory renamed into place, so a run and a test installing at the
 * same time do not see each other's half-written tree. Install scripts are not run (Portkey's only
 * one applies patches its package does not ship).
 */
export async function ensurePortkey(log: (message: string) => void = () => {}): Promise<PortkeyInstall> {
  const dir = portkeyDir();
  const script = join(dir, START_SCRIPT);
  if (isInstalled(dir)) return { script, version: PORTKEY_VERSION };
  const parent = join(dir, '..');
  let staging: string | undefined;
  try {
    await mkdir(parent, { recursive: true });
    staging = await mkdtemp(join(parent, '.install-'));
    log(`installing ${PORTKEY_PACKAGE}@${PORTKEY_VERSION} from the npm registry into ${dir}`);
    await writeFile(
      join(staging, 'package.json'),
      JSON.stringify({
        private: true,
        dependencies: { [PORTKEY_PACKAGE]: PORTKEY_VERSION },
        overrides: { '@hono/node-server': HONO_NODE_SERVER_VERSION },
      }),
    );
    await promisify(execFile)(
      'npm',
      ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=dev', '--loglevel=error'],
      { cwd: staging, timeout: 300_000 },
    );
    if (!isInstalled(staging)) throw new Error('npm finished but the pinned versions are not in place');
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir).catch(async (error: unknown) => {
      // Another install finished first: use it.
      if (!isInstalled(dir)) throw error;
    });
    return { script, version: PORTKEY_VERSION };
  } catch (error) {
    const message = (error as { stderr?: string; message?: string }).stderr || (error as Error).message;
    return {
      reason:
        `${PORTKEY_PACKAGE}@${PORTKEY_VERSION} could not be installed into ${dir} ` +
        `(needs npm on PATH and the npm registry): ${message.trim().split('\n').slice(-3).join(' ')}`,
    };
  } finally {
    if (staging) await rm(staging, { recursive: true, force: true });
  }
}

/**
 * The headers that route a request through Portkey to the upstream: the OpenAI provider with a
 * custom host (Portkey trusts 127.0.0.1 as a custom host by default). Portkey sends a provider only
 * the headers named in `x-portkey-forward-headers`, so the upstream's streaming headers are named
 * there.
 */
export function portkeyHeaders(upstreamPort: number): Record<string, string> {
  return {
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `http://127.0.0.1:${upstreamPort}/v1`,
    authorization: 'Bearer bench',
    'x-portkey-forward-headers': `${STREAM_HEADER},${INTERVAL_HEADER}`,
  };
}

export interface RunningPortkey {
  service: Service;
  origin: string;
  version: string;
  /** Every request to it carries these. */
  headers: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts Portkey's `start-server.js` with this process's Node.js and `nodeArgs`, headless (no log
 * console) and with `NODE_ENV=production`, as deployed; its listener bound to loopback by the
 * preloaded `loopback-listen.ts`.
 */
export async function startPortkey(
  install: { script: string; version: string },
  upstreamPort: number,
  nodeArgs: readonly string[],
): Promise<RunningPortkey> {
  const service = spawnService('portkey', install.script, ['--headless'], {
    nodeArgs: [...nodeArgs, '--import', LOOPBACK_LISTEN],
    env: { NODE_ENV: 'production' },
  });
  const line = await service.waitForLine((l) => l.msg === 'listening' && l.listener === 'proxy');
  return {
    service,
    origin: `http://127.0.0.1:${line.port as number}`,
    version: install.version,
    headers: portkeyHeaders(upstreamPort),
    stop: () => service.stop(),
  };
}
