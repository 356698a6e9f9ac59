import type { Logger } from '../../telemetry/logger.js';
import type { SharedStateMetrics } from '../../telemetry/metrics.js';
import type { UnavailableReason } from './client.js';
import {
  SHARED_LIMIT_KINDS,
  type FailurePolicies,
  type FailurePolicy,
  type SharedLimitKind,
} from './policy.js';

/** At most one warn line per limit kind per interval; the metric counts every decision. */
const LOG_INTERVAL_MS = 1000;

interface KindLog {
  lastAt: number;
  /** Degraded decisions since the last line (that line included them). */
  pending: number;
}

/**
 * Applies the failure policy and makes every degraded decision visible: the counter
 * `<prefix>_shared_state_degraded_total{kind,policy}` for each one, and a warn line per kind at most
 * once a second carrying how many decisions it stands for, so an outage under load cannot flood the
 * log while no decision goes uncounted (the peers' failure: silently deciding per pod).
 */
export class DegradedDecisions {
  readonly #policies: FailurePolicies;
  readonly #metrics: SharedStateMetrics;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #logs = new Map<SharedLimitKind, KindLog>(
    SHARED_LIMIT_KINDS.map((kind) => [kind, { lastAt: -Infinity, pending: 0 }]),
  );

  constructor(
    policies: FailurePolicies,
    metrics: SharedStateMetrics,
    logger: Logger,
    now: () => number = () => performance.now(),
  ) {
    this.#policies = policies;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#now = now;
  }

  /** Records one degraded decision and returns the policy that decides it. */
  decide(kind: SharedLimitKind, reason: UnavailableReason): FailurePolicy {
    const policy = this.#policies[kind];
    this.#metrics.degraded.inc({ kind, policy });
    const log = this.#logs.get(kind)!;
    log.pending++;
    const now = this.#now();
    if (now - log.lastAt >= LOG_INTERVAL_MS) {
      this.#logger.warn(
        { kind, policy, reason, decisions: log.pending },
        policy === 'fail_open'
          ? 'shared limit unavailable: granted by failure policy'
          : 'shared limit unavailable: refused by failure policy',
      );
      log.lastAt = now;
      log.pending = 0;
    }
    return policy;
  }
}
