import type { BatchParams } from '../batch.js';
import type { ConcurrencyParams } from '../concurrency.js';
import type { InflightParams } from '../inflight.js';
import type { RateLimitParams } from '../token-bucket.js';
import {
  NO_OP_GRANT,
  isPromise,
  type BatchLimiter,
  type BatchRefusal,
  type ConcurrencyLimiter,
  type ConcurrencyRefusal,
  type Grant,
  type InflightLimiter,
  type LimitSubject,
  type InflightRefusal,
  type MaybePromise,
  type RateLimiter,
  type RateLimitRefusal,
  type Refusal,
  type TokenLimiter,
  type TokenLimitRefusal,
} from '../types.js';
import type { LocalCount } from './leases.js';
import type { SharedLimitKind } from './policy.js';
import {
  batchRefusal,
  concurrencyRefusal,
  inflightRefusal,
  rateLimitRefusal,
  tokenLimitRefusal,
} from '../refusals.js';
import type { TokenLimitParams } from '../token-budget.js';
import type { LimitLevels } from '../limit-headers.js';

/** One shared decision of a request: what the admission script (or the failure policy) decides. */
export type Step =
  | {
      readonly kind: 'rate';
      readonly key: string;
      readonly capacity: number;
      readonly perSecond: number;
      readonly ttlMs: number;
      readonly refusal: Refusal;
    }
  | {
      readonly kind: Exclude<SharedLimitKind, 'rate' | 'tokens'>;
      readonly key: string;
      readonly limit: number;
      readonly refusal: Refusal;
      readonly local: LocalCount;
    }
  | {
      readonly kind: 'tokens';
      readonly key: string;
      readonly capacity: number;
      readonly perSecond: number;
      readonly scope: TokenLimitRefusal['scope'];
      readonly subject: string;
      /** The refusal when Redis cannot answer and the policy fails closed: a second to wait. */
      readonly refusal: Refusal;
    }
  /** Nothing could refuse it (no account, no cap): counted here, never sent to Redis. */
  | { readonly kind: 'local'; readonly local: LocalCount };

/** The grants of the steps taken, in order, and the refusal that stopped them, if any. */
export interface Decision {
  readonly grants: readonly Grant[];
  readonly refusal: Refusal | undefined;
}

/** What the shared limiters ask of the store: their steps decided in one call, in order. */
export interface SharedDecisions {
  /** With `levels`, the level of each bucket and budget step is reported to it when Redis answers. */
  decide(steps: readonly Step[], levels?: LimitLevels): MaybePromise<Decision>;
  /** Charges a token budget after a response (fire and forget). */
  chargeTokens(key: string, capacity: number, perSecond: number, tokens: number): void;
}

/**
 * A limiter whose decision lives in Redis. `step()` describes the decision without taking it, so the
 * admission stage can send every limiter of a request in one round trip (`decideTogether`);
 * `acquire()` takes it alone, for callers that ask one limiter at a time.
 */
export abstract class SharedLimiter {
  readonly decisions: SharedDecisions;

  constructor(decisions: SharedDecisions) {
    this.decisions = decisions;
  }

  abstract step(account: string | undefined): Step;

  protected decideAlone<R extends Refusal>(step: Step): MaybePromise<Grant | R> {
    const decision = this.decisions.decide([step]);
    // The refusal of a single step is that step's own, which the subclass built with type R.
    const single = (d: Decision): Grant | R =>
      d.refusal === undefined ? (d.grants[0] ?? NO_OP_GRANT) : (d.refusal as R);
    return isPromise(decision) ? decision.then(single) : single(decision);
  }
}

/**
 * Token bucket in Redis (spec 8): capacity `burst_size`, refill `requests_per_second`, by server time.
 * The key lives until the bucket would be full again (plus a second of margin), since a missing key
 * reads as full.
 */
export class SharedTokenBucket extends SharedLimiter implements RateLimiter {
  readonly params: RateLimitParams;
  readonly #step: Step;

  constructor(decisions: SharedDecisions, key: string, params: RateLimitParams, subject: LimitSubject) {
    super(decisions);
    this.params = { requests_per_second: params.requests_per_second, burst_size: params.burst_size };
    this.#step = Object.freeze({
      kind: 'rate',
      key,
      capacity: params.burst_size,
      perSecond: params.requests_per_second,
      ttlMs: Math.ceil((params.burst_size / params.requests_per_second) * 1000) + 1000,
      refusal: rateLimitRefusal(subject),
    });
  }

  step(): Step {
    return this.#step;
  }

  acquire(): MaybePromise<Grant | RateLimitRefusal> {
    return this.decideAlone<RateLimitRefusal>(this.#step);
  }
}

/**
 * A token budget in Redis: admission reads whether the balance (refilled by server time) is above
 * zero and takes nothing; the response's tokens are charged when it ends, from any replica.
 */
export class SharedTokenBudget extends SharedLimiter implements TokenLimiter {
  readonly params: TokenLimitParams;
  readonly #step: Step & { kind: 'tokens' };

