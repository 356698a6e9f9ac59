import type { BatchParams } from '../batch.js';
import type { ConcurrencyParams } from '../concurrency.js';
import type { InflightParams } from '../inflight.js';
import type { RateLimitParams } from '../token-bucket.js';
import type { TokenLimitParams } from '../token-budget.js';
import type { LimitLevels } from '../limit-headers.js';
import { tokenLimitRefusal } from '../refusals.js';
import {
  NO_OP_GRANT,
  isPromise,
  type BatchLimiter,
  type ConcurrencyLimiter,
  type Grant,
  type InflightLimiter,
  type LimitSubject,
  type MaybePromise,
  type RateLimiter,
  type TokenLimiter,
  type TokenLimitRefusal,
} from '../types.js';
import type { Logger } from '../../telemetry/logger.js';
import type { SharedStateMetrics } from '../../telemetry/metrics.js';
import { SharedStateClient, type Unavailable } from './client.js';
import { DegradedDecisions } from './degraded.js';
import { HeldLeases, LocalGrant, SharedLease, type LeaseReturn, type LocalCount } from './leases.js';
import {
  SharedAccountInflight,
  SharedBatchInflight,
  SharedConcurrency,
  SharedTokenBucket,
  SharedTokenBudget,
  type Decision,
  type SharedDecisions,
  type Step,
} from './limiters.js';
import { formatFailurePolicies, type FailurePolicies } from './policy.js';
import { SharedSpendBook, SharedSpendBudget } from './spend.js';
import type { BudgetScope } from '../types.js';
import type { BudgetParams, SpendBudget } from '../spend/types.js';
import { windowIdentity } from '../spend/window.js';

/**
 * How runtime/compile.ts obtains limiters: the in-memory registry builder has exactly this shape, and the
 * shared store implements it too, so the runtime table is compiled the same way either way and the
 * pipeline only ever sees the seam interfaces of `limits/types.ts`.
 */
export interface LimiterFactory {
  tokenBucket(identity: string, params: RateLimitParams, subject: LimitSubject): RateLimiter;
  tokenBudget(
    identity: string,
    params: TokenLimitParams,
    scope: TokenLimitRefusal['scope'],
    subject: string,
  ): TokenLimiter;
  concurrency(identity: string, params: ConcurrencyParams, subject: LimitSubject): ConcurrencyLimiter;
  accountInflight(identity: string, alias: string, params: InflightParams): InflightLimiter;
  batch(identity: string, alias: string, params: BatchParams): BatchLimiter;
  /**
   * A spend budget. Its state follows the identity and the window: a reload that changes only the
   * amount keeps what was spent, one that changes the window starts a new one.
   */
  spendBudget(identity: string, scope: BudgetScope, name: string, params: BudgetParams): SpendBudget;
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
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #policy: DegradedDecisions;
  readonly #metrics: SharedStateMetrics;
  readonly #logger: Logger;
  readonly #leases = new HeldLeases();
  readonly #local = new Map<string, LocalCount>();
  readonly #spend: SharedSpendBook;
  /** Leases released in this tick, sent together (a request releases all its slots at once). */
  #releasing: { keys: string[]; leaseIds: string[] } | undefined;
  #renewTimer: NodeJS.Timeout | undefined;

  constructor(options: SharedLimitStoreOptions) {
    this.#prefix = `${options.prefix}${LAYOUT}:`;
    this.#leaseMs = options.leaseMs;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#metrics.up.set(0);
    this.#policy = new DegradedDecisions(options.policies, this.#metrics, options.logger);
    this.client = new SharedStateClient({
      url: options.url,
      timeoutMs: options.timeoutMs,
      logger: options.logger,
      onHealth: (up) => this.#metrics.up.set(up ? 1 : 0),
    });
    this.#spend = new SharedSpendBook(this.client, this.#policy, options.logger, options.leaseMs);
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
    this.#flushReleases();
    this.#spend.close();
    clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
    await this.client.close();
  }

  tokenBucket(identity: string, params: RateLimitParams, subject: LimitSubject): RateLimiter {
    return new SharedTokenBucket(this, this.keyOf(identity), params, subject);
  }

