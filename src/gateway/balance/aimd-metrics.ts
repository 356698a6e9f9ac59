import { Counter, Gauge, Histogram, type Registry } from '../telemetry/prom-client.js';

/**
 * The share-controller metrics of spec 6, declared on a caller's registry so each gateway instance
 * (and each test) has its own. `model` is the alias without a request-class suffix, `pool` the
 * configured target key. Label sets are never removed: they are bounded by configuration, and a
 * dashboard must still see a parked or retired pool's last share.
 */

export type AttemptRole = 'preferred' | 'alternate';
export type AdjustDirection = 'decrease' | 'increase';

/**
 * First-token latency buckets (seconds). Dense around the default 2 s budget so the breach edge
 * is readable, with the 10 s edge the spec asks for and room for slow cold starts above it.
 */
export const FIRST_TOKEN_BUCKETS: readonly number[] = Object.freeze([
  0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30,
]);

/** What one controller writes: every series of one (model, pool). */
export interface AimdSeries {
  readonly model: string;
  readonly pool: string;
  setShare(share: number): void;
  adjusted(direction: AdjustDirection, count: number): void;
  setActive(active: boolean): void;
  setWindow(samples: number, breachRate: number): void;
  /** In-flight moves by +1/-1 so several controllers of one pool (across a reload) add up. */
  inFlight(delta: 1 | -1): void;
  unknown(): void;
  overloadBreach(status: number): void;
  firstToken(role: AttemptRole, seconds: number): void;
  firstTokenBreach(role: AttemptRole): void;
}

type PoolLabels = 'model' | 'pool';

export class AimdMetrics {
  readonly providerShare: Gauge<PoolLabels>;
  readonly shareAdjustments: Counter<PoolLabels | 'direction'>;
  readonly active: Gauge<PoolLabels>;
  readonly windowSamples: Gauge<PoolLabels>;
  readonly windowBreachRate: Gauge<PoolLabels>;
  readonly inFlight: Gauge<PoolLabels>;
  readonly unknown: Counter<PoolLabels>;
  readonly overloadBreaches: Counter<PoolLabels | 'status'>;
  readonly firstTokenSeconds: Histogram<PoolLabels | 'role'>;
  readonly firstTokenBreaches: Counter<PoolLabels | 'role'>;

  readonly #series = new Map<string, AimdSeries>();

  constructor(registry: Registry, prefix: string) {
    const registers = [registry];
    const name = (suffix: string): string => `${prefix}_${suffix}`;
    const pool: PoolLabels[] = ['model', 'pool'];

    this.providerShare = new Gauge({
      name: name('provider_share'),
      help: 'Fraction of eligible requests whose first attempt goes to the preferred provider of a priority pool.',
      labelNames: pool,
      registers,
    });
    this.shareAdjustments = new Counter({
      name: name('share_adjustments_total'),
      help: 'Changes of the preferred-provider share by direction (decrease or increase).',
      labelNames: [...pool, 'direction'],
      registers,
    });
    this.active = new Gauge({
      name: name('aimd_active'),
      help: 'Whether the share controller of the pool runs (1) or is parked or retired (0).',
      labelNames: pool,
      registers,
    });
    this.windowSamples = new Gauge({
      name: name('aimd_window_samples'),
      help: 'Completed outcomes of the preferred provider in the breach-rate window.',
      labelNames: pool,
      registers,
    });
    this.windowBreachRate = new Gauge({
      name: name('aimd_window_breach_rate'),
      help: 'Breach rate over the window (0 while the window is empty).',
      labelNames: pool,
      registers,
    });
    this.inFlight = new Gauge({
      name: name('aimd_in_flight'),
      help: 'Attempts currently running on the preferred provider.',
      labelNames: pool,
      registers,
    });
    this.unknown = new Counter({
      name: name('aimd_unknown_total'),
      help: 'Preferred-provider outcomes excluded from the breach rate (connection error, non-overload error status, cancellation).',
      labelNames: pool,
      registers,
    });
    this.overloadBreaches = new Counter({
      name: name('aimd_overload_breaches_total'),
      help: 'Preferred-provider responses with an overload status, counted as breaches.',
      labelNames: [...pool, 'status'],
      registers,
    });
    this.firstTokenSeconds = new Histogram({
      name: name('first_token_seconds'),
      help: 'Observed first-token latency of attempts (deadline expiries are not latencies and are not recorded).',
      labelNames: [...pool, 'role'],
      buckets: [...FIRST_TOKEN_BUCKETS],
      registers,
    });
    this.firstTokenBreaches = new Counter({
      name: name('first_token_breaches_total'),
      help: 'Attempts whose first token came later than the latency budget, or whose deadline expired at or after it.',
      labelNames: [...pool, 'role'],
      registers,
    });
  }

  /**
   * The series of one pool, created once and cached. Creating it publishes the label set with
   * zeroed counters, so rates work from the first event and an idle pool is still visible.
   */
  series(model: string, pool: string, overloadStatuses: readonly number[] = []): AimdSeries {
    const key = `${model}\u0000${pool}`;
    let series = this.#series.get(key);
    if (!series) {
      series = this.#create(model, pool);
      this.#series.set(key, series);
    }
    for (const status of overloadStatuses)
      this.overloadBreaches.inc({ model, pool, status: String(status) }, 0);
    return series;
  }

  #create(model: string, pool: string): AimdSeries {
    const labels = { model, pool };
    const share = this.providerShare.labels(labels);
    const active = this.active.labels(labels);
    const samples = this.windowSamples.labels(labels);
    const rate = this.windowBreachRate.labels(labels);
    const inFlight = this.inFlight.labels(labels);
    const unknown = this.unknown.labels(labels);
    const adjustments = {
      decrease: this.shareAdjustments.labels({ ...labels, direction: 'decrease' }),
      increase: this.shareAdjustments.labels({ ...labels, direction: 'increase' }),
    };
    const roles = {
      preferred: { ...labels, role: 'preferred' },
      alternate: { ...labels, role: 'alternate' },
    } as const;
    const histogram = {
      preferred: this.firstTokenSeconds.labels(roles.preferred),
      alternate: this.firstTokenSeconds.labels(roles.alternate),
    };
    const breaches = {
      preferred: this.firstTokenBreaches.labels(roles.preferred),
      alternate: this.firstTokenBreaches.labels(roles.alternate),
    };

    // Publish every label set at zero.
    inFlight.set(0);
    samples.set(0);
    rate.set(0);
    unknown.inc(0);
    adjustments.decrease.inc(0);
    adjustments.increase.inc(0);
    for (const role of ['preferred', 'alternate'] as const) {
      this.firstTokenSeconds.zero(roles[role]);
      breaches[role].inc(0);
    }

    const overloadBreaches = this.overloadBreaches;
    return {
      model,
      pool,
      setShare: (value) => share.set(value),
      adjusted: (direction, count) => adjustments[direction].inc(count),
      setActive: (value) => active.set(value ? 1 : 0),
      setWindow: (count, breachRate) => {
        samples.set(count);
        rate.set(breachRate);
      },
      inFlight: (delta) => (delta > 0 ? inFlight.inc() : inFlight.dec()),
      unknown: () => unknown.inc(),
      overloadBreach: (status) => overloadBreaches.inc({ model, pool, status: String(status) }),
      firstToken: (role, seconds) => histogram[role].observe(seconds),
      firstTokenBreach: (role) => breaches[role].inc(),
    };
  }
}
