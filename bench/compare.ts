/**
 * A/B (or A/B/C...) comparison of proxy variants under the same load, alternating windows, for
 * before/after measurements of a change:
 *
 *   node bench/compare.ts --variant 'name=before;proxy=plain;bin=/tmp/before/bin/gateway.js' \
 *                         --variant 'name=after;proxy=plain' [--load closed|open|stream|paced|connections]
 *                         [--rounds 5] [--seconds 8] [--warmup 3] [--window-warmup 1]
 *                         [--arrivals periodic|poisson]
 *
 * Every measured window, whatever the load, follows `--window-warmup` seconds of the same load,
 * unmeasured: a process left idle through the other variants' windows starts slower, which would
 * cost whichever variant is measured right after another one (docs/performance.md, "Profiles and
 * before/after"). `--warmup` is the longer warm-up of every variant before the first round.
 *
 * Loads: `closed` (32 connections), `open` (1,000 requests/s), `stream` (32 clients streaming
 * unpaced completions back to back), `paced` (100 streams/s, each paced 10 ms per event, as the
 * paced-stream rows of bench/run.ts; latency is time to first byte), `connections` (16 clients, each
 * request on a new connection, as clients without keep-alive send them). `--arrivals` sets how the
 * `paced` load's streams arrive: `periodic` (default, one every 10 ms, as bench/run.ts) or
 * `poisson` (exponential gaps of the same mean, a seeded schedule; see bench/drivers/streaming.ts).
 *
 * A variant is `;`-separated `key=value` pairs:
 * - `name`: its label (required);
 * - `proxy`: `direct` (the upstream itself), `floor` or a gateway configuration (`plain`, `limits`,
 *   `pool`, `strict`);
 * - `bin`: another gateway build's `bin/gateway.js` (a `git worktree` of the earlier commit, built,
 *   with a `node_modules` symlink to this checkout's);
 * - `node`: node flags for the proxy process (space-separated, e.g. `--max-semi-space-size=8`;
 *   default: the shipped flags, SHIPPED_NODE_ARGS in bench/support/services.ts; `node=` for Node's
 *   defaults);
 * - `args`: extra program arguments (e.g. the floor's `--abort-on-close always`);
 * - `env`: extra environment of a gateway variant, space-separated `NAME=VALUE` words (e.g.
 *   glibc's `MALLOC_MMAP_THRESHOLD_=65536`, read when the process starts);
 * - `arrivals`: `poisson` or `periodic`, this variant's `paced` arrivals (to compare the two on one
 *   proxy in one run: two variants with the same proxy, different names).
 *
 * Prints per variant: median rate, latency percentiles, proxy CPU per 10k requests, peak RSS, the
 * median over rounds of its rate relative to the first variant in the same round, and the median
 * over rounds of its p50 latency minus the first variant's in the same round (with `direct` first,
 * the added latency of each proxy).
 */
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { closedLoop, type ClosedLoopResult } from './drivers/closed-loop.ts';
import { connectionPerRequest } from './drivers/connection-per-request.ts';
import { openLoop } from './drivers/open-loop.ts';
import {
  closedLoopStreams,
  openLoopStreams,
  type Arrivals,
  type StreamRunResult,
} from './drivers/streaming.ts';
import { BENCH_TOKEN, isKeyed, COMPARE_KINDS, gatewayConfig, type GatewayKind } from './support/configs.ts';
import { STREAM_CHUNKS } from './support/payloads.ts';
import { loopbackRoundTrip, machineStateLine } from './support/machine-state.ts';
import { stealSeconds } from './support/process.ts';
import { fmt, machine, renderMachine } from './support/report.ts';
import {
  SHIPPED_NODE_ARGS,
  splitWords,
  startFloor,
  startGateway,
  startUpstream,
  type RunningProxy,
} from './support/services.ts';
import { Samples, median, pooled, sum } from './support/stats.ts';
import type { CpuWindow, Target } from './support/target.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

interface Variant {
  name: string;
  proxy: 'direct' | 'floor' | GatewayKind;
  bin: string | undefined;
  nodeArgs: string[];
  args: string[];
  /** Extra environment of the proxy process. */
  env: Record<string, string>;
  /** How the `paced` load's streams arrive for this variant (default: `--arrivals`). */
  arrivals: Arrivals | undefined;
}

