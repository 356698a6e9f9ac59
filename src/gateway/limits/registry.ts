import { AccountInflight, type InflightParams } from './inflight.js';
import { BatchInflight, type BatchParams } from './batch.js';
import { monotonicClock, type Clock } from './clock.js';
import { ConcurrencyPermits, type ConcurrencyParams } from './concurrency.js';
import { TokenBucket, type RateLimitParams } from './token-bucket.js';
import { TokenBudget, type TokenLimitParams } from './token-budget.js';
import type { BudgetScope, LimitSubject, TokenLimitRefusal } from './types.js';
import { MemorySpendBudget, SpendLedger } from './spend/memory.js';
import type { BudgetParams } from './spend/types.js';
import { windowIdentity } from './spend/window.js';

/**
 * Limiter state across configuration reloads.
 *
 * Identity is a string naming what a limiter limits (see `limiterId`). When a new runtime table is
 * compiled, each limiter is looked up by identity in the previous registry:
 *
 * - same identity, same kind, same parameters: the instance is reused, state and all (a reload that
 *   does not touch a limit does not reset it).
 * - same identity, different parameters: a fresh instance. A token bucket starts at the old level
 *   (clamped to the new capacity) instead of full, so a reload never hands out a free burst.
 *   A counting limiter (concurrency, in-flight, batch) starts at zero and links to the old instance
 *   as its predecessor: it counts the old instance's holders as in use until they drain, while those
 *   holders keep releasing into the old instance they acquired from. Counts are read through the
 *   link and never transferred, so no release can land on an instance that never counted it, and
 *   nothing underflows. A request keeps the table it started with; a link is dropped once the old
 *   instance drains (a request of the old table acquiring again after that, for instance on a
 *   failover attempt, is not seen by the new instance; bounded by the requests alive at the reload).
 * - identity gone from the new config: a counting limiter with holders is kept as draining, so its
 *   gauge still reads until it empties and it can become a predecessor if the identity returns.
 *   Idle ones and token buckets are dropped.
 *
 * Parameters are compared on the limit fields only, so callers may pass whole config objects.
 */

/** Identity strings. Names come from configuration, so they are bounded and never secrets. */
export const limiterId = {
  targetRate: (alias: string): string => `target:${alias}:rate`,
  targetConcurrency: (alias: string): string => `target:${alias}:concurrency`,
  providerRate: (pool: string, provider: string): string => `provider:${pool}:${provider}:rate`,
  providerConcurrency: (pool: string, provider: string): string => `provider:${pool}:${provider}:concurrency`,
  keyRate: (keyName: string): string => `key:${keyName}:rate`,
  keyConcurrency: (keyName: string): string => `key:${keyName}:concurrency`,
  account: (alias: string): string => `account:${alias}`,
  targetTokens: (alias: string): string => `target:${alias}:tokens`,
  keyTokens: (keyName: string): string => `key:${keyName}:tokens`,
  accountTokens: (account: string): string => `account-tokens:${account}`,
  batch: (alias: string): string => `batch:${alias}`,
  keyBudget: (keyName: string): string => `key:${keyName}:budget`,
  accountBudget: (account: string): string => `account-budget:${account}`,
  targetBudget: (alias: string): string => `target:${alias}:budget`,
} as const;

type Entry =
  | { readonly kind: 'rate'; readonly key: string; readonly instance: TokenBucket }
  | { readonly kind: 'tokens'; readonly key: string; readonly instance: TokenBudget }
  | { readonly kind: 'concurrency'; readonly key: string; readonly instance: ConcurrencyPermits }
  | { readonly kind: 'inflight'; readonly key: string; readonly instance: AccountInflight }
  | { readonly kind: 'batch'; readonly key: string; readonly instance: BatchInflight }
  | { readonly kind: 'budget'; readonly key: string; readonly instance: SpendLedger };

export class LimiterRegistry {
  readonly clock: Clock;
  readonly #active: ReadonlyMap<string, Entry>;
  readonly #draining: ReadonlyMap<string, Entry>;

  private constructor(
    clock: Clock,
    active: ReadonlyMap<string, Entry>,
    draining: ReadonlyMap<string, Entry>,
  ) {
    this.clock = clock;
    this.#active = active;
    this.#draining = draining;
  }

  static empty(clock: Clock = monotonicClock): LimiterRegistry {
    return new LimiterRegistry(clock, new Map(), new Map());
  }

