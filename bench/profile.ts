/**
 * CPU profile of one proxy under the benchmark's load: starts the upstream and the proxy with
 * `--cpu-prof`, warms it up, drives it, stops it (SIGTERM, so the profile is written) and prints
 * the aggregated profile (bench/analyze-profile.ts).
 *
 *   node bench/profile.ts --proxy plain|limits|pool|strict|floor [--load closed|open|stream|reload]
 *                         [--seconds 20] [--warmup 5] [--out DIR] [--top 30] [--proxy-node-args="..."]
 *
 * `--mode gc` runs the proxy with `--trace-gc` instead of the CPU profiler and reports, over the
 * measured window, how much it allocated per request (the sum of heap growth between collections)
 * and how long its collections paused it (total, longest, how many over 1 ms): GC pressure,
 * independent of how busy the machine is.
 *
 * `--load open` drives 1,000 req/s open loop (the open-loop row) and prints the latency it saw, so
 * GC pauses can be set against the tail.
 *
 * `--load reload` profiles a gateway with 1,000 aliases under 1,000 req/s open loop while its
 * config file is rewritten every second (the reload row), and prints the latency it saw.
 *
 * `--proxy-node-args` replaces the shipped Node.js flags (bench/support/services.ts,
 * SHIPPED_NODE_ARGS); `--proxy-node-args=` profiles with Node's defaults.
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
import { openLoop } from './drivers/open-loop.ts';
import { closedLoopStreams } from './drivers/streaming.ts';
import { reloadWindow } from './scenarios/reload.ts';
import {
  BENCH_TOKEN,
  GATEWAY_KINDS,
  gatewayConfig,
  manyAliasesConfig,
  type GatewayKind,
} from './support/configs.ts';
import { STREAM_CHUNKS } from './support/payloads.ts';
import {
  SHIPPED_NODE_ARGS,
  startFloor,
  startGateway,
  startUpstream,
  type RunningGateway,
  type RunningProxy,
} from './support/services.ts';
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
    mode: { type: 'string', default: 'cpu' },
  },
});
const gcMode = values.mode === 'gc';
if (!gcMode && values.mode !== 'cpu') throw new Error(`unknown mode ${values.mode}`);

/** Allocation and pauses from `--trace-gc` lines, counted only while `measuring`. */
const gc = {
  measuring: false,
  lastAfter: undefined as number | undefined,
  allocatedMB: 0,
  pauseMs: 0,
  longestPauseMs: 0,
  pausesOver1Ms: 0,
  scavenges: 0,
  majors: 0,
};
const GC_LINE =
  /: (Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Sweep)\S*\s.*?([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ /;
function onGcLine(line: string): void {
  const match = GC_LINE.exec(line);
  if (!match) return;
  const before = Number(match[2]);
  const after = Number(match[3]);
  if (gc.measuring) {
    if (gc.lastAfter !== undefined) gc.allocatedMB += Math.max(0, before - gc.lastAfter);
    const pause = Number(match[4]);
    gc.pauseMs += pause;
    gc.longestPauseMs = Math.max(gc.longestPauseMs, pause);
    if (pause > 1) gc.pausesOver1Ms++;
    if (match[1] === 'Scavenge' || match[1] === 'Minor Mark-Sweep') gc.scavenges++;
    else gc.majors++;
  }
  gc.lastAfter = after;
}
const proxy = values.proxy as GatewayKind | 'floor';
if (proxy !== 'floor' && !GATEWAY_KINDS.includes(proxy)) throw new Error(`unknown proxy ${proxy}`);
const load = values.load;
if (load !== 'closed' && load !== 'open' && load !== 'stream' && load !== 'reload')
  throw new Error(`unknown load ${load}`);
if (load === 'reload' && proxy !== 'plain') throw new Error('--load reload profiles the plain gateway');
const outDir = values.out ?? join(tmpdir(), `gateway-profile-${Date.now()}`);
mkdirSync(outDir, { recursive: true });
const extra = values['proxy-node-args']?.split(' ').filter((a) => a.length > 0) ?? [...SHIPPED_NODE_ARGS];
const nodeArgs = gcMode
  ? ['--trace-gc', ...extra]
  : ['--cpu-prof', `--cpu-prof-dir=${outDir}`, `--cpu-prof-name=${proxy}-${load}.cpuprofile`, ...extra];
const spawnOptions = { nodeArgs, onText: onGcLine };

const upstream = await startUpstream(2);
let running: (RunningProxy & { stop(): Promise<void> }) | undefined;
let reloading: RunningGateway | undefined;
try {
  if (proxy === 'floor') {
    const floor = await startFloor(upstream.ports[0]!, spawnOptions);
    running = { ...floor, stop: () => floor.service.stop() };
  } else if (load === 'reload') {
    reloading = await startGateway(
      'gateway-reload',
      manyAliasesConfig(upstream.ports[0]!, 1000, 0),
      spawnOptions,
    );
    running = reloading;
  } else {
    running = await startGateway(`gateway-${proxy}`, gatewayConfig(proxy, upstream.ports), spawnOptions);
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
    if (load === 'reload') {
      const r = await reloadWindow(reloading!, target, upstream.service.pid, {
        rewrite: measure,
        upstreamPort: upstream.ports[0]!,
        aliases: 1000,
        ratePerSecond: 1000,
        durationSeconds: seconds,
        firstGeneration: 1,
      });
      served += r.load.ok + r.load.failed;
      const l = r.load.latency;
      return `${r.reloads} reloads for ${r.rewrites} rewrites; latency p50/p99/max ${l.percentile(50).toFixed(2)}/${l.percentile(99).toFixed(2)}/${l.max.toFixed(2)} ms`;
    }
    if (load === 'open') {
      const r = await openLoop(target, upstream.service.pid, {
        ratePerSecond: 1000,
        durationSeconds: seconds,
      });
      served += r.ok + r.failed;
      const l = r.latency;
      return `${(r.ok / r.durationSeconds).toFixed(0)} req/s, ${r.failed} failed; latency p50/p99/p99.9/max ${l.percentile(50).toFixed(2)}/${l.percentile(99).toFixed(2)}/${l.percentile(99.9).toFixed(2)}/${l.max.toFixed(2)} ms; send lag p99 ${r.lag.percentile(99).toFixed(2)} ms`;
    }
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
  const servedBefore = served;
  gc.measuring = true;
  const measured = await drive(Number(values.seconds), true);
  gc.measuring = false;
  process.stderr.write(`${measured}\n`);
  if (gcMode) {
    await running.stop();
    running = undefined;
    const requests = served - servedBefore;
    process.stdout.write(
      `### ${proxy}, ${load} load, GC over the measured window (${measured})\n\n` +
        `${requests} served; ${gc.scavenges} young and ${gc.majors} full collections; ` +
        `~${((gc.allocatedMB * 1024) / requests).toFixed(1)} KB allocated per request; ` +
        `GC pauses ${gc.pauseMs.toFixed(0)} ms (${((gc.pauseMs * 1000) / requests).toFixed(1)} µs per request), ` +
        `longest ${gc.longestPauseMs.toFixed(1)} ms, ${gc.pausesOver1Ms} over 1 ms\n`,
    );
  } else {
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
  }
} finally {
  await running?.stop();
  await upstream.service.stop();
}
