import type { LatencyConfig } from '../config/schema.js';
import { realClock, type EngineClock } from './clock.js';
import { stepDurationMs } from './latency.js';
import { PrefixCache, blockHashes, type PrefixCacheConfig } from './prefix-cache.js';
import { WaitQueue, type Queued } from './wait-queue.js';

/**
 * How far the simulated clock may fall behind the wall clock before the deficit is dropped. Small
 * lags (timer granularity, a busy event loop) are caught up so the long-run token rate is exact; a
 * long stall (GC, a suspended laptop) is forgotten instead of being paid back as an unpaced burst.
 */
export const MAX_LAG_MS = 50;

/** The callbacks through which the engine drives one request's response. */
export interface SequenceEvents {
  /** Token `index` exists; index 0 is the first token, at the end of the step that prefilled it. */
  onToken: (index: number) => void;
  /** The last token was emitted; the sequence has left the engine. */
  onFinish: () => void;
  /** The engine stopped before the sequence finished. */
  onAbort: () => void;
  /** True while the client cannot take more bytes: the sequence skips steps instead of buffering. */
  isBlocked: () => boolean;
}

export interface SequenceRequest {
  promptTokens: number;
  /** The prompt's tokens, read only by a prefix cache (built when asked). */
  promptTokenList: () => string[];
  outputTokens: number;
  priority: number;
  /**
   * Handed over after its first token: the engine stops stepping it, but it keeps its running slot
   * until `release()`. Fault scripts use this to pace themselves with `delay_ms`.
   */
  external: boolean;
  /** Reported to the observer when the sequence finishes. */
  finishReason: string;
}

/** Where the engine reports latencies (the metrics module implements it). */
export interface EngineObserver {
  firstToken: (seconds: number) => void;
  interToken: (seconds: number) => void;
  finished: (reason: string, e2eSeconds: number) => void;
  aborted: () => void;
  /** A prompt was prefilled with a prefix cache: its tokens, and how many were found cached. */
  prefixCache: (queriedTokens: number, hitTokens: number) => void;
}

export type Admission =
  | { ok: true; seq: Sequence }
  | { ok: false; reason: 'saturated'; waiting: number; maxWaiting: number }
  | { ok: false; reason: 'stopped' };

export interface CapacityRecord {
  model: string;
  max_waiting: number;
  max_num_seqs: number;
  waiting: number;
  running: number;
}

/** What the KV-cache usage gauge reads. */
export interface CacheUsage {
  cachedTokens: number;
  capacityTokens: number;
}

export class Sequence implements Queued {
  state: 'waiting' | 'running' | 'done' = 'waiting';
  queued = false;
  started = false;
  handedOver = false;
  emitted = 0;
  lastTokenAt = 0;
  /** Leading prompt tokens the prefix cache held when the sequence was prefilled (set on admission). */
  cachedTokens = 0;

  private readonly engine: Engine;
  readonly request: SequenceRequest;
  readonly events: SequenceEvents;
  readonly arrival: number;
  readonly arrivedAt: number;

  constructor(
    engine: Engine,
    request: SequenceRequest,
    events: SequenceEvents,
    arrival: number,
    arrivedAt: number,
  ) {
    this.engine = engine;
    this.request = request;
    this.events = events;
    this.arrival = arrival;
    this.arrivedAt = arrivedAt;
  }

  get priority(): number {
    return this.request.priority;
  }

  /** The client went away: leave the queue or free the slot. Safe to call more than once. */
  cancel(): void {
    this.engine.cancel(this);
  }

  /** An external sequence is done with its slot. */
  release(): void {
    this.engine.release(this);
  }
}

/**
 * A continuous-batching scheduler for one model, stepped in simulated time paced to the wall clock.
 *
 * Each step admits waiting requests up to `max_num_seqs` (priority, then arrival order), prefills
 * them (their first token comes at the end of the step) and decodes one token for every sequence
 * already running. The step's duration comes from the latency model, so time to first token grows
 * with queueing and with the batch, and inter-token latency grows with the batch.
 *
 * Pacing: when the engine wakes from idle its simulated clock is set to the wall clock, so the
 * first request after idle is paced exactly like the rest (there is no unpaced burst).
 */
export class Engine {
  private readonly queue = new WaitQueue<Sequence>();
  private readonly running = new Set<Sequence>();
  private batch: Sequence[] = [];
  private stepping = false;
  private simClock = 0;
  private stepEnd = 0;
  private cancelTimer: (() => void) | undefined;
  private arrivals = 0;
  private alive = true;

  readonly model: string;
  private readonly latency: LatencyConfig;
  private maxNumSeqs: number;
  private maxWaiting: number;
  private readonly observer: EngineObserver;
  private readonly clock: EngineClock;
  private readonly prefixCache: PrefixCache | undefined;

  constructor(
    model: string,
    latency: LatencyConfig,
    maxNumSeqs: number,
    maxWaiting: number,
    observer: EngineObserver,
    clock: EngineClock = realClock,
    prefixCache: PrefixCacheConfig = { blockTokens: 16, capacityTokens: 0 },
  ) {
    this.model = model;
    this.latency = latency;
    this.maxNumSeqs = maxNumSeqs;
    this.maxWaiting = maxWaiting;
    this.observer = observer;
    this.clock = clock;
    this.prefixCache = prefixCache.capacityTokens > 0 ? new PrefixCache(prefixCache) : undefined;
  }

  /** The prefix cache's occupancy; undefined without one. */
  cacheUsage(): CacheUsage | undefined {
    const cache = this.prefixCache;
    return cache && { cachedTokens: cache.cachedTokens, capacityTokens: cache.capacityTokens };
  }