  tokenBudget(
    identity: string,
    params: TokenLimitParams,
    scope: TokenLimitRefusal['scope'],
    subject: string,
  ): TokenLimiter {
    return new SharedTokenBudget(this, this.keyOf(identity), params, scope, subject);
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

  spendBudget(identity: string, scope: BudgetScope, name: string, params: BudgetParams): SpendBudget {
    return new SharedSpendBudget(
      this.#spend,
      `${this.keyOf(identity)}:${windowIdentity(params.window)}`,
      scope,
      name,
      params,
    );
  }

  /** Settlements of spend budgets waiting for Redis to take them. */
  get pendingSettlements(): number {
    return this.#spend.pendingSettlements;
  }

  /**
   * Decides `steps` in order in one round trip (see `ADMIT`): the grants of the steps before the first
   * refusal, and that refusal. Without an answer from Redis, each step in order is decided by its
   * kind's failure policy, counted and logged; a fail_closed step refuses and stops there. With
   * `levels`, the level Redis reported for each bucket and budget step is reported to it (nothing
   * when Redis gave no answer: the levels are unknown then).
   */
  decide(steps: readonly Step[], levels?: LimitLevels): MaybePromise<Decision> {
    const keys: string[] = [];
    const args: (string | number)[] = [this.#leaseMs];
    const leaseIds: string[] = [];
    for (const step of steps) {
      if (step.kind === 'local') continue;
      keys.push(step.key);
      if (step.kind === 'rate') {
        args.push('t', step.capacity, step.perSecond, step.ttlMs);
        leaseIds.push('');
      } else if (step.kind === 'tokens') {
        args.push('k', step.capacity, step.perSecond, '');
        leaseIds.push('');
      } else {
        const leaseId = this.#leases.nextId();
        args.push('s', step.limit, leaseId, '');
        leaseIds.push(leaseId);
      }
    }
    if (keys.length === 0) return this.#granted(steps, leaseIds, 0, 0);
    this.#flushReleases();
    const answer = this.client.admit(keys, args);
    if (!isPromise(answer)) return this.#byPolicy(steps, answer);
    return answer.then((verdict) => {
      if (verdict.ok) {
        if (levels !== undefined) reportLevels(steps, verdict.reply, levels);
        return this.#granted(steps, leaseIds, verdict.granted, verdict.waitSeconds);
      }
      // A timed-out call may still run on the server later; removing its leases right behind it
      // (same connection, so after it) keeps a slow answer from holding slots until they expire.
      if (verdict.reason === 'timeout') {
        for (let i = 0; i < keys.length; i++) if (leaseIds[i] !== '') this.#release(keys[i]!, leaseIds[i]!);
      }
      return this.#byPolicy(steps, verdict);
    });
  }

  chargeTokens(key: string, capacity: number, perSecond: number, tokens: number): void {
    void this.client.chargeTokens([key], [capacity, perSecond, tokens]).then((charged) => {
      if (!charged) this.#logger.debug({ tokens }, 'shared state token charge not recorded');
    });
  }

  returnLease(key: string, leaseId: string): void {
    this.#leases.delete(key, leaseId);
    this.#release(key, leaseId);
  }

  /**
   * Queues a removal and sends the queue once the current synchronous work is done, so the slots a
   * request releases together (concurrency, in-flight) cost one command, not one each.
   */
  #release(key: string, leaseId: string): void {
    let batch = this.#releasing;
    if (batch === undefined) {
      batch = this.#releasing = { keys: [], leaseIds: [] };
      queueMicrotask(() => this.#flushReleases());
    }
    batch.keys.push(key);
    batch.leaseIds.push(leaseId);
  }

  /** Sends the queued releases now (also before any admission, so Redis sees them in order). */
  #flushReleases(): void {
    const batch = this.#releasing;
    if (batch === undefined) return;
    this.#releasing = undefined;
    this.client.releaseSlots(batch.keys, batch.leaseIds);
  }

  /**
   * Redis granted the first `count` remote steps: their grants, and the refusal of the next one (a
   * token budget's says how long to wait, `waitSeconds`).
   */
  #granted(
    steps: readonly Step[],
    leaseIds: readonly string[],
    count: number,
    waitSeconds: number,
  ): Decision {
    const grants: Grant[] = [];
    let remote = 0;
    for (const step of steps) {
      if (step.kind === 'local') {
        grants.push(new LocalGrant(step.local));
        continue;
      }
      if (remote >= count) {
        const refusal =
          step.kind === 'tokens' ? tokenLimitRefusal(step.scope, step.subject, waitSeconds) : step.refusal;
        return { grants, refusal };
      }
      const leaseId = leaseIds[remote++]!;
      if (step.kind === 'rate' || step.kind === 'tokens') {
        grants.push(NO_OP_GRANT);
      } else {
        this.#leases.add(step.key, leaseId);
        grants.push(new SharedLease(this, step.key, leaseId, step.local));
      }
    }
    return { grants, refusal: undefined };
  }

  /** No answer from Redis: fail_open grants (counted here only, nothing remote), fail_closed refuses. */
  #byPolicy(steps: readonly Step[], unavailable: Unavailable): Decision {
    const grants: Grant[] = [];
    for (const step of steps) {
      if (step.kind === 'local') {
        grants.push(new LocalGrant(step.local));
        continue;
      }
      if (this.#policy.decide(step.kind, unavailable.reason) === 'fail_closed') {
        return { grants, refusal: step.refusal };
      }
      grants.push(step.kind === 'rate' || step.kind === 'tokens' ? NO_OP_GRANT : new LocalGrant(step.local));
    }
    return { grants, refusal: undefined };
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

/** Reports the levels of an admission reply (entries 2 on, one per bucket and budget step, in order). */
function reportLevels(
  steps: readonly Step[],
  reply: readonly (number | string)[],
  levels: LimitLevels,
): void {
  let at = 2;
  for (const step of steps) {
    if (step.kind !== 'rate' && step.kind !== 'tokens') continue;
    const level = Number(reply[at++]);
    if (!Number.isFinite(level)) continue;
    if (step.kind === 'rate') levels.requests(step.capacity, level, step.perSecond);
    else levels.tokens(step.capacity, level, step.perSecond);
  }
}
