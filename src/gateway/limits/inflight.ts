import { inflightRefusal } from './refusals.js';
import { Lease, type LeaseOwner } from './lease.js';
import type { Grant, InflightLimiter, InflightRefusal } from './types.js';

/** The alias-level fields of spec 2.2 that configure account in-flight limits. */
export interface InflightParams {
  /** Default cap per account; absent means accounts without an override are unlimited. */
  readonly inflight_limit?: number | undefined;
  /** Per-account overrides of `inflight_limit`, keyed by the `account` label. */
  readonly account_inflight_limits?: Readonly<Record<string, number>> | undefined;
}

/**
 * Realtime in-flight requests on one alias, counted per account label (spec 8).
 *
 * Two counts live here: per account (what the limit applies to) and the alias total. The total counts
 * every realtime request on the alias, including keys without an account label and open targets, so
 * the `gateway_model_inflight{model}` gauge shows real load and an autoscaler can wait for it to
 * drain. Requests without an account are counted but never refused. Dispatched traffic is not
 * counted here (the caller sends it to the batch limiter instead).
 *
 * The slot is held across failover attempts and released when the body finishes or the client
 * goes away; which alias it counts against is the caller's decision (the alias the request named).
 *
 * `predecessor`: see ConcurrencyPermits; the same read-through rule applies per account and to the
 * total.
 */
export class AccountInflight implements InflightLimiter, LeaseOwner {
  readonly alias: string;
  readonly params: InflightParams;
  readonly #default: number;
  readonly #overrides: ReadonlyMap<string, number>;
  readonly #perAccount = new Map<string, number>();
  #total = 0;
  #predecessor: AccountInflight | null;

  constructor(alias: string, params: InflightParams, predecessor?: AccountInflight) {
    this.alias = alias;
    this.params = params;
    this.#default = params.inflight_limit ?? Infinity;
    this.#overrides = new Map(Object.entries(params.account_inflight_limits ?? {}));
    this.#predecessor = predecessor ?? null;
  }

  /** The cap that applies to `account` (Infinity when none is configured). */
  limitFor(account: string): number {
    return this.#overrides.get(account) ?? this.#default;
  }

  acquire(account: string | undefined): Grant | InflightRefusal {
    if (account !== undefined) {
      const limit = this.limitFor(account);
      if (this.countFor(account) >= limit) return inflightRefusal(this.alias, account, limit);
      this.#perAccount.set(account, (this.#perAccount.get(account) ?? 0) + 1);
    }
    this.#total++;
    return new Lease(this, account);
  }

  /** In-flight requests of `account` on this alias, including those held on predecessors. */
  countFor(account: string): number {
    const own = this.#perAccount.get(account) ?? 0;
    const predecessor = this.#livePredecessor();
    return predecessor === null ? own : own + predecessor.countFor(account);
  }

  inFlight(): number {
    const predecessor = this.#livePredecessor();
    return predecessor === null ? this.#total : this.#total + predecessor.inFlight();
  }

  releaseSlot(account: string | undefined): void {
    this.#total--;
    if (account === undefined) return;
    const count = this.#perAccount.get(account) ?? 0;
    // Delete at zero so the map only holds accounts with requests in flight.
    if (count <= 1) this.#perAccount.delete(account);
    else this.#perAccount.set(account, count - 1);
  }

  #livePredecessor(): AccountInflight | null {
    const predecessor = this.#predecessor;
    if (predecessor !== null && predecessor.inFlight() === 0) this.#predecessor = null;
    return this.#predecessor;
  }
}