  get isRunning(): boolean {
    return this.alive;
  }

  /**
   * The single admission funnel. Refuses at once when the engine is stopped or the waiting queue is
   * at `max_waiting` (everything admitted but not yet running counts as waiting).
   */
  submit(request: SequenceRequest, events: SequenceEvents): Admission {
    if (!this.alive) return { ok: false, reason: 'stopped' };
    if (this.maxWaiting > 0 && this.queue.size >= this.maxWaiting) {
      return { ok: false, reason: 'saturated', waiting: this.queue.size, maxWaiting: this.maxWaiting };
    }
    const seq = new Sequence(this, request, events, this.arrivals++, this.clock.now());
    this.queue.push(seq);
    this.kick();
    return { ok: true, seq };
  }

  capacity(): CapacityRecord {
    return {
      model: this.model,
      max_waiting: this.maxWaiting,
      max_num_seqs: this.maxNumSeqs,
      waiting: this.queue.size,
      running: this.running.size,
    };
  }

  /**
   * Lowering `max_num_seqs` only gates admission (running sequences above the cap complete);
   * lowering `max_waiting` only affects later arrivals. The caller validates the values.
   */
  setCapacity(change: { maxNumSeqs?: number; maxWaiting?: number }): void {
    if (change.maxNumSeqs !== undefined) this.maxNumSeqs = change.maxNumSeqs;
    if (change.maxWaiting !== undefined) this.maxWaiting = change.maxWaiting;
    this.kick();
  }

  /** Liveness failure: every queued and running request is aborted and new ones are refused. */
  stop(): void {
    if (!this.alive) return;
    this.alive = false;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.stepping = false;
    this.batch = [];
    const victims = [...this.queue.drain(), ...this.running];
    this.running.clear();
    for (const seq of victims) {
      seq.state = 'done';
      if (!seq.handedOver) this.observer.aborted();
      seq.events.onAbort();
    }
  }

  start(): void {
    if (this.alive) return;
    this.alive = true;
    this.kick();
  }

  /** Starts stepping if idle. Called on arrival, on freed slots, on capacity changes and on drain. */
  kick(): void {
    if (this.stepping || !this.alive) return;
    this.simClock = this.clock.now();
    this.beginStep();
  }

  cancel(seq: Sequence): void {
    if (seq.state === 'waiting') {
      this.queue.remove(seq);
    } else if (seq.state === 'running') {
      this.running.delete(seq);
    } else {
      return;
    }
    seq.state = 'done';
    // A handed-over sequence (a fault script) ending is not an aborted generation.
    if (!seq.handedOver) this.observer.aborted();
    this.kick();
  }

  release(seq: Sequence): void {
    if (seq.state !== 'running') return;
    this.running.delete(seq);
    seq.state = 'done';
    this.kick();
  }

  private beginStep(): void {
    const batch: Sequence[] = [];
    let prefillTokens = 0;
    while (this.running.size < this.maxNumSeqs) {
      const seq = this.queue.shift();
      if (!seq) break;
      seq.state = 'running';
      this.running.add(seq);
      batch.push(seq);
      seq.cachedTokens = this.cachedPrefix(seq.request);
      prefillTokens += seq.request.promptTokens - seq.cachedTokens;
    }
    const prefillSeqs = batch.length;
    let decodeSeqs = 0;
    for (const seq of this.running) {
      if (!seq.started || seq.handedOver) continue;
      decodeSeqs++;
      if (!seq.events.isBlocked()) batch.push(seq);
    }
    if (batch.length === 0) {
      // Nothing can make progress (idle, or every client is applying backpressure): sleep until kicked.
      this.stepping = false;
      return;
    }
    this.stepping = true;
    this.batch = batch;
    this.stepEnd = this.simClock + stepDurationMs(this.latency, { prefillSeqs, prefillTokens, decodeSeqs });
    this.cancelTimer = this.clock.schedule(this.endStep, this.stepEnd - this.clock.now());
  }

  /** Tokens of the prompt's prefix found in the prefix cache (which then holds the whole prompt). */
  private cachedPrefix(request: SequenceRequest): number {
    const cache = this.prefixCache;
    if (cache === undefined) return 0;
    const hits = cache.prefill(blockHashes(request.promptTokenList(), cache.blockTokens));
    this.observer.prefixCache(request.promptTokens, hits);
    return hits;
  }

  private readonly endStep = (): void => {
    this.cancelTimer = undefined;
    const now = this.clock.now();
    this.simClock = Math.max(this.stepEnd, now - MAX_LAG_MS);
    const batch = this.batch;
    this.batch = [];
    for (const seq of batch) {
      // A client that started applying backpressure during the step gets its token later.
      if (seq.state !== 'running' || (seq.started && seq.events.isBlocked())) continue;
      this.emit(seq, now);
    }
    if (this.alive) this.beginStep();
  };

  private emit(seq: Sequence, now: number): void {
    const index = seq.emitted++;
    if (index === 0) {
      seq.started = true;
      this.observer.firstToken((now - seq.arrivedAt) / 1000);
      if (seq.request.external) seq.handedOver = true;
    } else {
      this.observer.interToken((now - seq.lastTokenAt) / 1000);
    }
    seq.lastTokenAt = now;
    seq.events.onToken(index);
    if (seq.handedOver || seq.state !== 'running') return;
    if (seq.emitted >= seq.request.outputTokens) {
      this.running.delete(seq);
      seq.state = 'done';
      this.observer.finished(seq.request.finishReason, (now - seq.arrivedAt) / 1000);
      seq.events.onFinish();
    }
  }
}