  constructor(
    decisions: SharedDecisions,
    key: string,
    params: TokenLimitParams,
    scope: TokenLimitRefusal['scope'],
    subject: string,
  ) {
    super(decisions);
    this.params = { tokens_per_minute: params.tokens_per_minute, burst_tokens: params.burst_tokens };
    this.#step = Object.freeze({
      kind: 'tokens',
      key,
      capacity: params.burst_tokens ?? params.tokens_per_minute,
      perSecond: params.tokens_per_minute / 60,
      scope,
      subject,
      refusal: tokenLimitRefusal(scope, subject, 1),
    });
  }

  step(): Step {
    return this.#step;
  }

  acquire(): MaybePromise<Grant | TokenLimitRefusal> {
    return this.decideAlone<TokenLimitRefusal>(this.#step);
  }

  charge(tokens: number): void {
    if (!(tokens > 0)) return;
    const step = this.#step;
    this.decisions.chargeTokens(step.key, step.capacity, step.perSecond, tokens);
  }
}

/** Concurrency permits in Redis: a leased slot per request, held until it completes. */
export class SharedConcurrency extends SharedLimiter implements ConcurrencyLimiter {
  readonly params: ConcurrencyParams;
  readonly #step: Step;
  readonly #local: LocalCount;

  constructor(
    decisions: SharedDecisions,
    key: string,
    params: ConcurrencyParams,
    subject: LimitSubject,
    local: LocalCount,
  ) {
    super(decisions);
    this.params = { max_concurrent_requests: params.max_concurrent_requests };
    this.#local = local;
    this.#step = Object.freeze({
      kind: 'concurrency',
      key,
      limit: params.max_concurrent_requests,
      refusal: concurrencyRefusal(subject, params.max_concurrent_requests),
      local,
    });
  }

  step(): Step {
    return this.#step;
  }

  acquire(): MaybePromise<Grant | ConcurrencyRefusal> {
    return this.decideAlone<ConcurrencyRefusal>(this.#step);
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
export class SharedAccountInflight extends SharedLimiter implements InflightLimiter {
  readonly alias: string;
  readonly params: InflightParams;
  readonly #key: string;
  readonly #default: number;
  readonly #overrides: ReadonlyMap<string, number>;
  readonly #local: LocalCount;
  readonly #localStep: Step;

  constructor(
    decisions: SharedDecisions,
    key: string,
    alias: string,
    params: InflightParams,
    local: LocalCount,
  ) {
    super(decisions);
    this.alias = alias;
    this.params = params;
    this.#key = key;
    this.#default = params.inflight_limit ?? Infinity;
    this.#overrides = new Map(Object.entries(params.account_inflight_limits ?? {}));
    this.#local = local;
    this.#localStep = Object.freeze({ kind: 'local', local });
  }

  step(account: string | undefined): Step {
    if (account === undefined) return this.#localStep;
    const limit = this.#overrides.get(account) ?? this.#default;
    if (limit === Infinity) return this.#localStep;
    return {
      kind: 'inflight',
      key: accountKey(this.#key, account),
      limit,
      refusal: inflightRefusal(this.alias, account, limit),
      local: this.#local,
    };
  }

  acquire(account: string | undefined): MaybePromise<Grant | InflightRefusal> {
    return this.decideAlone<InflightRefusal>(this.step(account));
  }

  /** Realtime requests this process has in flight on the alias, with or without an account. */
  inFlight(): number {
    return this.#local.n;
  }
}

/** The alias-wide batch in-flight cap in Redis (one count per alias, not per tenant). */
export class SharedBatchInflight extends SharedLimiter implements BatchLimiter {
  readonly alias: string;
  readonly #step: Step;
  readonly #local: LocalCount;

  constructor(
    decisions: SharedDecisions,
    key: string,
    alias: string,
    params: BatchParams,
    local: LocalCount,
  ) {
    super(decisions);
    this.alias = alias;
    const limit = params.batch_inflight_limit ?? Infinity;
    this.#local = local;
    const enforced = params.enforce ? limit : Infinity;
    this.#step = Object.freeze(
      enforced === Infinity
        ? { kind: 'local', local }
        : { kind: 'batch', key, limit: enforced, refusal: batchRefusal(alias, limit), local },
    );
  }

  step(): Step {
    return this.#step;
  }

  acquire(): MaybePromise<Grant | BatchRefusal> {
    return this.decideAlone<BatchRefusal>(this.#step);
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

/** One limiter call of a request, not yet made: the limiter and its argument (the account). */
export interface Ask {
  readonly limiter: object;
  readonly account: string | undefined;
}

/**
 * The admission of one request in a single round trip, when every limiter it asks is shared through
 * the same store; undefined otherwise (the caller then asks them one by one). The answer is what
 * asking them in order would give: the grants of the steps before the first refusal, and that
 * refusal. With `levels`, the levels of its buckets and budgets are reported to it.
 */
export function decideTogether(
  asks: readonly Ask[],
  levels?: LimitLevels,
): MaybePromise<Decision> | undefined {
  const first = asks[0]?.limiter;
  if (!(first instanceof SharedLimiter)) return undefined;
  const steps: Step[] = [];
  for (const { limiter, account } of asks) {
    if (!(limiter instanceof SharedLimiter) || limiter.decisions !== first.decisions) return undefined;
    steps.push(limiter.step(account));
  }
  return first.decisions.decide(steps, levels);
}
