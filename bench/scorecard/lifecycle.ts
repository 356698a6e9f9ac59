/**
 * The rows that are not one provider fault: the preferred provider's capacity dropping under load,
 * configuration reloads and a drain (SIGTERM) under load, and a client that cancels mid-stream.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile, runFor, summarize, type Cell } from './cells.ts';
import { observeRaw, type Ask, type Observation, type Target } from './observe.ts';
import type { World } from './scenarios.ts';
import type { ClientKind, System } from './systems.ts';
import { metricSum } from './world.ts';

export interface Pace {
  /** Seconds of each phase of the capacity row: before, during, after the drop. */
  readonly phases: readonly [number, number, number];
  /** Seconds of load while the configuration is reloaded. */
  readonly reloadSeconds: number;
  /** Cancellations measured per system and client. */
  readonly cancellations: number;
  readonly hangMs: number;
}

async function capacity(world: World, body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${world.sim.origin}/control/capacity`, {
    signal: AbortSignal.timeout(5000),
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'preferred', ...body }),
  });
  if (response.status !== 200) throw new Error(`capacity control answered ${response.status}`);
}

async function simMetrics(world: World): Promise<string> {
  return (await fetch(`${world.sim.origin}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
}

export interface PhaseStats {
  readonly p50: number;
  readonly p99: number;
  readonly cell: Cell;
}

export interface CapacityResult {
  readonly phases: readonly [PhaseStats, PhaseStats, PhaseStats];
  /** Milliseconds from the drop until the backup served most requests, or undefined if it never did. */
  readonly shiftMs: number | undefined;
}

const RATE_PER_SECOND = 40;

/**
 * Paced streamed requests (40 a second) through three phases: the preferred provider at full
 * capacity, cut to one running sequence and one waiting (most requests then get 529 or wait), and
 * restored. Time to first token per phase; the shift is read from the simulator's own count of
 * finished requests per model, so it is the same measure for every system.
 */
export async function capacityRow(
  world: World,
  system: System,
  pace: Pace,
  expected: string,
): Promise<CapacityResult> {
  await capacity(world, { max_num_seqs: 64, max_waiting: 0 });
  const target = system.pool('capacity', 'raw');
  const ask: Ask = { stream: true, expected, hangMs: pace.hangMs };
  const byPhase: Observation[][] = [[], [], []];
  const pending: Promise<void>[] = [];
  let shiftMs: number | undefined;
  const served = async () => {
    const text = await simMetrics(world);
    return {
      preferred: metricSum(text, 'vllm:request_success_total', { model_name: 'preferred' }),
      backup: metricSum(text, 'vllm:request_success_total', { model_name: 'healthy' }),
    };
  };
  let dropAt = 0;
  for (let phase = 0; phase < 3; phase++) {
    if (phase === 1) {
      await capacity(world, { max_num_seqs: 1, max_waiting: 1 });
      dropAt = performance.now();
    }
    if (phase === 2) await capacity(world, { max_num_seqs: 64, max_waiting: 0 });
    const end = performance.now() + pace.phases[phase]! * 1000;
    let last = await served();
    let nextSample = performance.now() + 250;
    while (performance.now() < end) {
      const list = byPhase[phase]!;
      pending.push(observeRaw(target, ask).then((o) => void list.push(o)));
      await sleep(1000 / RATE_PER_SECOND);
      if (phase === 1 && shiftMs === undefined && performance.now() >= nextSample) {
        const now = await served();
        if (now.backup - last.backup > now.preferred - last.preferred && now.backup > last.backup)
          shiftMs = Math.round(performance.now() - dropAt);
        last = now;
        nextSample = performance.now() + 250;
      }
    }
  }
  await Promise.all(pending);
  await capacity(world, { max_num_seqs: 64, max_waiting: 0 });
  const stats = (list: Observation[]): PhaseStats => {
    const firsts = list.filter((o) => o.firstMs !== undefined).map((o) => o.firstMs!);
    return { p50: percentile(firsts, 50), p99: percentile(firsts, 99), cell: summarize(list) };
  };
  return { phases: [stats(byPhase[0]!), stats(byPhase[1]!), stats(byPhase[2]!)], shiftMs };
}