function parseArrivals(text: string): Arrivals {
  if (text !== 'poisson' && text !== 'periodic') throw new Error(`unknown arrivals ${text}`);
  return text;
}

function parseVariant(text: string): Variant {
  const fields = new Map(
    text.split(';').map((pair) => {
      const at = pair.indexOf('=');
      return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()] as const;
    }),
  );
  const name = fields.get('name');
  const proxy = (fields.get('proxy') ?? 'plain') as Variant['proxy'];
  if (!name) throw new Error(`variant without a name: ${text}`);
  if (proxy !== 'direct' && proxy !== 'floor' && !COMPARE_KINDS.includes(proxy))
    throw new Error(`unknown proxy ${proxy}`);
  const words = (key: string): string[] => splitWords(fields.get(key) ?? '');
  const nodeArgs = fields.has('node') ? words('node') : [...SHIPPED_NODE_ARGS];
  const arrivals = fields.get('arrivals');
  return {
    name,
    proxy,
    bin: fields.get('bin'),
    nodeArgs,
    args: words('args'),
    env: Object.fromEntries(
      words('env').map((word) => {
        const at = word.indexOf('=');
        if (at <= 0) throw new Error(`env takes NAME=VALUE words, got ${word}`);
        return [word.slice(0, at), word.slice(at + 1)];
      }),
    ),
    arrivals: arrivals === undefined ? undefined : parseArrivals(arrivals),
  };
}

interface Window {
  rate: number;
  latency: Samples;
  /** `paced` only: first-byte times of streams that started at an upstream tick, and of the rest. */
  atTick?: Samples;
  betweenTicks?: Samples;
  cpu: CpuWindow;
  count: number;
  peakRss: number;
  failed: number;
}

/** A window of a request load (closed, open, a connection per request). */
function requestWindow(r: ClosedLoopResult): Window {
  const rate = r.ok / r.durationSeconds;
  return { rate, latency: r.latency, cpu: r.cpu, count: r.ok, peakRss: r.peakRss, failed: r.failed };
}

/**
 * The paced load's first bytes split by when the stream started: at one of the upstream's ticks
 * (behind the other streams' events) or between them (bench/drivers/streaming.ts, `startedAtTick`).
 */
function tickTable(variants: readonly Variant[], windows: Map<string, Window[]>): string[] {
  const lines = [
    '| variant | started at a tick | TTFB p50 at a tick ms | TTFB p50 between ticks ms |',
    '|---|---|---|---|',
  ];
  for (const variant of variants) {
    const runs = windows.get(variant.name)!;
    const atTick = pooled(runs.flatMap((w) => (w.atTick ? [w.atTick] : [])));
    const between = pooled(runs.flatMap((w) => (w.betweenTicks ? [w.betweenTicks] : [])));
    const share = (atTick.count / (atTick.count + between.count)) * 100;
    lines.push(
      `| ${variant.name} | ${fmt(share, 0)}% | ${fmt(atTick.percentile(50))} | ${fmt(between.percentile(50))} |`,
    );
  }
  return lines;
}

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    load: { type: 'string', default: 'closed' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    'window-warmup': { type: 'string', default: '1' },
    arrivals: { type: 'string', default: 'periodic' },
  },
});
const variants = (values.variant ?? []).map(parseVariant);
if (variants.length < 2) throw new Error('give at least two --variant');
const load = values.load;
if (!['closed', 'open', 'stream', 'paced', 'connections'].includes(load)) {
  throw new Error(`unknown load ${load}`);
}
const arrivals = parseArrivals(values.arrivals);
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);

