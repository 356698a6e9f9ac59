import type { AimdParameters } from '../config/schema/index.js';
import type { Clock } from '../limits/clock.js';
import type { AimdSeries, AttemptRole } from './aimd-metrics.js';
import { deferPreferred, type PriorityReorder, type Random } from './strategies.js';

/**
 * The first-token share controller of one priority pool (spec 3.1).
 *
 * The share `f` is the probability that a request's first attempt goes to the preferred provider
 * (the first in definition order). Completed outcomes of attempts on the preferred provider fill a
 * sliding window; the breach rate over it drives the share:
 *
 * - decrease: at least `min_samples` outcomes and rate > `breach_rate_target`: f = max(floor,
 *   f * decay), window cleared, dwell restarted. Evaluated when an outcome arrives and not held
 *   back by the dwell (the 3.1 row has no time condition): clearing the window already spaces two
 *   decreases by `min_samples` fresh outcomes, and a slow provider should lose traffic at once.
 * - increase: rate <= `recovery_breach_rate` (with at least `min_samples` outcomes) continuously for
 *   `dwell_ms`, counted from the later of the last adjustment and the start of the healthy period:
 *   f = min(1, f + step), window kept, dwell restarted.
 * - hold: rate between the two thresholds; a healthy period ends.
 * - idle recovery: fewer than `min_samples` outcomes and `idle_recovery_ms` (> 0) since the last
 *   adjustment: f + step without a rate judgement, dwell restarted.
 *
 * Time-driven transitions are evaluated lazily, whenever the controller is touched (an outcome,
 * `preferFirst`, `tick`). The window only changes with outcomes, so the state is constant between
 * two touches and every interval boundary that passed in between is applied at once, at the time
 * it fell due. Touching the controller more or less often therefore never changes its decisions
 * (`dwell_ms: 0` aside, see `#earn`); `tick` only exists so the exported gauge moves while a pool
 * sees no traffic.
 */

/** Outcome class of one attempt (spec 3.1). `unknown` is excluded from the breach rate. */
export type Outcome = 'ok' | 'breach' | 'unknown';

export type ControllerState = 'active' | 'parked' | 'retired';

export interface ShareControllerOptions {
  readonly params: AimdParameters;
  readonly clock: Clock;
  readonly random: Random;
  readonly series: AimdSeries;
}

export interface ShareSnapshot {
  readonly state: ControllerState;
  readonly share: number;
  readonly samples: number;
  readonly breaches: number;
  /** Breaches / samples, 0 while the window is empty. */
  readonly breachRate: number;
  readonly inFlight: number;
  /** Clock time the dwell counts from. */
  readonly lastAdjustmentAt: number;
  /** Clock time the current healthy period started, undefined outside one. */
  readonly healthySince: number | undefined;
}

/**
 * One attempt as the attempt loop sees it. The first outcome call settles the attempt; later
 * calls return undefined and change nothing, so an attempt never counts twice (for example a late
 * first token racing the deadline that already abandoned it). `end` releases the in-flight slot and
 * may be called more than once.
 */
export interface AttemptProbe {
  readonly role: AttemptRole;
  /** First non-sentinel data frame of a strict-mode 2xx SSE stream, `latencyMs` after the attempt started. */
  firstToken(latencyMs: number): Outcome | undefined;
  /** The first-token deadline abandoned the attempt after `elapsedMs`. */
  deadlineExpired(elapsedMs: number): Outcome | undefined;
  /** Response status. Below 400 it is not an outcome: the attempt stays open for its first token. */
  status(status: number): Outcome | undefined;
  /** Connection error, or the client went away before the first token. */
  unknown(): Outcome | undefined;
  end(): void;
}

/** Snaps float noise at the top of the range so a share that reached 1 reads exactly 1. */
const EPSILON = 1e-9;

export class ShareController implements PriorityReorder {
  readonly params: AimdParameters;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #series: AimdSeries;
  readonly #overload: ReadonlySet<number>;

  #state: ControllerState = 'active';
  #share = 1;
  /** Ring buffer of the last `window_samples` outcomes: 1 = breach, 0 = ok. */
  readonly #window: Uint8Array;
  #next = 0;
  #samples = 0;
  #breaches = 0;
  #lastAdjustmentAt: number;
  #healthySince: number | undefined;
  #inFlight = 0;

  constructor(options: ShareControllerOptions) {
    this.params = options.params;
    this.#clock = options.clock;
    this.#random = options.random;
    this.#series = options.series;
    this.#overload = new Set(options.params.overload_statuses);
    this.#window = new Uint8Array(options.params.window_samples);
    this.#lastAdjustmentAt = this.#clock.now();
    this.#series.setShare(this.#share);
    this.#publishWindow();
  }

  get share(): number {
    return this.#share;
  }

