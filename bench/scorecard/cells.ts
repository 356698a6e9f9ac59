/** One cell of the scorecard: a batch of requests from one client, counted by verdict. */
import { observeRaw, observeSdk, type Ask, type Observation, type Target, type Verdict } from './observe.ts';
import type { ClientKind } from './systems.ts';

export interface Cell {
  readonly sent: number;
  readonly counts: Readonly<Record<Verdict, number>>;
  /** The most frequent detail of each verdict seen (what the client saw). */
  readonly details: Readonly<Partial<Record<Verdict, string>>>;
  /** Median request duration, milliseconds. */
  readonly p50Ms: number;
}

export function observe(client: ClientKind, target: Target, ask: Ask): Promise<Observation> {
  return client === 'raw' ? observeRaw(target, ask) : observeSdk(target, ask);
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function summarize(observations: readonly Observation[]): Cell {
  const counts: Record<Verdict, number> = { completed: 0, visible: 0, silent: 0, hung: 0 };
  const seen = new Map<Verdict, Map<string, number>>();
  for (const o of observations) {
    counts[o.verdict]++;
    const byDetail = seen.get(o.verdict) ?? new Map<string, number>();
    byDetail.set(o.detail, (byDetail.get(o.detail) ?? 0) + 1);
    seen.set(o.verdict, byDetail);
  }
  const details: Partial<Record<Verdict, string>> = {};
  for (const [verdict, byDetail] of seen)
    details[verdict] = [...byDetail.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  return {
    sent: observations.length,
    counts,
    details,
    p50Ms: percentile(
      observations.map((o) => o.totalMs),
      50,
    ),
  };
}

/** `one` on `concurrency` workers, each starting the next request as its last ends, while `more()`. */
async function runWorkers(
  concurrency: number,
  more: () => boolean,
  one: () => Promise<Observation>,
): Promise<Observation[]> {
  const results: Observation[] = [];
  const worker = async (): Promise<void> => {
    while (more()) results.push(await one());
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

/** `count` requests, at most `concurrency` at a time. */
export function runBatch(
  count: number,
  concurrency: number,
  one: () => Promise<Observation>,
): Promise<Observation[]> {
  let started = 0;
  return runWorkers(Math.min(concurrency, count), () => started++ < count, one);
}

/** Requests for `ms` milliseconds, `concurrency` at a time. */
export function runFor(
  ms: number,
  concurrency: number,
  one: () => Promise<Observation>,
): Promise<Observation[]> {
  const end = performance.now() + ms;
  return runWorkers(concurrency, () => performance.now() < end, one);
}
