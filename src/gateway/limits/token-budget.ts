import { tokenLimitRefusal } from './refusals.js';
import type { Clock } from './clock.js';
import type { LimitLevels } from './limit-headers.js';
import { NO_OP_GRANT, type Grant, type TokenLimiter, type TokenLimitRefusal } from './types.js';

/** Config shape of `token_limit`. */
export interface TokenLimitParams {
  readonly tokens_per_minute: number;
  readonly burst_tokens?: number | undefined;
}

/**
 * A token budget with continuous refill: capacity `burst_tokens` (default `tokens_per_minute`),
 * refill `tokens_per_minute`, starts full. Admission only asks whether it is positive; the tokens a
 * response reported are charged when it ends, so the balance may go below zero, and then refuses
 * until the refill brings it back above. No timers: an idle budget costs nothing.
 */
export class TokenBudget implements TokenLimiter {
  readonly params: TokenLimitParams;
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #scope: TokenLimitRefusal['scope'];
  readonly #subject: string;
  #balance: number;
  #last: number;

  /** @param initialBalance a reload that changes the parameters carries the old balance over. */
  constructor(
    params: TokenLimitParams,
    scope: TokenLimitRefusal['scope'],
    subject: string,
    clock: Clock,
    initialBalance?: number,
  ) {
    this.params = params;
    this.#clock = clock;
    this.#capacity = params.burst_tokens ?? params.tokens_per_minute;
    this.#perMs = params.tokens_per_minute / 60_000;
    this.#scope = scope;
    this.#subject = subject;
    this.#balance = Math.min(this.#capacity, initialBalance ?? this.#capacity);
    this.#last = clock.now();
  }

  acquire(): Grant | TokenLimitRefusal {
    const balance = this.balance();
    if (balance > 0) return NO_OP_GRANT;
    // Until the balance is above zero, in whole seconds, at least one.
    const seconds = Math.max(1, Math.ceil((-balance + 1e-9) / (this.#perMs * 1000)));
    return tokenLimitRefusal(this.#scope, this.#subject, seconds);
  }

  charge(tokens: number): void {
    if (!(tokens > 0)) return;
    this.balance();
    this.#balance -= tokens;
  }

  /** Reports its level for the response's rate-limit headers. */
  reportTo(levels: LimitLevels): void {
    levels.tokens(this.#capacity, this.balance(), this.#perMs * 1000);
  }

  /** Tokens available now (negative while in debt). */
  balance(): number {
    const now = this.#clock.now();
    const elapsed = now - this.#last;
    if (elapsed > 0) {
      this.#last = now;
      this.#balance = Math.min(this.#capacity, this.#balance + elapsed * this.#perMs);
    }
    return this.#balance;
  }
}