const tripBefore = await loopbackRoundTrip();
const stealBefore = stealSeconds();
const startedAt = performance.now();
const upstream = await startUpstream(2);
const running = new Map<string, RunningProxy & { stop(): Promise<void> }>();
try {
  for (const variant of variants) {
    if (variant.proxy === 'direct') continue;
    if (variant.proxy === 'floor') {
      const floor = await startFloor(upstream.ports[0]!, { nodeArgs: variant.nodeArgs, args: variant.args });
      running.set(variant.name, { ...floor, stop: () => floor.service.stop() });
    } else {
      running.set(
        variant.name,
        await startGateway(`gateway-${variant.name}`, gatewayConfig(variant.proxy, upstream.ports), {
          nodeArgs: variant.nodeArgs,
          args: variant.args,
          env: variant.env,
          ...(variant.bin ? { bin: variant.bin } : {}),
        }),
      );
    }
  }
  const targets = variants.map((variant): Target => {
    const proxy = running.get(variant.name);
    return {
      name: variant.name,
      origin: proxy?.origin ?? `http://127.0.0.1:${upstream.ports[0]!}`,
      pid: proxy?.service.pid,
      headers: isKeyed(variant.proxy) ? { authorization: `Bearer ${BENCH_TOKEN}` } : {},
    };
  });

  const measure = async (target: Target, durationSeconds: number): Promise<Window> => {
    const pid = upstream.service.pid;
    if (load === 'closed')
      return requestWindow(await closedLoop(target, pid, { connections: 32, durationSeconds }));
    if (load === 'connections') {
      return requestWindow(await connectionPerRequest(target, pid, { clients: 16, durationSeconds }));
    }
    if (load === 'open')
      return requestWindow(await openLoop(target, pid, { ratePerSecond: 1000, durationSeconds }));
    const r: StreamRunResult =
      load === 'stream'
        ? await closedLoopStreams(target, pid, { concurrency: 32, durationSeconds, chunks: STREAM_CHUNKS })
        : await openLoopStreams(target, pid, {
            ratePerSecond: 100,
            durationSeconds,
            chunks: STREAM_CHUNKS,
            intervalMs: 10,
            arrivals: variants.find((v) => v.name === target.name)?.arrivals ?? arrivals,
          });
    const ok = r.streams - r.incomplete;
    return {
      rate: ok / r.durationSeconds,
      latency: r.ttfb,
      atTick: r.ttfbAtTick,
      betweenTicks: r.ttfbBetweenTicks,
      cpu: r.cpu,
      count: ok,
      peakRss: r.peakRss,
      failed: r.incomplete,
    };
  };

  const windowWarmup = Number(values['window-warmup']);
  if (!(windowWarmup >= 0))
    throw new Error(`--window-warmup is a number of seconds, not ${values['window-warmup']}`);
  for (const target of targets) await measure(target, Number(values.warmup));
  const windows = new Map<string, Window[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const target of order) {
      process.stderr.write(`round ${round + 1}/${rounds}: ${target.name}\n`);
      if (windowWarmup > 0) await measure(target, windowWarmup);
      windows.get(target.name)!.push(await measure(target, seconds));
    }
  }

  const stolen = stealSeconds() - stealBefore;
  const elapsed = (performance.now() - startedAt) / 1000;
  const tripAfter = await loopbackRoundTrip();
  const baseline = windows.get(variants[0]!.name)!;
  const unit = load === 'stream' || load === 'paced' ? 'streams/s' : 'req/s';
  const lines = [
    `${load} load, ${rounds} rounds x ${seconds} s, alternating; ${renderMachine(machine())}`,
    '',
    machineStateLine(tripBefore, tripAfter, stolen, elapsed, cpus().length),
    '',
    `| variant | ${unit} | × ${variants[0]!.name} | p50 ms | p50 − ${variants[0]!.name} ms | p99 ms | ` +
      'CPU s / 10k | peak RSS MB | failed | other load |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const variant of variants) {
    const runs = windows.get(variant.name)!;
    const latency = pooled(runs.map((run) => run.latency));
    const ratio = median(runs.map((run, i) => run.rate / baseline[i]!.rate));
    const added = median(
      runs.map((run, i) => run.latency.percentile(50) - baseline[i]!.latency.percentile(50)),
    );
    const cpu = (sum(runs.map((r) => r.cpu.proxy)) / sum(runs.map((r) => r.count))) * 1e4;
    const others = Math.max(...runs.map((r) => r.cpu.others / r.cpu.seconds));
    lines.push(
      `| ${variant.name} | ${fmt(median(runs.map((r) => r.rate)), 0)} | ${fmt(ratio)} | ${fmt(latency.percentile(50))} | ` +
        `${fmt(added)} | ${fmt(latency.percentile(99))} | ${fmt(cpu)} | ${fmt(Math.max(...runs.map((r) => r.peakRss)), 0)} | ` +
        `${sum(runs.map((r) => r.failed))} | ${fmt(others)} |`,
    );
  }
  if (load === 'paced') lines.push('', ...tickTable(variants, windows));
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await Promise.all([...running.values()].map((proxy) => proxy.stop()));
  await upstream.service.stop();
}
