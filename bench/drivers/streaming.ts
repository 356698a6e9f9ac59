import { Pool } from 'undici';
import { INTERVAL_HEADER, STREAM_HEADER } from '../support/payloads.ts';
import { seededRandom } from '../support/random.ts';
import { Samples, sleep } from '../support/stats.ts';
import { startWindow, surfaceOf, type CpuWindow, type Target } from '../support/target.ts';

/** What one SSE response looked like at the client. */
export interface StreamOutcome {
  status: number;
  /** Send to the first body bytes, ms. */
  ttfb: number;
  /** SSE events received (blank-line terminated). */
  events: number;
  /** The body ended cleanly with the expected number of events. */
  complete: boolean;
  /** Arrival gaps between consecutive events, ms (each event dated by the read that completed it). */
  gaps: number[];
}

export interface StreamRequest {
  chunks: number;
  /** Upstream pacing; 0 = the upstream writes all events back to back. */
  intervalMs: number;
  recordGaps: boolean;
  /** Called once when the first body bytes arrive. */
  onFirstByte?: () => void;
}

/**
 * Sends one streaming request (a chat completion, or a Messages request for a Messages target) and
 * reads it in flowing mode, so each body `data` event is one buffer as the HTTP parser delivered it
 * (no re-buffering by the client).
 */
export function streamOnce(pool: Pool, target: Target, request: StreamRequest): Promise<StreamOutcome> {
  const surface = surfaceOf(target);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    [STREAM_HEADER]: String(request.chunks),
    ...surface.headers,
    ...target.headers,
  };
  if (request.intervalMs > 0) headers[INTERVAL_HEADER] = String(request.intervalMs);
  const sentAt = performance.now();
  const expected = surface.eventsPerStream(request.chunks);
  return pool.request({ path: surface.path, method: 'POST', headers, body: surface.streamBody }).then(
    (response) =>
      new Promise<StreamOutcome>((resolve) => {
        let ttfb = Number.NaN;
        let events = 0;
        let lastByte = 0;
        let lastEventAt = 0;
        const gaps: number[] = [];
        response.body.on('data', (chunk: Buffer) => {
          const now = performance.now();
          if (Number.isNaN(ttfb)) {
            ttfb = now - sentAt;
            request.onFirstByte?.();
          }
          let completed = 0;
          // Count "\n\n" terminators, including one split across two reads.
          if (lastByte === 0x0a && chunk[0] === 0x0a) completed++;
          for (let at = chunk.indexOf('\n\n'); at >= 0; at = chunk.indexOf('\n\n', at + 2)) completed++;
          lastByte = chunk[chunk.length - 1] ?? lastByte;
          if (completed > 0) {
            if (request.recordGaps) {
              if (events > 0) gaps.push(now - lastEventAt);
              for (let i = 1; i < completed; i++) gaps.push(0);
            }
            lastEventAt = now;
            events += completed;
          }
        });
        const settle = (clean: boolean): void =>
          resolve({
            status: response.statusCode,
            ttfb,
            events,
            complete: clean && response.statusCode === 200 && events === expected,
            gaps,
          });
        response.body.on('end', () => settle(true));
        response.body.on('error', () => settle(false));
      }),
    () => ({ status: 0, ttfb: Number.NaN, events: 0, complete: false, gaps: [] }),
  );
}

export interface StreamRunResult {
  streams: number;
  incomplete: number;
  events: number;
  durationSeconds: number;
  ttfb: Samples;
  /**
   * Paced streams only: time to first byte of the streams that started at one of the upstream's
   * ticks (see `startedAtTick`), and of the others. Empty for unpaced streams.
   */
  ttfbAtTick: Samples;
  ttfbBetweenTicks: Samples;
  gaps: Samples;
  cpu: CpuWindow;
  peakRss: number;
}

/**
 * A paced stream started at one of the upstream's ticks, when the events of every other open stream
 * are written together (and then read and relayed together): its first event (written with the
 * head, on the request's arrival) and its second (the next tick) were less than a tenth of the
 * interval apart, or more than nine tenths. Started right after a tick, the first byte waits behind
 * that tick's events and the next tick is a whole interval away; started right before one, the
 * first byte is caught up in it and the second event follows at once.
 */
export function startedAtTick(outcome: StreamOutcome, intervalMs: number): boolean {
  const first = outcome.gaps[0];
  return first !== undefined && (first < intervalMs / 10 || first > (intervalMs * 9) / 10);
}

