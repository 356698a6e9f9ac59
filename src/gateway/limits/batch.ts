import { batchRefusal } from './refusals.js';
import { Lease, type LeaseOwner } from './lease.js';
import type { BatchLimiter, BatchRefusal, Grant } from './types.js';

export interface BatchParams {
  /** Alias-wide cap on dispatched requests in flight; absent means uncapped. */
  readonly batch_inflight_limit?: number | undefined;
  /**
   * Whether the cap is enforced. The standalone binary loads the cap but enforces it only with
   * `--enforce-batch-inflight` or when an embedder plugs in a limiter; the caller decides.
   */
  readonly enforce: boolean;
}

/**
 * How an embedding program plugs in its own batch limiter (for example one shared across replicas).
 * Called once per alias and table; `limit` is the alias's `batch_inflight_limit` (undefined when
 * uncapped). The returned limiter enforces whatever policy the embedder wants.
 */
export type BatchLimiterFactory = (alias: string, limit: number | undefined) => BatchLimiter;

/**
 * Dispatched (batch) requests in flight on one alias: one count per alias, not per tenant, separate
 * from the account count (spec 8). Counted whether or not the cap is enforced, so the number is
 * available to metrics either way. Held for the life of the response body.
 *
 * `predecessor`: see ConcurrencyPermits; the same read-through rule applies.
 */
export class BatchInflight implements BatchLimiter, LeaseOwner {
  readonly alias: string;
  readonly params: BatchParams;
  readonly #cap: number;
  readonly #refusal: BatchRefusal;
  #own = 0;
  #predecessor: BatchInflight | null;

  constructor(alias: string, params: BatchParams, predecessor?: BatchInflight) {
    this.alias = alias;
    this.params = params;
    const limit = params.batch_inflight_limit ?? Infinity;
    this.#cap = params.enforce ? limit : Infinity;
    this.#predecessor = predecessor ?? null;
    this.#refusal = batchRefusal(alias, limit);
  }

  acquire(): Grant | BatchRefusal {
    if (this.inFlight() >= this.#cap) return this.#refusal;
    this.#own++;
    return new Lease(this, undefined);
  }

  inFlight(): number {
    const predecessor = this.#predecessor;
    if (predecessor === null) return this.#own;
    const inherited = predecessor.inFlight();
    if (inherited === 0) this.#predecessor = null;
    return this.#own + inherited;
  }

  releaseSlot(): void {
    this.#own--;
  }
}
