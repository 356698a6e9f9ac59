import type { BatchParams } from '../batch.js';
import type { ConcurrencyParams } from '../concurrency.js';
import type { InflightParams } from '../inflight.js';
import type { LimitSubject, RateLimitParams } from '../token-bucket.js';
import {
  NO_OP_GRANT,
  isPromise,
  type BatchLimiter,
  type ConcurrencyLimiter,
  type Grant,
  type InflightLimiter,
  type MaybePromise,
  type RateLimiter,
  type Refusal,
} from '../types.js';
import type { Logger } from '../../telemetry/logger.js';
import type { SharedStateMetrics } from '../../telemetry/metrics.js';
import { SharedStateClient, type Verdict, type Unavailable } from './client.js';
import { DegradedDecisions } from './degraded.js';
import { HeldLeases, LocalGrant, SharedLease, type LeaseReturn, type LocalCount } from './leases.js';
import {
  SharedAccountInflight,
  SharedBatchInflight,
  SharedConcurrency,
  SharedTokenBucket,
  type SharedDecisions,
} from './limiters.js';
import { formatFailurePolicies, type FailurePolicies, type SharedLimitKind } from './policy.js';

/**
 * How compile.ts obtains limiters: the in-memory registry builder has exactly this shape, and the
 * shared store implements it too, so the runtime table is compiled the same way either way and the
 * pipeline only ever sees the seam interfaces of `limits/types.ts`.
 */
export interface LimiterFactory {
  tokenBucket(identity: string, params: RateLimitParams, subject: LimitSubject): RateLimiter;
  concurrency(identity: string, params: ConcurrencyParams, subject: LimitSubject): ConcurrencyLimiter;
  accountInflight(identity: string, alias: string, params: InflightParams): InflightLimiter;
  batch(identity: string, alias: string, params: BatchParams): BatchLimiter;
}

export interface SharedLimitStoreOptions {
  /** `redis://` or `rediss://` URL (`--shared-state`). */
  readonly url: string;
  /** Key prefix; separates deployments that share one Redis (`--shared-state-prefix`). */
  readonly prefix: string;
  readonly policies: FailurePolicies;
  /** Lease of a held slot: how long a dead replica's slots stay counted. Renewed every third of it. */
  readonly leaseMs: number;
  /** Per-call budget before the failure policy decides (`--shared-state-timeout-ms`). */
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly metrics: SharedStateMetrics;
}

/**
 * Version of the data layout in Redis (script semantics, key shapes). Part of every key, so a future
 * layout never reads the old one during a rolling update.
 */
const LAYOUT = 'v1';

/**
 * Limits shared by every replica pointed at the same Redis (and prefix). Keys are
 * `<prefix>v1:<limiter identity>` with the identities of the in-memory registry (`limiterId`), plus
 * `@<account>` for account in-flight slots. Parameters travel with each call instead of being part of
 * the key: a reload that changes a limit keeps the bucket level and the slots already held, which is
 * the in-memory reload rule, and replicas that have not reloaded yet share the same count meanwhile.
 *
 * The limiters themselves hold no state but this process's local counts (kept per identity across
 * reloads), so a reload simply builds new ones.
 */
export class SharedLimitStore implements LimiterFactory, SharedDecisions, LeaseReturn {
  readonly client: SharedStateClient;
  readonly policies: FailurePolicies;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #degraded: DegradedDecisions;
  readonly #metrics: SharedStateMetrics;
  readonly #logger: Logger;
  readonly #leases = new HeldLeases();
  readonly #local = new Map<string, LocalCount>();
  #renewTimer: NodeJS.Timeout | undefined;

  constructor(options: SharedLimitStoreOptions) {
    this.#prefix = `${options.prefix}${LAYOUT}:`;
    this.#leaseMs = options.leaseMs;
    this.#logger = options.logger;
    this.policies = options.policies;
    this.#metrics = options.metrics;
    this.#metrics.up.set(0);
    this.#degraded = new DegradedDecisions(options.policies, this.#metrics, options.logger);
    this.client = new SharedStateClient({
      url: options.url,
      timeoutMs: options.timeoutMs,
      logger: options.logger,
      onHealth: (up) => this.#metrics.up.set(up ? 1 : 0),
    });
    // Renew three times per lease, so one lost renewal never lets a live request's slot lapse.
    this.#renewTimer = setInterval(() => this.#renew(), Math.max(1, Math.floor(options.leaseMs / 3)));
    this.#renewTimer.unref();
    options.logger.info(
      {
        sharedState: this.client.target,
        prefix: options.prefix,
        leaseMs: options.leaseMs,
        timeoutMs: options.timeoutMs,
        failurePolicy: formatFailurePolicies(options.policies),
      },
      'limits are shared through Redis',
    );
  }