function collector(intervalMs = 0) {
  const ttfb = new Samples();
  const ttfbAtTick = new Samples();
  const ttfbBetweenTicks = new Samples();
  const gaps = new Samples();
  let streams = 0;
  let incomplete = 0;
  let events = 0;
  return {
    ttfb,
    ttfbAtTick,
    ttfbBetweenTicks,
    gaps,
    add(outcome: StreamOutcome): void {
      streams++;
      events += outcome.events;
      if (!outcome.complete) {
        incomplete++;
        return;
      }
      ttfb.push(outcome.ttfb);
      if (intervalMs > 0)
        (startedAtTick(outcome, intervalMs) ? ttfbAtTick : ttfbBetweenTicks).push(outcome.ttfb);
      for (const gap of outcome.gaps) gaps.push(gap);
    },
    get totals() {
      return { streams, incomplete, events };
    },
    get samples() {
      return { ttfb, ttfbAtTick, ttfbBetweenTicks, gaps };
    },
  };
}

/** Closed loop of `concurrency` clients, each starting its next stream when the previous ended. */
export async function closedLoopStreams(
  target: Target,
  upstreamPid: number,
  options: { concurrency: number; durationSeconds: number; chunks: number },
): Promise<StreamRunResult> {
  const pool = new Pool(target.origin, { connections: options.concurrency, keepAliveTimeout: 60_000 });
  const request: StreamRequest = { chunks: options.chunks, intervalMs: 0, recordGaps: false };
  await streamOnce(pool, target, request);
  const results = collector();
  const stop = startWindow(target, upstreamPid);
  const start = performance.now();
  const deadline = start + options.durationSeconds * 1000;
  const client = async (): Promise<void> => {
    while (performance.now() < deadline) results.add(await streamOnce(pool, target, request));
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  const durationSeconds = (performance.now() - start) / 1000;
  const { cpu, peakRss } = stop();
  await pool.close();
  return { ...results.totals, durationSeconds, ...results.samples, cpu, peakRss };
}

/** How new streams arrive in the open loop. */
export type Arrivals = 'periodic' | 'poisson';

/** The stream schedule of an open loop: start offsets in ms, ascending. */
export function arrivalSchedule(
  arrivals: Arrivals,
  ratePerSecond: number,
  count: number,
  seed = 1,
): Float64Array {
  const at = new Float64Array(count);
  const meanGap = 1000 / ratePerSecond;
  if (arrivals === 'periodic') {
    for (let k = 0; k < count; k++) at[k] = k * meanGap;
    return at;
  }
  // Exponential gaps from a seeded generator (mulberry32): every target of a run gets the same
  // schedule, so the comparison is between proxies, not between draws.
  const uniform = seededRandom(seed);
  let t = 0;
  for (let k = 0; k < count; k++) {
    at[k] = t;
    t += -Math.log(1 - uniform()) * meanGap;
  }
  return at;
}

/**
 * Open loop of streams at `ratePerSecond`, each paced by the upstream at `intervalMs` per event.
 * Measures time to first byte at low load and whether events keep their own arrival times (a
 * coalescing proxy would deliver several in one read).
 *
 * Arrivals are periodic by default (one every 1/rate seconds, as the benchmark has always
 * measured). Poisson arrivals are the option that rules out any coupling between a periodic
 * schedule and the upstream's shared ticker of the same period; on this project's machine the two
 * gave the same picture, because the ticker drifts over the cycle.
 */
export async function openLoopStreams(
  target: Target,
  upstreamPid: number,
  options: {
    ratePerSecond: number;
    durationSeconds: number;
    chunks: number;
    intervalMs: number;
    arrivals?: Arrivals;
  },
): Promise<StreamRunResult> {
  const pool = new Pool(target.origin, { keepAliveTimeout: 60_000 });
  const request: StreamRequest = { chunks: options.chunks, intervalMs: options.intervalMs, recordGaps: true };
  await streamOnce(pool, target, { ...request, intervalMs: 1 });
  const results = collector(options.intervalMs);
  const pending = new Set<Promise<void>>();
  const total = Math.round(options.ratePerSecond * options.durationSeconds);
  const schedule = arrivalSchedule(options.arrivals ?? 'periodic', options.ratePerSecond, total);
  const stop = startWindow(target, upstreamPid);
  const start = performance.now();
  let sent = 0;
  while (sent < total) {
    const now = performance.now() - start;
    for (; sent < total && schedule[sent]! <= now; sent++) {
      const running: Promise<void> = streamOnce(pool, target, request).then((outcome) => {
        results.add(outcome);
        pending.delete(running);
      });
      pending.add(running);
    }
    if (sent < total) await sleep(Math.max(0, start + schedule[sent]! - performance.now()));
  }
  await Promise.all(pending);
  const durationSeconds = (performance.now() - start) / 1000;
  const { cpu, peakRss } = stop();
  await pool.close();
  return { ...results.totals, durationSeconds, ...results.samples, cpu, peakRss };
}