  get state(): ControllerState {
    return this.#state;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  snapshot(): ShareSnapshot {
    return {
      state: this.#state,
      share: this.#share,
      samples: this.#samples,
      breaches: this.#breaches,
      breachRate: this.#rate(),
      inFlight: this.#inFlight,
      lastAdjustmentAt: this.#lastAdjustmentAt,
      healthySince: this.#healthySince,
    };
  }

  // -------------------------------------------------------------------------------------------
  // Selection
  // -------------------------------------------------------------------------------------------

  /**
   * Whether this request's first attempt starts at the preferred provider: true with probability
   * f. At f = 1 no number is drawn (the common, healthy case costs nothing).
   */
  preferFirst(): boolean {
    this.#advance(this.#clock.now());
    return this.#share >= 1 || this.#random() < this.#share;
  }

  /**
   * The attempt order of one request: the configured order when the preferred provider goes first,
   * otherwise the next provider first and the preferred one second (see `deferPreferred`).
   */
  orderFor<T>(providers: readonly T[]): readonly T[] {
    return this.preferFirst() ? providers : deferPreferred(providers);
  }

  /** Applies time-driven transitions that fell due; called by the registry's interval. */
  tick(): void {
    this.#advance(this.#clock.now());
  }

  // -------------------------------------------------------------------------------------------
  // Outcomes
  // -------------------------------------------------------------------------------------------

