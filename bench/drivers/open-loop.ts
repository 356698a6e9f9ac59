import { Pool } from 'undici';
import { Samples, sleep } from '../support/stats.ts';
import { startWindow, surfaceOf, type CpuWindow, type Target } from '../support/target.ts';

export interface OpenLoopResult {
  ok: number;
  failed: number;
  /** Requests not sent because `maxInFlight` were already outstanding (the target fell behind). */
  skipped: number;
  durationSeconds: number;
  /** Send to end of body, ms. */
  latency: Samples;
  /** How late each request left relative to its schedule, ms (driver health, not target latency). */
  lag: Samples;
  cpu: CpuWindow;
  peakRss: number;
}

export interface OpenLoopOptions {
  ratePerSecond: number;
  durationSeconds: number;
  maxInFlight?: number;
  /** Request path and body; default: the target's surface's non-streamed request. */
  path?: string;
  body?: string;
}

/**
 * Open loop: request k leaves at start + k / rate whatever happened to earlier requests (arrivals do
 * not wait for responses), on a keep-alive undici Pool that opens as many connections as the
 * outstanding requests need. The timer wakes at the next due time (millisecond timer granularity)
 * and sends every request that is due; `lag` records the distance from the schedule so a report
 * can show the driver kept it. autocannon's `overallRate` is not used: it gives each connection a
 * per-second quota that it spends back to back at the start of every second, then idles, so
 * arrivals come in bursts and each connection still waits for its previous response.
 */
export async function openLoop(
  target: Target,
  upstreamPid: number,
  options: OpenLoopOptions,
): Promise<OpenLoopResult> {
  const pool = new Pool(target.origin, { keepAliveTimeout: 60_000 });
  const surface = surfaceOf(target);
  const path = options.path ?? surface.path;
  const body = options.body ?? surface.body;
  const headers = { 'content-type': 'application/json', ...surface.headers, ...target.headers };
  const maxInFlight = options.maxInFlight ?? 2_000;
  // A few sequential requests open the first connections outside the window.
  for (let i = 0; i < 8; i++) {
    const response = await pool.request({ path, method: 'POST', headers, body });
    await response.body.dump();
  }

  const latency = new Samples();
  const lag = new Samples();
  let ok = 0;
  let failed = 0;
  let skipped = 0;
  let inFlight = 0;
  const total = Math.round(options.ratePerSecond * options.durationSeconds);
  const intervalMs = 1000 / options.ratePerSecond;

  const fire = (scheduled: number): void => {
    if (inFlight >= maxInFlight) {
      skipped++;
      return;
    }
    inFlight++;
    const sentAt = performance.now();
    lag.push(sentAt - scheduled);
    pool.request({ path, method: 'POST', headers, body }).then(
      async (response) => {
        await response.body.dump();
        if (response.statusCode >= 200 && response.statusCode < 300) {
          ok++;
          latency.push(performance.now() - sentAt);
        } else {
          failed++;
        }
        inFlight--;
      },
      () => {
        failed++;
        inFlight--;
      },
    );
  };

  const stop = startWindow(target, upstreamPid);
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const due = Math.min(total, Math.floor((performance.now() - start) / intervalMs) + 1);
      while (sent < due) fire(start + sent++ * intervalMs);
      if (sent >= total) {
        resolve();
        return;
      }
      setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    tick();
  });
  for (let waited = 0; inFlight > 0 && waited < 10_000; waited += 10) await sleep(10);
  const durationSeconds = (performance.now() - start) / 1000;
  const { cpu, peakRss } = stop();
  await pool.close();
  return { ok, failed: failed + inFlight, skipped, durationSeconds, latency, lag, cpu, peakRss };
}
