import type { OutgoingHttpHeaders } from 'node:http';
import { WHOLE_TOKEN_SLACK } from './types.js';

/**
 * The `x-ratelimit-*` response headers, with OpenAI's names: for requests and for tokens, the
 * tightest of the limits a request was admitted (or refused) under. Each limit is a bucket or a
 * budget that refills continuously, so it is reported as:
 *
 * - `limit`: its capacity (`burst_size`, or `burst_tokens` / `tokens_per_minute`), the most it can
 *   hold;
 * - `remaining`: what it holds now, after this request's own take, in whole units, never below 0;
 * - `reset`: the time until it is full again, as a duration (`0s`, `250ms`, `1.5s`, `6m0s`).
 *
 * The tightest is the one with the fewest remaining; between equals, the one that takes longer to
 * refill.
 */
export const LIMIT_HEADER_NAMES = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
] as const;

/**
 * The rate-limit headers of a provider that speaks Anthropic's Messages API: its account's limits,
 * dropped like the `x-ratelimit-*` ones when the gateway reports its own.
 */
export const ANTHROPIC_LIMIT_HEADER_NAMES = ['requests', 'tokens', 'input-tokens', 'output-tokens'].flatMap(
  (kind) => ['limit', 'remaining', 'reset'].map((field) => `anthropic-ratelimit-${kind}-${field}`),
);

/** One kind of limit (requests or tokens): the tightest seen so far. */
class Tightest {
  capacity = 0;
  remaining = -1;
  resetMs = 0;

  consider(capacity: number, level: number, perSecond: number): void {
    const remaining = Math.max(0, Math.floor(level + WHOLE_TOKEN_SLACK));
    const resetMs = level >= capacity ? 0 : Math.ceil(((capacity - level) / perSecond) * 1000);
    if (
      this.remaining >= 0 &&
      (remaining > this.remaining || (remaining === this.remaining && resetMs <= this.resetMs))
    )
      return;
    this.capacity = capacity;
    this.remaining = remaining;
    this.resetMs = resetMs;
  }

  write(headers: OutgoingHttpHeaders, limit: string, remaining: string, reset: string): void {
    if (this.remaining < 0) return;
    headers[limit] = String(this.capacity);
    headers[remaining] = String(this.remaining);
    headers[reset] = durationText(this.resetMs);
  }
}

/** Collects the levels of a request's limits; `headers()` makes the response headers from them. */
export class LimitLevels {
  readonly #requests = new Tightest();
  readonly #tokens = new Tightest();

  /** A request rate bucket: `capacity` burst, refilled `perSecond`, holding `level` now. */
  requests(capacity: number, level: number, perSecond: number): void {
    this.#requests.consider(capacity, level, perSecond);
  }

  /** A token budget: `capacity` tokens, refilled `perSecond`, holding `level` (negative in debt). */
  tokens(capacity: number, level: number, perSecond: number): void {
    this.#tokens.consider(capacity, level, perSecond);
  }

  /** The headers of the limits reported, or undefined when none was. */
  headers(): OutgoingHttpHeaders | undefined {
    if (this.#requests.remaining < 0 && this.#tokens.remaining < 0) return undefined;
    const headers: OutgoingHttpHeaders = {};
    this.#requests.write(headers, LIMIT_HEADER_NAMES[0], LIMIT_HEADER_NAMES[1], LIMIT_HEADER_NAMES[2]);
    this.#tokens.write(headers, LIMIT_HEADER_NAMES[3], LIMIT_HEADER_NAMES[4], LIMIT_HEADER_NAMES[5]);
    return headers;
  }
}

/**
 * A duration the way OpenAI's headers (and Go's `time.Duration`) write it: whole milliseconds below
 * a second (`250ms`), seconds with up to three decimals below a minute (`1.5s`), then minutes and
 * hours (`6m0s`, `1h0m0s`).
 */
export function durationText(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = `${(ms % 60_000) / 1000}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}