  /**
   * Starts an attempt. Preferred attempts count in `aimd_in_flight` until `end`. Use the probe for
   * every outcome of the attempt: it guarantees one outcome per attempt.
   */
  startAttempt(role: AttemptRole): AttemptProbe {
    if (role === 'preferred') {
      this.#inFlight++;
      this.#series.inFlight(1);
    }
    return new Attempt(this, role, this.#release);
  }

  /** A first token after `latencyMs`: a breach when later than the budget. */
  observeFirstToken(latencyMs: number, role: AttemptRole = 'preferred'): Outcome {
    checkDuration(latencyMs, 'latency');
    const now = this.#clock.now();
    this.#advance(now);
    this.#series.firstToken(role, latencyMs / 1000);
    const breach = latencyMs > this.params.latency_budget_ms;
    if (breach) this.#series.firstTokenBreach(role);
    if (role === 'preferred') this.#record(breach, now);
    return breach ? 'breach' : 'ok';
  }

  /**
   * A deadline expiry after `elapsedMs`. It is a censored lower bound of the latency, so it never
   * enters the histogram: at or after the budget the attempt certainly breached; before it (some
   * shorter deadline fired) nothing is known.
   */
  observeDeadlineExpiry(elapsedMs: number, role: AttemptRole = 'preferred'): Outcome {
    checkDuration(elapsedMs, 'elapsed time');
    const now = this.#clock.now();
    this.#advance(now);
    if (elapsedMs < this.params.latency_budget_ms) return this.#unknown(role);
    this.#series.firstTokenBreach(role);
    if (role === 'preferred') this.#record(true, now);
    return 'breach';
  }

  /**
   * A response status. Overload statuses are breaches, other error statuses unknown; a status
   * below 400 is no outcome yet (the first token, or its absence, decides).
   */
  observeStatus(status: number, role: AttemptRole = 'preferred'): Outcome | undefined {
    if (status < 400) return undefined;
    const now = this.#clock.now();
    this.#advance(now);
    if (!this.#overload.has(status)) return this.#unknown(role);
    if (role === 'preferred') {
      this.#series.overloadBreach(status);
      this.#record(true, now);
    }
    return 'breach';
  }

  /** Connection error or cancellation: counted, never part of the rate. */
  observeUnknown(role: AttemptRole = 'preferred'): Outcome {
    this.#advance(this.#clock.now());
    return this.#unknown(role);
  }

  /** The probe's `end`; private so only a probe (which ends once) can release a slot. */
  readonly #release = (role: AttemptRole): void => {
    if (role !== 'preferred') return;
    this.#inFlight--;
    this.#series.inFlight(-1);
  };

  // -------------------------------------------------------------------------------------------
  // Lifecycle (driven by the registry)
  // -------------------------------------------------------------------------------------------

  /** The pool lost eligibility: the share and window are kept but frozen. */
  park(): void {
    if (this.#state === 'active') this.#state = 'parked';
  }

  /**
   * The pool is eligible again with the same preferred provider and parameters. The share resumes
   * where it was parked; dwell and healthy time count from now, so the parked period earns nothing.
   */
  resume(): void {
    if (this.#state !== 'parked') return;
    const now = this.#clock.now();
    this.#state = 'active';
    this.#lastAdjustmentAt = now;
    if (this.#healthySince !== undefined) this.#healthySince = now;
    this.#series.setShare(this.#share);
    this.#publishWindow();
  }

  /**
   * Replaced or removed by a reload. Requests of older tables may still hold it: their outcomes
   * still count in the per-event metrics, but the share, the window and their gauges (which the
   * successor now owns) no longer move.
   */
  retire(): void {
    this.#state = 'retired';
  }

  // -------------------------------------------------------------------------------------------
  // Internals
  // -------------------------------------------------------------------------------------------

  #unknown(role: AttemptRole): Outcome {
    if (role === 'preferred') this.#series.unknown();
    return 'unknown';
  }

  #rate(): number {
    return this.#samples === 0 ? 0 : this.#breaches / this.#samples;
  }

  /** Adds one completed outcome of the preferred provider and judges the new rate. */
  #record(breach: boolean, now: number): void {
    if (this.#state !== 'active') return;
    const slot = this.#next;
    if (this.#samples === this.#window.length) this.#breaches -= this.#window[slot]!;
    else this.#samples++;
    this.#window[slot] = breach ? 1 : 0;
    if (breach) this.#breaches++;
    this.#next = slot + 1 === this.#window.length ? 0 : slot + 1;

    const p = this.params;
    if (this.#samples < p.min_samples) {
      this.#healthySince = undefined;
    } else {
      const rate = this.#rate();
      if (rate > p.breach_rate_target) this.#decrease(now);
      else if (rate <= p.recovery_breach_rate) this.#healthySince ??= now;
      else this.#healthySince = undefined; // hold: a healthy period must be continuous
    }
    this.#publishWindow();
  }

  #decrease(now: number): void {
    const p = this.params;
    const next = Math.max(p.share_floor, this.#share * p.share_decay);
    // At the floor the decision still clears the window and restarts the dwell, so the next
    // judgement rests on fresh outcomes; only a change of the share counts as an adjustment.
    if (next < this.#share) {
      this.#share = next;
      this.#series.setShare(next);
      this.#series.adjusted('decrease', 1);
    }
    this.#window.fill(0);
    this.#next = 0;
    this.#samples = 0;
    this.#breaches = 0;
    this.#lastAdjustmentAt = now;
    this.#healthySince = undefined;
  }

  /** Applies the time-driven increases that fell due up to `now`. */
  #advance(now: number): void {
    if (this.#state !== 'active') return;
    const p = this.params;
    if (this.#samples < p.min_samples) {
      if (p.idle_recovery_ms > 0) this.#earn(now, this.#lastAdjustmentAt, p.idle_recovery_ms);
    } else if (this.#healthySince !== undefined) {
      this.#earn(now, Math.max(this.#lastAdjustmentAt, this.#healthySince), p.dwell_ms);
    }
  }

  /**
   * One step per full `interval` since `since`. The dwell restarts at each boundary (not at `now`),
   * which keeps the result independent of how often the controller is touched. `dwell_ms: 0` has
   * no boundaries: it means no dwell, one step per evaluation while healthy.
   */
  #earn(now: number, since: number, interval: number): void {
    let steps: number;
    if (interval === 0) {
      steps = 1;
      this.#lastAdjustmentAt = now;
    } else {
      const elapsed = now - since;
      if (elapsed < interval) return;
      steps = Math.floor(elapsed / interval);
      this.#lastAdjustmentAt = since + steps * interval;
    }
    this.#increase(steps);
  }

  #increase(steps: number): void {
    if (this.#share >= 1) return;
    const step = this.params.share_step;
    const toTop = Math.ceil((1 - this.#share) / step - EPSILON);
    const applied = Math.min(steps, toTop);
    this.#share = applied >= toTop ? 1 : this.#share + applied * step;
    this.#series.setShare(this.#share);
    this.#series.adjusted('increase', applied);
  }

  #publishWindow(): void {
    if (this.#state === 'active') this.#series.setWindow(this.#samples, this.#rate());
  }
}

class Attempt implements AttemptProbe {
  readonly role: AttemptRole;
  readonly #controller: ShareController;
  readonly #release: (role: AttemptRole) => void;
  #settled = false;
  #ended = false;

  constructor(controller: ShareController, role: AttemptRole, release: (role: AttemptRole) => void) {
    this.#controller = controller;
    this.role = role;
    this.#release = release;
  }

  firstToken(latencyMs: number): Outcome | undefined {
    if (this.#settled) return undefined;
    this.#settled = true;
    return this.#controller.observeFirstToken(latencyMs, this.role);
  }

  deadlineExpired(elapsedMs: number): Outcome | undefined {
    if (this.#settled) return undefined;
    this.#settled = true;
    return this.#controller.observeDeadlineExpiry(elapsedMs, this.role);
  }

  status(status: number): Outcome | undefined {
    if (this.#settled) return undefined;
    const outcome = this.#controller.observeStatus(status, this.role);
    if (outcome !== undefined) this.#settled = true;
    return outcome;
  }

  unknown(): Outcome | undefined {
    if (this.#settled) return undefined;
    this.#settled = true;
    return this.#controller.observeUnknown(this.role);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#release(this.role);
  }
}

function checkDuration(ms: number, what: string): void {
  // Durations come from a monotonic clock; anything else is a bug in the caller.
  if (!(ms >= 0) || !Number.isFinite(ms))
    throw new RangeError(`${what} must be a finite, non-negative ms value (${ms})`);
}
