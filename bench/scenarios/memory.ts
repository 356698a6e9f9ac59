import { Pool, request } from 'undici';
import { streamOnce, type StreamOutcome } from '../drivers/streaming.ts';
import { ALIAS } from '../support/payloads.ts';
import { peakRssMB, resetPeakRss, rssMB } from '../support/process.ts';
import { sleep } from '../support/stats.ts';
import type { Target } from '../support/target.ts';

export interface SlowStreamsOptions {
  streams: number;
  chunks: number;
  intervalMs: number;
  /** Seconds to keep sampling RSS once every stream has started. */
  holdSeconds: number;
  /** Streams opened per ramp step (every 100 ms). */
  rampBatch: number;
}

export interface SlowStreamsResult {
  /** RSS before the first stream, MB. */
  idleRss: number;
  /** VmHWM over the row (reset before it), MB. */
  peakRss: number;
  /** Largest sampled RSS while every stream was open, MB. */
  heldRss: number;
  /** Streams that had received their first bytes and not yet ended at the last sample. */
  openAtSample: number;
  /** The gateway's own `gateway_model_inflight` at the last sample (undefined for other targets). */
  gatewayInflight: number | undefined;
  complete: number;
  incomplete: number;
}

async function inflightGauge(adminOrigin: string): Promise<number | undefined> {
  const response = await request(`${adminOrigin}/metrics`);
  const text = await response.body.text();
  const match = new RegExp(`^gateway_model_inflight\\{model="${ALIAS}"\\} (\\d+)`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * The memory row: `streams` slow SSE responses held open at once through the target (each paced by
 * the upstream at `intervalMs` per event), ramped up in batches. Reports the target's RSS while
 * all are open and its peak over the row; every stream must still arrive complete.
 */
export async function slowStreams(target: Target, options: SlowStreamsOptions): Promise<SlowStreamsResult> {
  if (target.pid === undefined) throw new Error('the memory row needs a proxy process');
  const pid = target.pid;
  const pool = new Pool(target.origin, { connections: options.streams + 16, keepAliveTimeout: 60_000 });
  const idleRss = rssMB(pid);
  resetPeakRss(pid);
  let started = 0;
  let ended = 0;
  const outcomes: Promise<StreamOutcome>[] = [];
  const streamRequest = {
    chunks: options.chunks,
    intervalMs: options.intervalMs,
    recordGaps: false,
    onFirstByte: () => started++,
  };
  for (let opened = 0; opened < options.streams;) {
    const batch = Math.min(options.rampBatch, options.streams - opened);
    for (let i = 0; i < batch; i++) {
      outcomes.push(
        streamOnce(pool, target, streamRequest).then((outcome) => {
          ended++;
          return outcome;
        }),
      );
    }
    opened += batch;
    await sleep(100);
  }
  for (let waited = 0; started < options.streams && waited < 20_000; waited += 50) await sleep(50);
  let heldRss = 0;
  let openAtSample = 0;
  let gatewayInflight: number | undefined;
  const holdUntil = performance.now() + options.holdSeconds * 1000;
  while (performance.now() < holdUntil && ended === 0) {
    heldRss = Math.max(heldRss, rssMB(pid));
    openAtSample = started - ended;
    if (target.adminOrigin) gatewayInflight = await inflightGauge(target.adminOrigin);
    await sleep(250);
  }
  const settled = await Promise.all(outcomes);
  const peakRss = peakRssMB(pid);
  await pool.close();
  const complete = settled.filter((outcome) => outcome.complete).length;
  return {
    idleRss,
    peakRss,
    heldRss,
    openAtSample,
    gatewayInflight,
    complete,
    incomplete: settled.length - complete,
  };
}
