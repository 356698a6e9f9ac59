import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { Samples, sleep } from '../support/stats.ts';
import { streamChat } from './chat-stream.ts';
import { FLEET_MODEL, type PrefixCounters, type Replicas } from './replicas.ts';
import { ConversationSource, type Conversation, type WorkloadShape } from './workload.ts';

/** How conversations arrive during a cell. */
export type Arrivals =
  /** New conversations at a Poisson rate, plus a steady state's population under way at the start. */
  | { kind: 'open'; conversationsPerSecond: number; underWay: number }
  /** A fixed number of conversations back to back with no think time: saturation, for calibration. */
  | { kind: 'closed'; conversations: number };

export interface CellPlan {
  /** Where the clients send their requests (a gateway, a balancer, or a replica itself). */
  origin: string;
  arrivals: Arrivals;
  /** Before the window: caches fill and queues settle; nothing is counted but failures. */
  warmupMs: number;
  /** The measured window. */
  measureMs: number;
  shape: WorkloadShape;
  seed: number;
}

export interface CellResult {
  /** Time to first token of the turns sent within the window. */
  ttft: Samples;
  /** Turns completed within the window, per second. */
  throughput: number;
  /** Mean time of a turn sent within the window, request to last byte, in milliseconds. */
  meanTurnMs: number;
  /** Prompt tokens found in the replicas' prefix caches over those looked up, within the window. */
  hitRate: number;
  /** The busiest replica's mean running + waiting over the replicas' mean. */
  imbalance: number;
  /** Mean running + waiting per replica over the window. */
  busy: number[];
  /** Failed turns over the whole cell, warm-up included. */
  failures: number;
  failureExamples: string[];
}

const BUSY_SAMPLE_MS = 100;

/** Runs one cell of the fleet benchmark against replicas that were just started (cold caches). */
export async function runCell(plan: CellPlan, replicas: Replicas): Promise<CellResult> {
  const dispatcher = new Agent({ keepAliveTimeout: 60_000, connect: { timeout: 5_000 } });
  const control = new Agent({ connections: 4 });
  const source = new ConversationSource(plan.shape, plan.seed);
  const started = performance.now();
  const windowStart = started + plan.warmupMs;
  const windowEnd = windowStart + plan.measureMs;
  const ttft = new Samples();
  const turnMs = new Samples();
  let completed = 0;
  let failures = 0;
  const failureExamples: string[] = [];
  const conversations: Promise<void>[] = [];
  const thinking = plan.arrivals.kind === 'open';

  const converse = async (conversation: Conversation, delayMs: number): Promise<void> => {
    if (delayMs > 0) await sleep(delayMs);
    while (!conversation.done && performance.now() < windowEnd) {
      const sentAt = performance.now();
      const result = await streamChat(dispatcher, plan.origin, conversation.nextRequest(FLEET_MODEL));
      const endedAt = performance.now();
      if (!result.ok) {
        failures++;
        if (failureExamples.length < 3) failureExamples.push(result.error ?? 'unknown');
        return;
      }
      conversation.answered(result.content);
      if (sentAt >= windowStart && sentAt < windowEnd) {
        ttft.push(result.ttftMs);
        turnMs.push(result.totalMs);
      }
      if (endedAt >= windowStart && endedAt < windowEnd) completed++;
      if (thinking) await sleep(conversation.thinkMs());
    }
  };

  const arrivals = plan.arrivals;
  if (arrivals.kind === 'closed') {
    for (let i = 0; i < arrivals.conversations; i++) {
      conversations.push(
        (async () => {
          let conversation = source.underWay();
          while (performance.now() < windowEnd) {
            await converse(conversation, 0);
            conversation = source.fresh();
          }
        })(),
      );
    }
  } else {
    // The steady state's population starts over the first think time, not all at once.
    for (let i = 0; i < arrivals.underWay; i++) {
      conversations.push(converse(source.underWay(), Math.random() * 2 * plan.shape.thinkMeanMs));
    }
    conversations.push(
      (async () => {
        const random = Math.random;
        while (performance.now() < windowEnd) {
          await sleep((-Math.log(1 - random()) * 1000) / arrivals.conversationsPerSecond);
          if (performance.now() < windowEnd) conversations.push(converse(source.fresh(), 0));
        }
      })(),
    );
  }

  await sleep(Math.max(0, windowStart - performance.now()));
  const before = await replicas.prefixCounters(control);
  const busyTotals = replicas.ports.map(() => 0);
  let busySamples = 0;
  while (performance.now() < windowEnd) {
    const busy = await replicas.busy(control);
    busy.forEach((value, i) => (busyTotals[i]! += value));
    busySamples++;
    await sleep(Math.min(BUSY_SAMPLE_MS, Math.max(0, windowEnd - performance.now())));
  }
  const after = await replicas.prefixCounters(control);
  // Every conversation stops after its turn in flight; the last of those still count as failures if they fail.
  for (let i = 0; i < conversations.length; i++) await conversations[i];
  await Promise.all([dispatcher.close(), control.close()]);

  const busy = busyTotals.map((total) => total / Math.max(1, busySamples));
  const meanBusy = busy.reduce((a, b) => a + b, 0) / busy.length;
  return {
    ttft,
    throughput: completed / (plan.measureMs / 1000),
    meanTurnMs: turnMs.mean(),
    hitRate: ratio(before, after),
    imbalance: meanBusy > 0 ? Math.max(...busy) / meanBusy : 1,
    busy,
    failures,
    failureExamples,
  };
}

function ratio(before: PrefixCounters[], after: PrefixCounters[]): number {
  let queries = 0;
  let hits = 0;
  after.forEach((counters, i) => {
    queries += counters.queries - before[i]!.queries;
    hits += counters.hits - before[i]!.hits;
  });
  return queries > 0 ? hits / queries : Number.NaN;
}
