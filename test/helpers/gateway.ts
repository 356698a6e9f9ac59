import { afterEach } from 'vitest';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { spawnProgram, type RunningProgram } from './process.js';

export interface StartedGateway {
  program: RunningProgram;
  /** `http://127.0.0.1:<proxy port>` */
  url: string;
  /** `http://127.0.0.1:<admin port>` */
  adminUrl: string;
  port: number;
  adminPort: number;
  dir: string;
  configPath: string;
  /** Replaces the config file atomically (write to a temp name, then rename), as editors do. */
  writeConfig: (config: unknown) => Promise<void>;
  /** The /metrics text. */
  metrics: () => Promise<string>;
  /** Waits until the gateway logged `count` successful reloads in total. */
  waitForReloads: (count: number, timeoutMs?: number) => Promise<void>;
  stop: () => Promise<void>;
}

export interface StartGatewayOptions {
  /** Extra command-line arguments. */
  args?: string[];
  env?: Record<string, string>;
  /** File name inside the temp dir (extension selects JSON or YAML). */
  fileName?: string;
}

export function serializeConfig(config: unknown, fileName: string): string {
  if (typeof config === 'string') return config;
  return fileName.endsWith('.json') ? JSON.stringify(config, null, 2) : toYaml(config);
}

export interface SpawnedGateway {
  program: RunningProgram;
  url: string;
  adminUrl: string;
  port: number;
  adminPort: number;
}

/**
 * Starts the gateway on an existing config file, on OS-chosen loopback ports, and waits for both
 * listeners. Test defaults: no shutdown delay, a 1 s config poll (callers' `args` come last and win).
 */
export function spawnGateway(
  configPath: string,
  args: string[] = [],
  env?: Record<string, string>,
): Promise<SpawnedGateway> {
  return spawnGatewayFrom(['--targets', configPath], args, env);
}

/** `spawnGateway` with the configuration's source given as flags (`--config-resource ns/name`). */
export async function spawnGatewayFrom(
  source: string[],
  args: string[] = [],
  env?: Record<string, string>,
): Promise<SpawnedGateway> {
  const program = spawnProgram(
    'gateway',
    [
      ...source,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--shutdown-delay-secs',
      '0',
      '--config-poll-secs',
      '1',
      ...args,
    ],
    { env },
  );
  const proxyLine = await program.waitForLog((l) => l.msg === 'listening' && l.listener === 'proxy');
  const adminLine = await program.waitForLog((l) => l.msg === 'listening' && l.listener === 'admin');
  const port = proxyLine.port as number;
  const adminPort = adminLine.port as number;
  return {
    program,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    port,
    adminPort,
  };
}

/** Writes `config` to a fresh temp dir and starts the gateway on OS-chosen loopback ports. */
export async function startGateway(
  config: unknown,
  options: StartGatewayOptions = {},
): Promise<StartedGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-test-'));
  const fileName = options.fileName ?? 'config.json';
  const configPath = join(dir, fileName);
  await writeFile(configPath, serializeConfig(config, fileName));
  const { program, url, adminUrl, port, adminPort } = await spawnGateway(
    configPath,
    options.args,
    options.env,
  );
  let tempCounter = 0;
  return {
    program,
    url,
    adminUrl,
    port,
    adminPort,
    dir,
    configPath,
    async writeConfig(next) {
      const temp = join(dir, `.${fileName}.tmp-${tempCounter++}`);
      await writeFile(temp, serializeConfig(next, fileName));
      await rename(temp, configPath);
    },
    async metrics() {
      const response = await fetch(`${adminUrl}/metrics`);
      return response.text();
    },
    async waitForReloads(count, timeoutMs = 10_000) {
      await program.waitForLog(
        () => program.logs.filter((l) => l.msg === 'configuration reloaded').length >= count,
        timeoutMs,
      );
    },
    async stop() {
      await program.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A `startGateway` whose gateways are stopped after each test of the calling file (call it at the
 * top level of a test file).
 */
export function gatewaysPerTest(): typeof startGateway {
  const started: StartedGateway[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((g) => g.stop()));
  });
  return async (config, options) => {
    const gateway = await startGateway(config, options);
    started.push(gateway);
    return gateway;
  };
}

/** Reads one sample value from Prometheus text, or undefined when the series is absent. */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    let labelText = '';
    let valueText: string;
    if (rest.startsWith('{')) {
      const close = rest.indexOf('}');
      labelText = rest.slice(1, close);
      valueText = rest.slice(close + 1).trim();
    } else if (rest.startsWith(' ')) {
      valueText = rest.trim();
    } else {
      continue;
    }
    const parsed: Record<string, string> = {};
    for (const match of labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) parsed[match[1]!] = match[2]!;
    if (Object.entries(labels).every(([k, v]) => parsed[k] === v)) return Number(valueText.split(' ')[0]);
  }
  return undefined;
}
