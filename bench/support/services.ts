import { request } from 'undici';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, spawnService, type LogLine, type Service } from './process.ts';

/**
 * The Node.js flags the gateway ships with: the image's `NODE_OPTIONS` (Dockerfile) and the chart's
 * `gateway.nodeOptions` (test/chart/dockerfile.test.ts keeps the three equal). Every proxy process
 * of the benchmark, the floor included, runs with them unless told otherwise, so the gateway is
 * measured as deployed and the floor under the same heap sizing.
 */
export const SHIPPED_NODE_ARGS: readonly string[] = ['--max-semi-space-size=16'];

/** The space-separated words of a command-line value (node flags, program arguments). */
export function splitWords(text: string): string[] {
  return text.split(' ').filter((word) => word.length > 0);
}

/** The environment the image ships with besides `NODE_OPTIONS` (Dockerfile): one malloc arena. */
export const SHIPPED_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '1' };

export interface ProxyProcessOptions {
  /** Node arguments of the proxy process (default `SHIPPED_NODE_ARGS`), e.g. `--cpu-prof`. */
  nodeArgs?: readonly string[];
  /** Called with every non-JSON output line of the proxy (e.g. `--trace-gc` lines). */
  onText?: (line: string) => void;
  /** Extra program arguments (after the script). */
  args?: string[];
  /** Extra environment of the proxy process, e.g. glibc's `MALLOC_*` tunables (read at start). */
  env?: Readonly<Record<string, string>>;
}

export interface RunningUpstream {
  service: Service;
  ports: number[];
}

export async function startUpstream(ports: number): Promise<RunningUpstream> {
  const service = spawnService('upstream', join(ROOT, 'bench/upstream.ts'), ['--ports', String(ports)]);
  const line = await service.waitForLine((l) => l.msg === 'listening');
  return { service, ports: line.ports as number[] };
}

export interface RunningProxy {
  service: Service;
  origin: string;
  adminOrigin?: string;
}

export async function startFloor(
  upstreamPort: number,
  options: ProxyProcessOptions = {},
): Promise<RunningProxy> {
  const service = spawnService(
    'floor',
    join(ROOT, 'bench/floor-proxy.ts'),
    ['--upstream', `http://127.0.0.1:${upstreamPort}`, ...(options.args ?? [])],
    {
      nodeArgs: [...(options.nodeArgs ?? SHIPPED_NODE_ARGS)],
      env: { ...SHIPPED_ENV, ...options.env },
      ...(options.onText ? { onText: options.onText } : {}),
    },
  );
  const line = await service.waitForLine((l) => l.msg === 'listening');
  return { service, origin: `http://127.0.0.1:${line.port as number}` };
}

export interface RunningGateway extends RunningProxy {
  adminOrigin: string;
  configPath: string;
  /** Replaces the config file atomically: write a temp file in the same directory, then rename. */
  writeConfig(config: unknown): Promise<void>;
  /** Successful reloads logged so far. */
  reloads(): number;
  stop(): Promise<void>;
}

const isReload = (line: LogLine): boolean => line.msg === 'configuration reloaded';

/**
 * Starts `bin/gateway.js` (or `options.bin`, another build) on OS-chosen loopback ports with its config in a fresh temp dir and reads
 * both ports from the `listening` log lines. Only reload lines are retained from its logs.
 */
export async function startGateway(
  name: string,
  config: unknown,
  options: ProxyProcessOptions & { bin?: string } = {},
): Promise<RunningGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-bench-'));
  const configPath = join(dir, 'config.json');
  await writeFile(configPath, JSON.stringify(config));
  const service = spawnService(
    name,
    options.bin ?? join(ROOT, 'bin/gateway.js'),
    [
      '--targets',
      configPath,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--shutdown-delay-secs',
      '0',
      ...(options.args ?? []),
    ],
    {
      nodeArgs: [...(options.nodeArgs ?? SHIPPED_NODE_ARGS)],
      // The access log's own cost (each line formatted and written) is measured, without the
      // harness parsing thousands of lines a second from the gateway's stdout on the same cores;
      // a variant's env may override it (`GATEWAY_ACCESS_LOG=off`). Older builds ignore it.
      env: { LOG_LEVEL: 'info', GATEWAY_ACCESS_LOG: '/dev/null', ...SHIPPED_ENV, ...options.env },
      keep: isReload,
      ...(options.onText ? { onText: options.onText } : {}),
    },
  );
  const proxy = await service.waitForLine((l) => l.msg === 'listening' && l.listener === 'proxy');
  const admin = await service.waitForLine((l) => l.msg === 'listening' && l.listener === 'admin');
  let counter = 0;
  return {
    service,
    origin: `http://127.0.0.1:${proxy.port as number}`,
    adminOrigin: `http://127.0.0.1:${admin.port as number}`,
    configPath,
    async writeConfig(next) {
      const temp = join(dir, `.config.json.tmp-${counter++}`);
      await writeFile(temp, JSON.stringify(next));
      await rename(temp, configPath);
    },
    reloads: () => service.count(isReload),
    async stop() {
      await service.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Requests and connections the upstream has seen so far, summed over its ports. */
export async function upstreamCounters(
  upstream: RunningUpstream,
): Promise<{ requests: number; connections: number }> {
  const response = await request(`http://127.0.0.1:${upstream.ports[0]}/__bench/stats`);
  const stats = (await response.body.json()) as {
    requests: Record<string, number>;
    connections: Record<string, number>;
  };
  const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);
  // The stats request itself is one request (and possibly one connection) on the first port.
  return { requests: total(stats.requests) - 1, connections: total(stats.connections) };
}
