import type { Grant } from './types.js';

/** What a lease gives its slot back to. */
export interface LeaseOwner {
  /** Called exactly once per lease. */
  releaseSlot(account: string | undefined): void;
}

/**
 * The grant handed out by the counting limiters. It remembers the instance it was taken from, so a
 * request whose limiter was replaced by a reload still releases into the instance it acquired from
 * (no counts ever move between instances, so none can underflow). One small object per acquisition
 * is the price of idempotency: a shared or pooled handle could not tell a second release of the
 * same request from the first release of another.
 */
export class Lease implements Grant {
  readonly ok = true as const;
  #owner: LeaseOwner | null;
  readonly #account: string | undefined;

  constructor(owner: LeaseOwner, account: string | undefined) {
    this.#owner = owner;
    this.#account = account;
  }

  release(): void {
    const owner = this.#owner;
    if (owner === null) return;
    this.#owner = null;
    owner.releaseSlot(this.#account);
  }

  get released(): boolean {
    return this.#owner === null;
  }
}