  /** Starts the registry of the next runtime table; this one stays valid for requests using it. */
  rebuild(): LimiterRegistryBuilder {
    return new LimiterRegistryBuilder(this.clock, this.#active, this.#draining, (active, draining) => {
      return new LimiterRegistry(this.clock, active, draining);
    });
  }

  /** Identities of the limiters of this table. */
  identities(): string[] {
    return [...this.#active.keys()];
  }

  /** Identities kept only because requests still hold them. */
  drainingIdentities(): string[] {
    return [...this.#draining.keys()];
  }

  /**
   * Realtime requests in flight per alias, for the `gateway_model_inflight{model}` gauge. Includes
   * aliases removed by a reload while their requests drain.
   */
  modelInflight(): Map<string, number> {
    const out = new Map<string, number>();
    for (const entries of [this.#active, this.#draining]) {
      for (const entry of entries.values()) {
        if (entry.kind !== 'inflight') continue;
        const limiter = entry.instance;
        out.set(limiter.alias, (out.get(limiter.alias) ?? 0) + limiter.inFlight());
      }
    }
    return out;
  }

  /** Dispatched requests in flight per alias (including draining aliases). */
  batchInflight(): Map<string, number> {
    const out = new Map<string, number>();
    for (const entries of [this.#active, this.#draining]) {
      for (const entry of entries.values()) {
        if (entry.kind !== 'batch') continue;
        const limiter = entry.instance;
        out.set(limiter.alias, (out.get(limiter.alias) ?? 0) + limiter.inFlight());
      }
    }
    return out;
  }
}

type Finish = (active: Map<string, Entry>, draining: Map<string, Entry>) => LimiterRegistry;

/**
 * Collects the limiters of one new table. Asking twice for the same identity with the same
 * parameters returns the same instance (class pools of an alias share its in-flight limiter);
 * asking with different parameters is a programmer error.
 */
export class LimiterRegistryBuilder {
  readonly #clock: Clock;
  readonly #previous: ReadonlyMap<string, Entry>;
  readonly #previousDraining: ReadonlyMap<string, Entry>;
  readonly #next = new Map<string, Entry>();
  readonly #finish: Finish;
  #done = false;

  constructor(
    clock: Clock,
    previous: ReadonlyMap<string, Entry>,
    previousDraining: ReadonlyMap<string, Entry>,
    finish: Finish,
  ) {
    this.#clock = clock;
    this.#previous = previous;
    this.#previousDraining = previousDraining;
    this.#finish = finish;
  }

  tokenBucket(identity: string, params: RateLimitParams, subject: LimitSubject): TokenBucket {
    const picked: RateLimitParams = {
      requests_per_second: params.requests_per_second,
      burst_size: params.burst_size,
    };
    const key = paramKey([picked.requests_per_second, picked.burst_size, subject.scope, subject.subject]);
    const { reuse, predecessor } = this.#lookup(identity, 'rate', key);
    if (reuse?.kind === 'rate') return reuse.instance;
    const seed = predecessor?.kind === 'rate' ? predecessor.instance.available() : undefined;
    return this.#put(identity, {
      kind: 'rate',
      key,
      instance: new TokenBucket(picked, subject, this.#clock, seed),
    });
  }

  /** A token budget; a reload that changes its parameters carries the balance (debt included) over. */
  tokenBudget(
    identity: string,
    params: TokenLimitParams,
    scope: TokenLimitRefusal['scope'],
    subject: string,
  ): TokenBudget {
    const picked: TokenLimitParams = {
      tokens_per_minute: params.tokens_per_minute,
      burst_tokens: params.burst_tokens,
    };
    const key = paramKey([picked.tokens_per_minute, picked.burst_tokens ?? null, scope, subject]);
    const { reuse, predecessor } = this.#lookup(identity, 'tokens', key);
    if (reuse?.kind === 'tokens') return reuse.instance;
    const seed = predecessor?.kind === 'tokens' ? predecessor.instance.balance() : undefined;
    return this.#put(identity, {
      kind: 'tokens',
      key,
      instance: new TokenBudget(picked, scope, subject, this.#clock, seed),
    });
  }

  concurrency(identity: string, params: ConcurrencyParams, subject: LimitSubject): ConcurrencyPermits {
    const picked: ConcurrencyParams = { max_concurrent_requests: params.max_concurrent_requests };
    const key = paramKey([picked.max_concurrent_requests, subject.scope, subject.subject]);
    const { reuse, predecessor } = this.#lookup(identity, 'concurrency', key);
    if (reuse?.kind === 'concurrency') return reuse.instance;
    const previous = predecessor?.kind === 'concurrency' ? predecessor.instance : undefined;
    const instance = new ConcurrencyPermits(picked, subject, previous);
    return this.#put(identity, { kind: 'concurrency', key, instance });
  }

  accountInflight(identity: string, alias: string, params: InflightParams): AccountInflight {
    const overrides = params.account_inflight_limits;
    const picked: InflightParams = {
      inflight_limit: params.inflight_limit,
      account_inflight_limits: overrides === undefined ? undefined : { ...overrides },
    };
    const sortedOverrides =
      overrides === undefined
        ? null
        : Object.entries(overrides).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = paramKey([alias, picked.inflight_limit ?? null, sortedOverrides]);
    const { reuse, predecessor } = this.#lookup(identity, 'inflight', key);
    if (reuse?.kind === 'inflight') return reuse.instance;
    const previous = predecessor?.kind === 'inflight' ? predecessor.instance : undefined;
    const instance = new AccountInflight(alias, picked, previous);
    return this.#put(identity, { kind: 'inflight', key, instance });
  }

  batch(identity: string, alias: string, params: BatchParams): BatchInflight {
    const picked: BatchParams = {
      batch_inflight_limit: params.batch_inflight_limit,
      enforce: params.enforce,
    };
    const key = paramKey([alias, picked.batch_inflight_limit ?? null, picked.enforce]);
    const { reuse, predecessor } = this.#lookup(identity, 'batch', key);
    if (reuse?.kind === 'batch') return reuse.instance;
    const previous = predecessor?.kind === 'batch' ? predecessor.instance : undefined;
    const instance = new BatchInflight(alias, picked, previous);
    return this.#put(identity, { kind: 'batch', key, instance });
  }

  /**
   * A spend budget in memory. Its ledger (what was spent and reserved) is compared on the window
   * only: a reload that changes the amount (or the default completion ceiling) keeps the ledger, so
   * the new amount applies to what was spent, while the table still serving keeps its own amount;
   * one that changes the window starts a new ledger from zero.
   */
  spendBudget(identity: string, scope: BudgetScope, name: string, params: BudgetParams): MemorySpendBudget {
    const key = paramKey([windowIdentity(params.window), scope, name]);
    const { reuse } = this.#lookup(identity, 'budget', key);
    const ledger =
      reuse?.kind === 'budget'
        ? reuse.instance
        : this.#put(identity, { kind: 'budget', key, instance: new SpendLedger(params.window) });
    return new MemorySpendBudget(scope, name, params, ledger);
  }

  /** Seals the new registry. Previous instances not claimed and still held become draining. */
  finish(): LimiterRegistry {
    this.#assertOpen();
    this.#done = true;
    const draining = new Map<string, Entry>();
    for (const source of [this.#previous, this.#previousDraining]) {
      for (const [identity, entry] of source) {
        if (this.#next.has(identity) || draining.has(identity)) continue;
        if (isBusy(entry)) draining.set(identity, entry);
      }
    }
    return this.#finish(this.#next, draining);
  }

  /**
   * Finds what the previous registry holds for `identity`: the instance to reuse (same kind and
   * parameters; already recorded in the new table) or the instance to link as predecessor.
   */
  #lookup(identity: string, kind: Entry['kind'], key: string): Found {
    this.#assertOpen();
    const claimed = this.#next.get(identity);
    if (claimed !== undefined) {
      if (claimed.kind === kind && claimed.key === key) return { reuse: claimed, predecessor: undefined };
      throw new Error(`limiter ${identity} requested twice with different parameters`);
    }
    const old = this.#previous.get(identity) ?? this.#previousDraining.get(identity);
    if (old === undefined || old.kind !== kind) return NOTHING_FOUND;
    if (old.key === key) {
      this.#next.set(identity, old);
      return { reuse: old, predecessor: undefined };
    }
    return { reuse: undefined, predecessor: old };
  }

  #put<E extends Entry>(identity: string, entry: E): E['instance'] {
    this.#next.set(identity, entry);
    return entry.instance;
  }

  #assertOpen(): void {
    if (this.#done) throw new Error('LimiterRegistryBuilder used after finish()');
  }
}

interface Found {
  readonly reuse: Entry | undefined;
  readonly predecessor: Entry | undefined;
}

const NOTHING_FOUND: Found = { reuse: undefined, predecessor: undefined };

function isBusy(entry: Entry): boolean {
  switch (entry.kind) {
    case 'rate':
    case 'tokens':
    case 'budget':
      return false;
    case 'concurrency':
      return entry.instance.inUse() > 0;
    case 'inflight':
    case 'batch':
      return entry.instance.inFlight() > 0;
  }
}

/** A canonical string of the limit fields; JSON of numbers, booleans, strings and sorted pairs. */
function paramKey(values: readonly unknown[]): string {
  return JSON.stringify(values);
}
