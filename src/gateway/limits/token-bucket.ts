import { rateLimitRefusal } from './refusals.js';
import type { Clock } from './clock.js';
import type { LimitLevels } from './limit-headers.js';
import {
  NO_OP_GRANT,
  WHOLE_TOKEN_SLACK,
  type Grant,
  type LimitSubject,
  type RateLimiter,
  type RateLimitRefusal,
} from './types.js';

/** Config shape of `rate_limit` (spec 2.3). */
export interface RateLimitParams {
  readonly requests_per_second: number;
  readonly burst_size: number;
}

/**
 * Token bucket with continuous (fractional) refill: capacity `burst_size`, refill
 * `requests_per_second`, starts full. Each call does constant-time arithmetic against the clock;
 * there are no timers, so an idle bucket costs nothing.
 */
export class TokenBucket implements RateLimiter {
  readonly params: RateLimitParams;
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #refusal: RateLimitRefusal;
  #tokens: number;
  #last: number;

  /**
   * @param initialTokens level to start from instead of full; a reload that changes the parameters
   *   seeds the new bucket with the old level so it cannot hand out a fresh burst.
   */
  constructor(params: RateLimitParams, subject: LimitSubject, clock: Clock, initialTokens?: number) {
    this.params = params;
    this.#clock = clock;
    this.#capacity = Math.max(0, params.burst_size);
    this.#perMs = Math.max(0, params.requests_per_second) / 1000;
    this.#tokens = Math.min(this.#capacity, Math.max(0, initialTokens ?? this.#capacity));
    this.#last = clock.now();
    this.#refusal = rateLimitRefusal(subject);
  }

  /** Takes one token if available. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens + WHOLE_TOKEN_SLACK < 1) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }

  acquire(): Grant | RateLimitRefusal {
    return this.tryTake() ? NO_OP_GRANT : this.#refusal;
  }

  /** Tokens available now (fractional). */
  available(): number {
    this.#refill();
    return this.#tokens;
  }

  /** Reports its level for the response's rate-limit headers. */
  reportTo(levels: LimitLevels): void {
    levels.requests(this.#capacity, this.available(), this.#perMs * 1000);
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#last;
    // A clock that does not move (or a fake one moved backwards) adds nothing.
    if (elapsed > 0) {
      this.#last = now;
      this.#tokens = Math.min(this.#capacity, this.#tokens + elapsed * this.#perMs);
    }
  }
}
