/**
 * CPU profile of one proxy under the benchmark's load: starts the upstream and the proxy with
 * `--cpu-prof`, warms it up, drives it, stops it (SIGTERM, so the profile is written) and prints
 * the aggregated profile (bench/analyze-profile.ts).
 *
 *   node bench/profile.ts --proxy plain|limits|pool|strict|floor [--load closed|open|stream|paced|reload|connections]
 *                         [--seconds 20] [--warmup 5] [--out DIR] [--top 30] [--proxy-node-args="..."]
 *                         [--mode cpu|gc|alloc] [--gc-log FILE] [--bin PATH] [--args="..."]
 *
 * `--mode gc` runs the proxy with `--trace-gc-nvp` instead of the CPU profiler and reports, over the
 * measured window, how much it allocated per request, how much of that outlived two young-generation
 * collections and was promoted to the old generation (what makes each collection copy, and pause,
 * longer), and how long its collections paused it (median young pause, total, longest, how many over
 * 1 ms): GC pressure, independent of how busy the machine is. `--gc-log FILE` appends the raw
 * trace lines of the measured window to FILE.
 *
 * `--mode alloc` preloads bench/support/alloc-sampler.ts into the proxy: V8's sampling heap profiler
 * over the measured window, collected objects included, summarized as bytes allocated per request
 * by function and by file (bench/analyze-allocations.ts): what fills the young generation.
 *
 * `--load open` drives 1,000 req/s open loop (the open-loop row) and prints the latency it saw, so
 * GC pauses can be set against the tail. `--load paced` drives the paced-stream rows' load (100
 * streams/s, each event its own upstream write 10 ms apart): per-event costs that a back-to-back
 * stream (`--load stream`) spreads over several events per read are paid once per event there.
 *
 * `--load reload` profiles a gateway with 1,000 aliases under 1,000 req/s open loop while its
 * config file is rewritten every second (the reload row), and prints the latency it saw.
 * `--load connections` drives 16 clients that open a new connection for every request (clients
 * without keep-alive): with `--mode gc`, what per-connection state costs the young generation.
 *
 * `--bin PATH` profiles another build's gateway (its `bin/gateway.js`), e.g. a worktree of an
 * earlier commit, for before/after figures.
 *
 * `--args="..."` adds program arguments to the proxy (space-separated), e.g. the floor's `--spin-us 10`
 * or a gateway's `--access-log off`.
 *
 * `--proxy-node-args` replaces the shipped Node.js flags (bench/support/services.ts,
 * SHIPPED_NODE_ARGS); `--proxy-node-args=` profiles with Node's defaults.
 *
 * The warm-up is inside the profile (a process can only be profiled from its start); keep
 * `--seconds` well above `--warmup` so it is a small share.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderSummary, summarize, type CpuProfile } from './analyze-profile.ts';
import { renderAllocations, summarizeAllocations, type HeapProfile } from './analyze-allocations.ts';
import { closedLoop } from './drivers/closed-loop.ts';
import { connectionPerRequest } from './drivers/connection-per-request.ts';
import { openLoop } from './drivers/open-loop.ts';
import { closedLoopStreams, openLoopStreams } from './drivers/streaming.ts';
import { reloadWindow } from './scenarios/reload.ts';
import {
  BENCH_TOKEN,
  COMPARE_KINDS,
  gatewayConfig,
  isKeyed,
  manyAliasesConfig,
  type GatewayKind,
} from './support/configs.ts';
import { STREAM_CHUNKS } from './support/payloads.ts';
import {
  SHIPPED_NODE_ARGS,
  splitWords,
  startFloor,
  startGateway,
  startUpstream,
  type RunningGateway,
  type RunningProxy,
} from './support/services.ts';
import type { Target } from './support/target.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

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
    'gc-log': { type: 'string' },
    bin: { type: 'string' },
    args: { type: 'string' },
  },
});
const gcMode = values.mode === 'gc';
const allocMode = values.mode === 'alloc';
if (!gcMode && !allocMode && values.mode !== 'cpu') throw new Error(`unknown mode ${values.mode}`);

/** Allocation, promotion and pauses from `--trace-gc-nvp` lines, counted only while `measuring`. */
const gc = {
  measuring: false,
  allocatedBytes: 0,
  promotedBytes: 0,
  pauseMs: 0,
  longestPauseMs: 0,
  pausesOver1Ms: 0,
  scavengePausesMs: [] as number[],
  majors: 0,
};
const gcLog = values['gc-log'];
/** One numeric field of a `--trace-gc-nvp` line (`name=value`). */
function nvpField(line: string, name: string): number {
  const at = line.indexOf(` ${name}=`);
  return at < 0 ? 0 : Number.parseFloat(line.slice(at + name.length + 2));
}
function onGcLine(line: string): void {
  if (!gc.measuring || !line.includes(' pause=')) return;
  if (gcLog) appendFileSync(gcLog, `${line}\n`);
  const pause = nvpField(line, 'pause');
  gc.allocatedBytes += nvpField(line, 'allocated');
  gc.promotedBytes += nvpField(line, 'promoted');
  gc.pauseMs += pause;
  gc.longestPauseMs = Math.max(gc.longestPauseMs, pause);
  if (pause > 1) gc.pausesOver1Ms++;
  if (line.includes(' gc=s ')) gc.scavengePausesMs.push(pause);
  else gc.majors++;
}
const proxy = values.proxy as GatewayKind | 'floor';
if (proxy !== 'floor' && !COMPARE_KINDS.includes(proxy)) throw new Error(`unknown proxy ${proxy}`);
const load = values.load;
if (!['closed', 'open', 'stream', 'paced', 'reload', 'connections'].includes(load ?? ''))
  throw new Error(`unknown load ${load}`);
