/**
 * Time source for everything time-based in the limiters. Monotonic on purpose: a wall-clock step
 * (NTP, VM resume) must never refill a bucket to full or freeze it. Injected so tests drive time by
 * hand instead of sleeping.
 */
export interface Clock {
  /** Milliseconds from an arbitrary origin; never decreases. */
  now(): number;
}

export const monotonicClock: Clock = { now: () => performance.now() };

/** A clock that only moves when told to; for tests and simulations. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock cannot move backwards (advance ${ms})`);
    this.#now += ms;
  }
}
