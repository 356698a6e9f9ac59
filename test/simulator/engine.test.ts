import { describe, expect, it } from 'vitest';
import type { LatencyConfig } from '../../src/simulator/config/schema.js';
import type { EngineClock } from '../../src/simulator/engine/clock.js';
import {
  Engine,
  MAX_LAG_MS,
  type EngineObserver,
  type SequenceRequest,
} from '../../src/simulator/engine/engine.js';
import type { PrefixCacheConfig } from '../../src/simulator/engine/prefix-cache.js';

/** A hand-driven clock: timers fire only when the test says so, optionally late. */
class ManualClock implements EngineClock {
  t = 0;
  private timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  now = (): number => this.t;
  schedule = (fn: () => void, delayMs: number): (() => void) => {
    const timer = { at: this.t + Math.max(0, delayMs), fn, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
  /** Fires the earliest timer, `lateMs` after its due time. */
  step(lateMs = 0): boolean {
    this.timers = this.timers.filter((t) => !t.cancelled);
    if (this.timers.length === 0) return false;
    this.timers.sort((a, b) => a.at - b.at);
    const timer = this.timers.shift()!;
    this.t = Math.max(this.t, timer.at + lateMs);
    timer.fn();
    return true;
  }
  run(limit = 10_000): void {
    for (let i = 0; i < limit && this.step(); i++);
  }
}

const LATENCY: LatencyConfig = {
  prefill_ms: 20,
  prefill_per_token_ms: 0,
  decode_ms: 10,
  decode_per_seq_ms: 0,
};

const quietObserver: EngineObserver = {
  firstToken: () => {},
  interToken: () => {},
  finished: () => {},
  aborted: () => {},
  prefixCache: () => {},
};

function setup(
  options: {
    latency?: Partial<LatencyConfig>;
    maxNumSeqs?: number;
    maxWaiting?: number;
    prefixCache?: PrefixCacheConfig;
  } = {},
) {
  const clock = new ManualClock();
  const finished: string[] = [];
  const lookups: [number, number][] = [];
  const observer: EngineObserver = {
    ...quietObserver,
    finished: (reason) => finished.push(reason),
    prefixCache: (queried, hits) => lookups.push([queried, hits]),
  };
  const engine = new Engine(
    'm',
    { ...LATENCY, ...options.latency },
    options.maxNumSeqs ?? 8,
    options.maxWaiting ?? 0,
    observer,
    clock,
    options.prefixCache,
  );
  return { clock, engine, finished, lookups };
}

interface Tracked {
  name: string;
  tokens: number[];
  finishedAt?: number;
  aborted: boolean;
  blocked: boolean;
}

function submit(
  env: ReturnType<typeof setup>,
  name: string,
  request: Partial<SequenceRequest> = {},
): { tracked: Tracked; seq: ReturnType<Engine['submit']> } {
  const tracked: Tracked = { name, tokens: [], aborted: false, blocked: false };
  const seq = env.engine.submit(
    {
      promptTokens: 10,
      promptTokenList: () => Array.from({ length: 10 }, (_, i) => `${name}-${i}`),
      outputTokens: 3,
      priority: 0,
      external: false,
      finishReason: 'stop',
      ...request,
    },
    {
      onToken: () => tracked.tokens.push(env.clock.t),
      onFinish: () => (tracked.finishedAt = env.clock.t),
      onAbort: () => (tracked.aborted = true),
      isBlocked: () => tracked.blocked,
    },
  );
  return { tracked, seq };
}

describe('engine scheduling and pacing', () => {
  it('paces the first request after idle: first token after prefill, then one token per decode step', () => {
    const env = setup();
    env.clock.t = 1000;
    const { tracked } = submit(env, 'a');
    env.clock.run();
    expect(tracked.tokens).toEqual([1020, 1030, 1040]);
    expect(tracked.finishedAt).toBe(1040);
    expect(env.finished).toEqual(['stop']);
    expect(env.clock.pending).toBe(0);
  });

  it('queues beyond max_num_seqs: time to first token grows with queueing, drain rate follows the cap', () => {
    const env = setup({ maxNumSeqs: 1 });
    const a = submit(env, 'a').tracked;
    const b = submit(env, 'b').tracked;
    expect(env.engine.capacity()).toMatchObject({ running: 1, waiting: 1 });
    env.clock.run();
    expect(a.tokens).toEqual([20, 30, 40]);
    // b is admitted at the step after a finishes: prefill costs its first token.
    expect(b.tokens[0]).toBe(60);
    expect(b.finishedAt).toBe(80);
  });

  it('admits arrivals only at step boundaries, and a prefill slows the running sequences', () => {
    const env = setup();
    const a = submit(env, 'a').tracked;
    env.clock.step(); // a's prefill ends at 20
    env.clock.t = 25;
    const b = submit(env, 'b').tracked; // arrives mid-step (a decodes 20..30)
    env.clock.run();
    // Step 30..60 prefills b (20) and decodes a (10).
    expect(a.tokens).toEqual([20, 30, 60]);
    expect(b.tokens).toEqual([60, 70, 80]);
  });

  it('inter-token latency grows with the batch', () => {
    const env = setup({ latency: { prefill_ms: 0, decode_ms: 10, decode_per_seq_ms: 5 } });
    const one = submit(env, 'one', { outputTokens: 3 }).tracked;
    env.clock.run();
    const gapsAlone = one.tokens[2]! - one.tokens[1]!;

    const env4 = setup({ latency: { prefill_ms: 0, decode_ms: 10, decode_per_seq_ms: 5 } });
    const many = [0, 1, 2, 3].map((i) => submit(env4, `s${i}`, { outputTokens: 3 }).tracked);
    env4.clock.run();
    const gapsBatched = many[0]!.tokens[2]! - many[0]!.tokens[1]!;
    expect(gapsAlone).toBe(15);
    expect(gapsBatched).toBe(30);
  });

  it('serves lower priority values first, then arrival order', () => {
    const env = setup({ maxNumSeqs: 1 });
    submit(env, 'running');
    const late = submit(env, 'late', { priority: 0 }).tracked;
    const urgent = submit(env, 'urgent', { priority: -5 }).tracked;
    const lazy = submit(env, 'lazy', { priority: 3 }).tracked;
    const late2 = submit(env, 'late2', { priority: 0 }).tracked;
    env.clock.run();
    const order = [late, urgent, lazy, late2].sort((x, y) => x.tokens[0]! - y.tokens[0]!).map((t) => t.name);
    expect(order).toEqual(['urgent', 'late', 'late2', 'lazy']);
  });

  it('refuses at max_waiting with the live numbers; running requests do not count as waiting', () => {
    const env = setup({ maxNumSeqs: 1, maxWaiting: 2 });
    expect(submit(env, 'a').seq.ok).toBe(true);
    expect(submit(env, 'b').seq.ok).toBe(true);
    expect(submit(env, 'c').seq.ok).toBe(true);
    expect(submit(env, 'd').seq).toEqual({ ok: false, reason: 'saturated', waiting: 2, maxWaiting: 2 });
    env.engine.setCapacity({ maxWaiting: 0 });
    expect(submit(env, 'e').seq.ok).toBe(true);
  });

  it('lowering max_num_seqs drains: running sequences above the cap finish, admission waits for room', () => {
    const env = setup({ maxNumSeqs: 3 });
    const running = ['a', 'b', 'c'].map((n) => submit(env, n, { outputTokens: 5 }).tracked);
    env.clock.step();
    env.engine.setCapacity({ maxNumSeqs: 1 });
    const waiting = submit(env, 'd').tracked;
    env.clock.run();
    for (const t of running) expect(t.tokens).toHaveLength(5);
    const lastRunningFinish = Math.max(...running.map((t) => t.finishedAt!));
    expect(waiting.tokens[0]!).toBeGreaterThan(lastRunningFinish);
  });

  it('raising max_num_seqs admits waiting requests at the next step', () => {
    const env = setup({ maxNumSeqs: 1 });
    submit(env, 'a', { outputTokens: 10 });
    const b = submit(env, 'b').tracked;
    env.clock.step();
    env.engine.setCapacity({ maxNumSeqs: 2 });
    env.clock.run();
    // Admitted at the next step boundary (30), long before a's 10 tokens are done (110).
    expect(b.tokens[0]).toBe(60);
  });

  it('cancelling frees the queue entry or the slot', () => {
    const env = setup({ maxNumSeqs: 1, maxWaiting: 1 });
    const a = submit(env, 'a');
    const b = submit(env, 'b');
    expect(submit(env, 'c').seq.ok).toBe(false);
    if (b.seq.ok) b.seq.seq.cancel();
    expect(env.engine.capacity().waiting).toBe(0);
    const c = submit(env, 'c');
    expect(c.seq.ok).toBe(true);
    if (a.seq.ok) a.seq.seq.cancel();
    env.clock.run();
    expect(a.tracked.tokens).toEqual([]);
    expect(b.tracked.tokens).toEqual([]);
    expect(c.tracked.tokens).toHaveLength(3);
  });

  it('a blocked sequence gets no tokens and the engine sleeps instead of spinning; a kick resumes it', () => {
    const env = setup({ latency: { prefill_ms: 0, decode_ms: 0 } });
    const a = submit(env, 'a', { outputTokens: 4 }).tracked;
    env.clock.step();
    expect(a.tokens).toHaveLength(1);
    a.blocked = true;
    env.clock.run(100);
    expect(a.tokens).toHaveLength(1);
    expect(env.clock.pending).toBe(0);
    a.blocked = false;
    env.engine.kick();
    env.clock.run();
    expect(a.tokens).toHaveLength(4);
  });

  it('an external sequence keeps its slot after its first token until released', () => {
    const env = setup({ maxNumSeqs: 1 });
    const ext = submit(env, 'ext', { external: true });
    const next = submit(env, 'next').tracked;
    env.clock.run();
    expect(ext.tracked.tokens).toHaveLength(1);
    expect(next.tokens).toEqual([]);
    expect(env.engine.capacity()).toMatchObject({ running: 1, waiting: 1 });
    if (ext.seq.ok) ext.seq.seq.release();
    env.clock.run();
    expect(next.tokens).toHaveLength(3);
  });

  it('catches up small timer lateness so the long-run rate is exact, but drops a long stall', () => {
    const env = setup({ latency: { prefill_ms: 10, decode_ms: 10 } });
    const a = submit(env, 'a', { outputTokens: 4 }).tracked;
    env.clock.step(5); // due 10, fires 15
    env.clock.run();
    // The following steps keep the original schedule: 20, 30, 40.
    expect(a.tokens).toEqual([15, 20, 30, 40]);

    const env2 = setup({ latency: { prefill_ms: 10, decode_ms: 10 } });
    const b = submit(env2, 'b', { outputTokens: 10 }).tracked;
    env2.clock.step(1000); // due 10, fires 1010: only MAX_LAG_MS of the deficit is paid back
    env2.clock.run();
    const burst = 1 + MAX_LAG_MS / 10;
    expect(b.tokens.slice(0, burst)).toEqual(Array<number>(burst).fill(1010));
    expect(b.tokens.slice(burst)).toEqual([1020, 1030, 1040, 1050].slice(0, 10 - burst));
  });

  it('stopping aborts queued and running requests and refuses new ones; starting resumes', () => {
    const env = setup({ maxNumSeqs: 1 });
    const a = submit(env, 'a').tracked;
    const b = submit(env, 'b').tracked;
    env.engine.stop();
    expect(a.aborted && b.aborted).toBe(true);
    expect(submit(env, 'c').seq).toEqual({ ok: false, reason: 'stopped' });
    expect(env.clock.pending).toBe(0);
    env.engine.start();
    const d = submit(env, 'd').tracked;
    env.clock.run();
    expect(d.tokens).toHaveLength(3);
  });
});

describe('engine with a prefix cache', () => {
  /** A prompt of `shared` tokens every conversation starts with, then `own` tokens of its own. */
  const prompt = (shared: number, own: number, who: string): string[] => [
    ...Array.from({ length: shared }, (_, i) => `system-${i}`),
    ...Array.from({ length: own }, (_, i) => `${who}-${i}`),
  ];
  const withPrompt = (tokens: string[]): Partial<SequenceRequest> => ({
    promptTokens: tokens.length,
    promptTokenList: () => tokens,
  });

  it('prefills only what the cache lacks: the first token of a request sharing a prefix comes sooner', () => {
    // 1 ms per prompt token makes the prefill's length visible in the first token's time.
    const env = setup({
      latency: { prefill_ms: 10, prefill_per_token_ms: 1 },
      prefixCache: { blockTokens: 16, capacityTokens: 10_000 },
    });
    submit(env, 'a', withPrompt(prompt(320, 40, 'a')));
    env.clock.run();
    const started = env.clock.t;
    const { tracked } = submit(env, 'b', withPrompt(prompt(320, 40, 'b')));
    env.clock.run();
    // 320 shared tokens are 20 full blocks: 360 - 320 = 40 tokens prefilled, 10 + 40 ms.
    expect(tracked.tokens[0]! - started).toBe(50);
    expect(env.lookups).toEqual([
      [360, 0],
      [360, 320],
    ]);
  });

  it('caches only full blocks, matches only from the first block on, and evicts the least recently used', () => {
    const env = setup({ prefixCache: { blockTokens: 4, capacityTokens: 8 } });
    const run = (tokens: string[]): void => {
      submit(env, 'x', withPrompt(tokens));
      env.clock.run();
    };
    run(['a', 'b', 'c', 'd', 'e', 'f']); // one full block [a b c d]; [e f] is not cached
    run(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']); // hits [a b c d], caches [e f g h]
    run(['z', 'b', 'c', 'd']); // another first block: no hit
    // [z b c d] evicted the older prompt's tail [e f g h] (capacity 2 blocks), not its prefix.
    run(['a', 'b', 'c', 'd']);
    expect(env.lookups.map(([, hits]) => hits)).toEqual([0, 4, 0, 4]);
  });

  it('without a capacity, no lookups and prefill as before', () => {
    const env = setup({ latency: { prefill_ms: 10, prefill_per_token_ms: 1 } });
    submit(env, 'a', withPrompt(prompt(320, 40, 'a')));
    env.clock.run();
    const started = env.clock.t;
    const { tracked } = submit(env, 'b', withPrompt(prompt(320, 40, 'b')));
    env.clock.run();
    expect(tracked.tokens[0]! - started).toBe(370);
    expect(env.lookups).toEqual([]);
  });
});
