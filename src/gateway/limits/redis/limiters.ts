import type { BatchParams } from '../batch.js';
import type { ConcurrencyParams } from '../concurrency.js';
import type { InflightParams } from '../inflight.js';
import type { LimitSubject, RateLimitParams } from '../token-bucket.js';
import type {
  BatchLimiter,
  BatchRefusal,
  ConcurrencyLimiter,
  ConcurrencyRefusal,
  Grant,
  InflightLimiter,
  InflightRefusal,
  MaybePromise,
  RateLimiter,
  RateLimitRefusal,
  Refusal,
} from '../types.js';
import { LocalGrant, type LocalCount } from './leases.js';
import type { SharedLimitKind } from './policy.js';
import { batchRefusal, concurrencyRefusal, inflightRefusal, rateLimitRefusal } from './refusals.js';

/** What the shared limiters ask of the store: one atomic decision in Redis, or the failure policy. */
export interface SharedDecisions {
  takeToken<R extends Refusal>(
    key: string,
    capacity: number,
    perSecond: number,
    ttlMs: number,
    refusal: R,
  ): MaybePromise<Grant | R>;
  acquireSlot<R extends Refusal>(
    kind: SharedLimitKind,
    key: string,
    limit: number,
    refusal: R,
    local: LocalCount,
  ): MaybePromise<Grant | R>;
}

/**
 * Token bucket in Redis (spec 8): capacity `burst_size`, refill `requests_per_second`, by server time.
 * The key lives until the bucket would be full again (plus a second of margin), since a missing key
 * reads as full.
 */
export class SharedTokenBucket implements RateLimiter {
  readonly params: RateLimitParams;
  readonly #decisions: SharedDecisions;
  readonly #key: string;
  readonly #ttlMs: number;
  readonly #refusal: RateLimitRefusal;

  constructor(decisions: SharedDecisions, key: string, params: RateLimitParams, subject: LimitSubject) {
    this.params = { requests_per_second: params.requests_per_second, burst_size: params.burst_size };
    this.#decisions = decisions;
    this.#key = key;
    this.#ttlMs = Math.ceil((params.burst_size / params.requests_per_second) * 1000) + 1000;
    this.#refusal = rateLimitRefusal(subject);
  }

  acquire(): MaybePromise<Grant | RateLimitRefusal> {
    const { burst_size, requests_per_second } = this.params;
    return this.#decisions.takeToken(this.#key, burst_size, requests_per_second, this.#ttlMs, this.#refusal);
  }
}

/** Concurrency permits in Redis: a leased slot per request, held until it completes. */
export class SharedConcurrency implements ConcurrencyLimiter {
  readonly params: ConcurrencyParams;
  readonly #decisions: SharedDecisions;
  readonly #key: string;
  readonly #local: LocalCount;
  readonly #refusal: ConcurrencyRefusal;

  constructor(
    decisions: SharedDecisions,
    key: string,
    params: ConcurrencyParams,
    subject: LimitSubject,
    local: LocalCount,
  ) {
    this.params = { max_concurrent_requests: params.max_concurrent_requests };
    this.#decisions = decisions;
    this.#key = key;
    this.#local = local;
    this.#refusal = concurrencyRefusal(subject, params.max_concurrent_requests);
  }

  acquire(): MaybePromise<Grant | ConcurrencyRefusal> {
    const max = this.params.max_concurrent_requests;
    return this.#decisions.acquireSlot('concurrency', this.#key, max, this.#refusal, this.#local);
  }

  /** Permits this process holds (Redis holds every replica's). */
  inUse(): number {
    return this.#local.n;
  }
}

/**
 * Per-account realtime in-flight slots in Redis: one slot set per alias and account (`<key>@<account>`),
 * so all keys of an account share one count across every replica. Requests without an account, and
 * accounts without a cap, are counted in this process only and never go to Redis: nothing could
 * refuse them.
 */
export class SharedAccountInflight implements InflightLimiter {
  readonly alias: string;
  readonly params: InflightParams;
  readonly #decisions: SharedDecisions;
  readonly #key: string;
  readonly #default: number;
  readonly #overrides: ReadonlyMap<string, number>;
  readonly #local: LocalCount;

  constructor(
    decisions: SharedDecisions,
    key: string,
    alias: string,
    params: InflightParams,
    local: LocalCount,
  ) {
    this.alias = alias;
    this.params = params;
    this.#decisions = decisions;
    this.#key = key;
    this.#default = params.inflight_limit ?? Infinity;
    this.#overrides = new Map(Object.entries(params.account_inflight_limits ?? {}));
    this.#local = local;
  }

  acquire(account: string | undefined): MaybePromise<Grant | InflightRefusal> {
    if (account === undefined) return new LocalGrant(this.#local);
    const limit = this.#overrides.get(account) ?? this.#default;
    if (limit === Infinity) return new LocalGrant(this.#local);
    return this.#decisions.acquireSlot(
      'inflight',
      accountKey(this.#key, account),
      limit,
      inflightRefusal(this.alias, account, limit),
      this.#local,
    );
  }

  /** Realtime requests this process has in flight on the alias, with or without an account. */
  inFlight(): number {
    return this.#local.n;
  }
}

/** The alias-wide batch in-flight cap in Redis (one count per alias, not per tenant). */
export class SharedBatchInflight implements BatchLimiter {
  readonly alias: string;
  readonly #decisions: SharedDecisions;
  readonly #key: string;
  readonly #limit: number;
  readonly #local: LocalCount;
  readonly #refusal: BatchRefusal;

  constructor(
    decisions: SharedDecisions,
    key: string,
    alias: string,
    params: BatchParams,
    local: LocalCount,
  ) {
    this.alias = alias;
    this.#decisions = decisions;
    this.#key = key;
    const limit = params.batch_inflight_limit ?? Infinity;
    this.#limit = params.enforce ? limit : Infinity;
    this.#local = local;
    this.#refusal = batchRefusal(alias, limit);
  }

  acquire(): MaybePromise<Grant | BatchRefusal> {
    if (this.#limit === Infinity) return new LocalGrant(this.#local);
    return this.#decisions.acquireSlot('batch', this.#key, this.#limit, this.#refusal, this.#local);
  }

  /** Dispatched requests this process has in flight on the alias. */
  inFlight(): number {
    return this.#local.n;
  }
}

/**
 * The slot key of one account. The account is percent-encoded, so the last `@` always separates it
 * from the limiter key: no alias/account pair can share a key with another.
 */
export function accountKey(limiterKey: string, account: string): string {
  return `${limiterKey}@${encodeURIComponent(account)}`;
}
