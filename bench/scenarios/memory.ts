import { Pool, request } from 'undici';
import { streamOnce, type StreamOutcome } from '../drivers/streaming.ts';
import { ALIAS } from '../support/payloads.ts';
import { peakRssMB, resetPeakRss, rssMB } from '../support/process.ts';
import { sleep } from '../support/stats.ts';
import { proxyPids, type Target } from '../support/target.ts';

export interface SlowStreamsOptions {
  streams: number;
  chunks: number;
  intervalMs: number;
  /** Streams opened per ramp step (every 100 ms). */
  rampBatch: number;
}

export interface GatewayGauges {
  /** `gateway_model_inflight` of the benchmarked alias. */
  inflight: number | undefined;
  /** V8 heap used and total (prom-client default metrics), MB. */
  heapUsed: number | undefined;
  heapTotal: number | undefined;
}

export interface SlowStreamsResult {
  /** RSS before the first stream, MB. */
  idleRss: number;
  /** VmHWM over the row (reset before it), MB. */
  peakRss: number;
  /** Largest sampled RSS while at least 95% of the streams were open at once, MB. */
  heldRss: number;
  /** Most streams seen open at once (first bytes received, not yet ended). */
  maxOpen: number;
  /** The gateway's own gauges while the streams were open (undefined for other proxies). */
  gateway: GatewayGauges | undefined;
  complete: number;
  incomplete: number;
}

/** One unlabelled or fully labelled sample from Prometheus text. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1).split(' ')[0]);
  }
  return undefined;
}

async function gatewayGauges(adminOrigin: string): Promise<GatewayGauges> {
  const response = await request(`${adminOrigin}/metrics`);
  const text = await response.body.text();
  const mb = (value: number | undefined): number | undefined =>
    value === undefined ? undefined : value / 1e6;
  return {
    inflight: sample(text, `gateway_model_inflight{model="${ALIAS}"}`),
    heapUsed: mb(sample(text, 'nodejs_heap_size_used_bytes')),
    heapTotal: mb(sample(text, 'nodejs_heap_size_total_bytes')),
  };
}

/**
 * The memory row: `streams` slow SSE responses held open at once through the target (each paced by
 * the upstream at `intervalMs` per event), ramped up in batches. RSS is sampled every 100 ms until
 * every stream has ended; the held figure comes from samples taken while at least 95% were open at
 * once. Every stream must still arrive complete.
 */
export async function slowStreams(target: Target, options: SlowStreamsOptions): Promise<SlowStreamsResult> {
  const pids = proxyPids(target);
  if (pids.length === 0) throw new Error('the memory row needs a proxy process');
  // A proxy of several processes (nginx's master and worker) is the sum of their RSS.
  const rss = (): number => pids.reduce((sum, pid) => sum + rssMB(pid), 0);
  const pool = new Pool(target.origin, { connections: options.streams + 16, keepAliveTimeout: 60_000 });
  const idleRss = rss();
  for (const pid of pids) resetPeakRss(pid);
  let started = 0;
  let ended = 0;
  const outcomes: Promise<StreamOutcome>[] = [];
  const streamRequest = {
    chunks: options.chunks,
    intervalMs: options.intervalMs,
    recordGaps: false,
    onFirstByte: () => started++,
  };
  const openBatch = (): void => {
    for (let i = 0; i < options.rampBatch && outcomes.length < options.streams; i++) {
      outcomes.push(
        streamOnce(pool, target, streamRequest).then((outcome) => {
          ended++;
          return outcome;
        }),
      );
    }
  };

  const full = Math.ceil(options.streams * 0.95);
  let heldRss = 0;
  let maxOpen = 0;
  let gateway: GatewayGauges | undefined;
  let nextBatchAt = 0;
  const startedAt = performance.now();
  const deadline = startedAt + 120_000;
  while ((outcomes.length < options.streams || ended < options.streams) && performance.now() < deadline) {
    if (outcomes.length < options.streams && performance.now() - startedAt >= nextBatchAt) {
      openBatch();
      nextBatchAt += 100;
    }
    const inFlight = started - ended;
    maxOpen = Math.max(maxOpen, inFlight);
    if (inFlight >= full) {
      heldRss = Math.max(heldRss, rss());
      if (target.adminOrigin && gateway === undefined) gateway = await gatewayGauges(target.adminOrigin);
    }
    await sleep(50);
  }
  const settled = await Promise.all(outcomes);
  const peakRss = pids.reduce((sum, pid) => sum + peakRssMB(pid), 0);
  await pool.close();
  const complete = settled.filter((outcome) => outcome.complete).length;
  return {
    idleRss,
    peakRss,
    heldRss,
    maxOpen,
    gateway,
    complete,
    incomplete: settled.length - complete,
  };
}
