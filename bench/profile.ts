/**
 * CPU profile of one proxy under the benchmark's load: starts the upstream and the proxy with
 * `--cpu-prof`, warms it up, drives it, stops it (SIGTERM, so the profile is written) and prints
 * the aggregated profile (bench/analyze-profile.ts).
 *
 *   node bench/profile.ts --proxy plain|limits|pool|strict|floor [--load closed|stream]
 *                         [--seconds 20] [--warmup 5] [--out DIR] [--top 30] [--proxy-node-args "..."]
 *
 * The warm-up is inside the profile (a process can only be profiled from its start); keep
 * `--seconds` well above `--warmup` so it is a small share.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { renderSummary, summarize, type CpuProfile } from './analyze-profile.ts';
import { closedLoop } from './drivers/closed-loop.ts';
import { closedLoopStreams } from './drivers/streaming.ts';
import { BENCH_TOKEN, GATEWAY_KINDS, gatewayConfig, type GatewayKind } from './support/configs.ts';
import { STREAM_CHUNKS } from './support/payloads.ts';
import { startFloor, startGateway, startUpstream, type RunningProxy } from './support/services.ts';
import type { Target } from './support/target.ts';

const { values } = parseArgs({
  options: {
    proxy: { type: 'string', default: 'plain' },
    load: { type: 'string', default: 'closed' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    out: { type: 'string' },
    top: { type: 'string', default: '30' },
    'proxy-node-args': { type: 'string' },
  },
});
const proxy = values.proxy as GatewayKind | 'floor';
if (proxy !== 'floor' && !GATEWAY_KINDS.includes(proxy)) throw new Error(`unknown proxy ${proxy}`);
const load = values.load;
if (load !== 'closed' && load !== 'stream') throw new Error(`unknown load ${load}`);
const outDir = values.out ?? join(tmpdir(), `gateway-profile-${Date.now()}`);
mkdirSync(outDir, { recursive: true });
const extra = values['proxy-node-args']?.split(' ').filter((a) => a.length > 0) ?? [];
const nodeArgs = [
  '--cpu-prof',
  `--cpu-prof-dir=${outDir}`,
  `--cpu-prof-name=${proxy}-${load}.cpuprofile`,
  ...extra,
];

const upstream = await startUpstream(2);
let running: (RunningProxy & { stop(): Promise<void> }) | undefined;
try {
  if (proxy === 'floor') {
    const floor = await startFloor(upstream.ports[0]!, { nodeArgs });
    running = { ...floor, stop: () => floor.service.stop() };
  } else {
    running = await startGateway(`gateway-${proxy}`, gatewayConfig(proxy, upstream.ports), { nodeArgs });
  }
  const target: Target = {
    name: proxy,
    origin: running.origin,
    pid: running.service.pid,
    headers: proxy === 'limits' ? { authorization: `Bearer ${BENCH_TOKEN}` } : {},
  };
  /** Requests (or streams) served over the proxy's whole life, warm-up included. */
  let served = 0;
  const drive = async (seconds: number, measure: boolean): Promise<string> => {
    if (load === 'closed') {
      const r = await closedLoop(target, upstream.service.pid, {
        connections: 32,
        durationSeconds: seconds,
        measure,
      });
      served += r.ok + r.failed;
      return `${(r.ok / r.durationSeconds).toFixed(0)} req/s, ${r.failed} failed, proxy ${(r.cpu.proxy / r.cpu.seconds).toFixed(2)} cores`;
    }
    const r = await closedLoopStreams(target, upstream.service.pid, {
      concurrency: 32,
      durationSeconds: seconds,
      chunks: STREAM_CHUNKS,
    });
    served += r.streams;
    return `${((r.streams - r.incomplete) / r.durationSeconds).toFixed(0)} streams/s, ${r.incomplete} incomplete, proxy ${(r.cpu.proxy / r.cpu.seconds).toFixed(2)} cores`;
  };
  process.stderr.write(`profiling ${proxy} under ${load} load: warm-up ${values.warmup} s\n`);
  await drive(Number(values.warmup), false);
  const measured = await drive(Number(values.seconds), true);
  process.stderr.write(`${measured}\n`);
  await running.stop();
  running = undefined;
  const file = readdirSync(outDir).find((name) => name.startsWith(`${proxy}-${load}`));
  if (!file) throw new Error(`no profile written to ${outDir}`);
  const path = join(outDir, file);
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  process.stdout.write(
    `### ${proxy}, ${load} load (${measured}; ${served} served in all); profile ${path}\n\n`,
  );
  process.stdout.write(renderSummary(summarize(profile, Number(values.top)), served));
} finally {
  await running?.stop();
  await upstream.service.stop();
}