if (load === 'reload' && proxy !== 'plain') throw new Error('--load reload profiles the plain gateway');
const outDir = values.out ?? join(tmpdir(), `gateway-profile-${Date.now()}`);
mkdirSync(outDir, { recursive: true });
const extra =
  values['proxy-node-args'] === undefined ? [...SHIPPED_NODE_ARGS] : splitWords(values['proxy-node-args']);
const SAMPLER = fileURLToPath(new URL('./support/alloc-sampler.ts', import.meta.url));
const nodeArgs = gcMode
  ? ['--trace-gc-nvp', ...extra]
  : allocMode
    ? [`--import=${SAMPLER}`, ...extra]
    : ['--cpu-prof', `--cpu-prof-dir=${outDir}`, `--cpu-prof-name=${proxy}-${load}.cpuprofile`, ...extra];
const spawnOptions = {
  nodeArgs,
  args: values.args === undefined ? [] : splitWords(values.args),
  onText: onGcLine,
  ...(values.bin ? { bin: values.bin } : {}),
};

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
    headers: isKeyed(proxy) ? { authorization: `Bearer ${BENCH_TOKEN}` } : {},
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
    if (load === 'connections') {
      const r = await connectionPerRequest(target, upstream.service.pid, {
        clients: 16,
        durationSeconds: seconds,
      });
      served += r.ok + r.failed;
      return `${(r.ok / r.durationSeconds).toFixed(0)} req/s on a connection each, ${r.failed} failed, proxy ${(r.cpu.proxy / r.cpu.seconds).toFixed(2)} cores`;
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
    if (load === 'paced') {
      const r = await openLoopStreams(target, upstream.service.pid, {
        ratePerSecond: 100,
        durationSeconds: seconds,
        chunks: STREAM_CHUNKS,
        intervalMs: 10,
      });
      served += r.streams;
      return `${((r.streams - r.incomplete) / r.durationSeconds).toFixed(0)} streams/s paced, ${r.incomplete} incomplete, TTFB p50 ${r.ttfb.percentile(50).toFixed(2)} ms, proxy ${(r.cpu.proxy / r.cpu.seconds).toFixed(2)} cores`;
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
  if (allocMode) process.kill(running.service.pid, 'SIGUSR2');
  const measured = await drive(Number(values.seconds), true);
  gc.measuring = false;
  process.stderr.write(`${measured}\n`);
  if (gcMode) {
    await running.stop();
    running = undefined;
    const requests = served - servedBefore;
    const young = gc.scavengePausesMs.sort((a, b) => a - b);
    const kbPerRequest = (bytes: number): string => (bytes / 1024 / requests).toFixed(1);
    process.stdout.write(
      `### ${proxy}, ${load} load, GC over the measured window (${measured})\n\n` +
        `${requests} served; ~${kbPerRequest(gc.allocatedBytes)} KB allocated and ` +
        `${kbPerRequest(gc.promotedBytes)} KB promoted to the old generation per request; ` +
        `${young.length} young collections (median pause ${(young[young.length >> 1] ?? 0).toFixed(1)} ms), ` +
        `${gc.majors} full; GC pauses ${gc.pauseMs.toFixed(0)} ms (${((gc.pauseMs * 1000) / requests).toFixed(1)} µs per request), ` +
        `longest ${gc.longestPauseMs.toFixed(1)} ms, ${gc.pausesOver1Ms} over 1 ms\n`,
    );
  } else if (allocMode) {
    const pid = running.service.pid;
    await running.stop();
    running = undefined;
    const path = join(tmpdir(), `alloc-${pid}.heapprofile`);
    const profile = JSON.parse(readFileSync(path, 'utf8')) as HeapProfile;
    process.stdout.write(`### ${proxy}, ${load} load, allocations (${measured}); profile ${path}\n\n`);
    process.stdout.write(
      renderAllocations(summarizeAllocations(profile, Number(values.top)), served - servedBefore),
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