/**
 * Long streams (about 2.5 s each, eight at a time) while the gateway's configuration file is
 * rewritten every 300 ms with a new alias: nothing in flight may notice.
 */
export async function reloadRow(
  system: System & { gateway: { writeConfig(config: unknown): Promise<void>; reloads(): number } },
  config: Record<string, unknown>,
  pace: Pace,
  expected: string,
): Promise<{ cell: Cell; reloads: number }> {
  const target = system.pool('long', 'raw');
  const ask: Ask = { stream: true, expected, hangMs: pace.hangMs };
  const before = system.gateway.reloads();
  let writing = true;
  let failedWrite: unknown;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      const targets = {
        ...(config.targets as Record<string, unknown>),
        [`reload-${n}`]: { url: 'http://127.0.0.1:9/v1' },
      };
      await system.gateway.writeConfig({ ...config, targets });
      await sleep(300);
    }
  })().catch((error: unknown) => {
    failedWrite = error;
  });
  const observations = await runFor(pace.reloadSeconds * 1000, 8, () => observeRaw(target, ask));
  writing = false;
  await writer;
  if (failedWrite !== undefined) throw failedWrite;
  await system.gateway.writeConfig(config);
  return { cell: summarize(observations), reloads: system.gateway.reloads() - before };
}

export interface DrainResult {
  /** The streams open when SIGTERM came. */
  readonly inFlight: Cell;
  /** Requests sent after SIGTERM. */
  readonly after: Cell;
}

/**
 * Eight long streams open, then SIGTERM to the system's process, then one new request every 100 ms
 * for two seconds: the open streams should finish, the new requests be refused in a way the client sees.
 */
export async function drainRow(
  system: System,
  terminate: () => void,
  pace: Pace,
  expected: string,
): Promise<DrainResult> {
  const target = system.pool('long', 'raw');
  const ask: Ask = { stream: true, expected, hangMs: pace.hangMs };
  const open = Array.from({ length: 8 }, () => observeRaw(target, ask));
  await sleep(500);
  terminate();
  const after: Promise<Observation>[] = [];
  for (let i = 0; i < 20; i++) {
    await sleep(100);
    after.push(observeRaw(target, { ...ask, hangMs: Math.min(pace.hangMs, 5000) }));
  }
  return { inFlight: summarize(await Promise.all(open)), after: summarize(await Promise.all(after)) };
}

export interface CancelResult {
  /** Milliseconds from the client's abort until the provider counted the request aborted, per try. */
  readonly seenMs: readonly (number | undefined)[];
}

/**
 * A client that reads three chunks of a long stream and cancels: does the provider hear of it, and
 * how fast? Read from the simulator's count of aborted requests (`finished_reason="abort"`).
 */
export async function cancelRow(
  world: World,
  system: System,
  client: ClientKind,
  pace: Pace,
  expected: string,
  observeWith: (target: Target, ask: Ask) => Promise<Observation>,
): Promise<CancelResult> {
  const target = system.pool('long', client);
  const seenMs: (number | undefined)[] = [];
  const aborted = async () =>
    metricSum(await simMetrics(world), 'vllm:request_success_total', {
      model_name: 'long-stream',
      finished_reason: 'abort',
    });
  for (let i = 0; i < pace.cancellations; i++) {
    const before = await aborted();
    await observeWith(target, {
      stream: true,
      expected,
      hangMs: pace.hangMs,
      cancelAfterFrames: 3,
    });
    const at = performance.now();
    let seen: number | undefined;
    while (performance.now() - at < 3000) {
      if ((await aborted()) > before) {
        seen = Math.round(performance.now() - at);
        break;
      }
      await sleep(10);
    }
    seenMs.push(seen);
    // Let a stream the provider never heard of run out before the next try.
    if (seen === undefined) await sleep(500);
  }
  return { seenMs };
}
