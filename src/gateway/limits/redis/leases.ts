import { randomBytes } from 'node:crypto';
import type { Grant } from '../types.js';

/** This process's count of what it holds on one limiter, for `inFlight()`; Redis holds the shared one. */
export interface LocalCount {
  n: number;
}

/** Where a lease goes back to. */
export interface LeaseReturn {
  returnLease(key: string, leaseId: string): void;
}

/**
 * A slot held in Redis. `release()` is idempotent (the pipeline releases from every exit path): the
 * first call stops renewing it and removes it from the shared count, later calls do nothing.
 */
export class SharedLease implements Grant {
  readonly ok = true as const;
  #owner: LeaseReturn | null;
  readonly #key: string;
  readonly #leaseId: string;
  readonly #local: LocalCount;

  constructor(owner: LeaseReturn, key: string, leaseId: string, local: LocalCount) {
    this.#owner = owner;
    this.#key = key;
    this.#leaseId = leaseId;
    this.#local = local;
    local.n++;
  }

  release(): void {
    const owner = this.#owner;
    if (owner === null) return;
    this.#owner = null;
    this.#local.n--;
    owner.returnLease(this.#key, this.#leaseId);
  }
}

/**
 * A slot counted only in this process: granted by fail_open while Redis was unreachable, or on a
 * limiter with nothing to enforce (an account without a cap). Releasing touches nothing remote.
 */
export class LocalGrant implements Grant {
  readonly ok = true as const;
  #local: LocalCount | null;

  constructor(local: LocalCount) {
    this.#local = local;
    local.n++;
  }

  release(): void {
    if (this.#local === null) return;
    this.#local.n--;
    this.#local = null;
  }
}

/**
 * The leases this process holds, by slot key, for renewal. Lease ids are unique across replicas and
 * restarts (random process part, then a counter), so one replica can never remove another's lease.
 */
export class HeldLeases {
  readonly #byKey = new Map<string, Set<string>>();
  readonly #process = randomBytes(6).toString('base64url');
  #sequence = 0;

  nextId(): string {
    return `${this.#process}.${(this.#sequence++).toString(36)}`;
  }

  add(key: string, leaseId: string): void {
    let ids = this.#byKey.get(key);
    if (ids === undefined) this.#byKey.set(key, (ids = new Set()));
    ids.add(leaseId);
  }

  delete(key: string, leaseId: string): void {
    const ids = this.#byKey.get(key);
    if (ids === undefined) return;
    ids.delete(leaseId);
    if (ids.size === 0) this.#byKey.delete(key);
  }

  /** Snapshot per key (renewal is asynchronous; the live sets may change meanwhile). */
  snapshot(): [key: string, leaseIds: string[]][] {
    return [...this.#byKey].map(([key, ids]) => [key, [...ids]]);
  }

  get size(): number {
    let total = 0;
    for (const ids of this.#byKey.values()) total += ids.size;
    return total;
  }
}