  /** The Redis key of a limiter identity. */
  keyOf(identity: string): string {
    return this.#prefix + identity;
  }

  /** Leases this process holds right now (renewed in the background until released). */
  get heldLeases(): number {
    return this.#leases.size;
  }

  /** Stops renewing and closes the connection; unreleased leases then expire on their own. */
  async close(): Promise<void> {
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    await this.client.close();
  }

  tokenBucket(identity: string, params: RateLimitParams, subject: LimitSubject): RateLimiter {
    return new SharedTokenBucket(this, this.keyOf(identity), params, subject);
  }

  concurrency(identity: string, params: ConcurrencyParams, subject: LimitSubject): ConcurrencyLimiter {
    return new SharedConcurrency(this, this.keyOf(identity), params, subject, this.#localCount(identity));
  }

  accountInflight(identity: string, alias: string, params: InflightParams): InflightLimiter {
    return new SharedAccountInflight(this, this.keyOf(identity), alias, params, this.#localCount(identity));
  }

  batch(identity: string, alias: string, params: BatchParams): BatchLimiter {
    return new SharedBatchInflight(this, this.keyOf(identity), alias, params, this.#localCount(identity));
  }

  takeToken<R extends Refusal>(
    key: string,
    capacity: number,
    perSecond: number,
    ttlMs: number,
    refusal: R,
  ): MaybePromise<Grant | R> {
    const answer = this.client.takeToken(key, capacity, perSecond, ttlMs);
    const decide = (verdict: Verdict): Grant | R => {
      if (verdict.ok) return verdict.granted ? NO_OP_GRANT : refusal;
      return this.#degraded.decide('rate', verdict.reason) === 'fail_open' ? NO_OP_GRANT : refusal;
    };
    return isPromise(answer) ? answer.then(decide) : decide(answer);
  }

  acquireSlot<R extends Refusal>(
    kind: SharedLimitKind,
    key: string,
    limit: number,
    refusal: R,
    local: LocalCount,
  ): MaybePromise<Grant | R> {
    const leaseId = this.#leases.nextId();
    const answer = this.client.acquireSlot(key, limit, leaseId, this.#leaseMs);
    const decide = (verdict: Verdict): Grant | R => {
      if (!verdict.ok) return this.#degradedSlot(kind, verdict, refusal, local);
      if (!verdict.granted) return refusal;
      this.#leases.add(key, leaseId);
      return new SharedLease(this, key, leaseId, local);
    };
    return isPromise(answer) ? answer.then(decide) : decide(answer);
  }

  returnLease(key: string, leaseId: string): void {
    this.#leases.delete(key, leaseId);
    this.client.releaseSlot(key, leaseId);
  }

  /** fail_open grants a slot counted only here: nothing remote to release or renew. */
  #degradedSlot<R extends Refusal>(
    kind: SharedLimitKind,
    unavailable: Unavailable,
    refusal: R,
    local: LocalCount,
  ): Grant | R {
    const policy = this.#degraded.decide(kind, unavailable.reason);
    return policy === 'fail_open' ? new LocalGrant(local) : refusal;
  }

  #localCount(identity: string): LocalCount {
    let count = this.#local.get(identity);
    if (count === undefined) this.#local.set(identity, (count = { n: 0 }));
    return count;
  }

  #renew(): void {
    if (!this.client.up) return;
    for (const [key, leaseIds] of this.#leases.snapshot()) {
      void this.client.renewSlots(key, this.#leaseMs, leaseIds).then((renewed) => {
        if (!renewed) this.#logger.debug({ leases: leaseIds.length }, 'shared state lease renewal failed');
      });
    }
  }
}
