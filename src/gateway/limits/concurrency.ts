import { concurrencyRefusal } from './refusals.js';
import { Lease, type LeaseOwner } from './lease.js';
import type { ConcurrencyLimiter, ConcurrencyRefusal, Grant, LimitSubject } from './types.js';

/** Config shape of `concurrency_limit` (spec 2.3). */
export interface ConcurrencyParams {
  readonly max_concurrent_requests: number;
}

/**
 * Up to `max_concurrent_requests` permits; a permit is held until the request completes.
 *
 * `predecessor` is the instance this one replaced at a reload with different parameters. Requests
 * that started under the old table hold (and release) permits of the predecessor; this instance
 * counts them as in use until they drain, so lowering a limit from 10 to 5 with 8 requests running
 * refuses new ones until fewer than 5 remain, and raising it never lets old plus new exceed the new
 * limit. Counts are read through the link, never copied, so no release can underflow.
 */
export class ConcurrencyPermits implements ConcurrencyLimiter, LeaseOwner {
  readonly params: ConcurrencyParams;
  readonly #max: number;
  readonly #refusal: ConcurrencyRefusal;
  #own = 0;
  #predecessor: ConcurrencyPermits | null;

  constructor(params: ConcurrencyParams, subject: LimitSubject, predecessor?: ConcurrencyPermits) {
    this.params = params;
    this.#max = params.max_concurrent_requests;
    this.#predecessor = predecessor ?? null;
    this.#refusal = concurrencyRefusal(subject, params.max_concurrent_requests);
  }

  acquire(): Grant | ConcurrencyRefusal {
    if (this.inUse() >= this.#max) return this.#refusal;
    this.#own++;
    return new Lease(this, undefined);
  }

  /** Permits held now, including those still held on predecessors. */
  inUse(): number {
    const predecessor = this.#predecessor;
    if (predecessor === null) return this.#own;
    const inherited = predecessor.inUse();
    // Once the old table has drained, drop the link so chains of reloads do not accumulate.
    if (inherited === 0) this.#predecessor = null;
    return this.#own + inherited;
  }

  releaseSlot(): void {
    this.#own--;
  }
}
