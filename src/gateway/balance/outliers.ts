/**
 * Outlier ejection of a pool's providers (`outlier_detection`): a provider whose attempts failed
 * `consecutive_failures` times in a row is skipped by selection for a while, so requests stop paying
 * for a dead provider before failing over. Envoy-style: the ejection lasts `base_ejection_ms` times
 * the number of times the provider was ejected, up to `max_ejection_ms`; then the provider returns
 * on probation (one more failure ejects it again, a success clears its record). At most
 * `max_ejected_percent` of the pool is ejected at once, and never its last provider.
 */
import { Counter, Gauge, type Registry } from '../telemetry/prom-client.js';
import type { Logger } from '../telemetry/logger.js';

export interface OutlierSettings {
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
  readonly maxEjectedPercent: number;
}

/** What an attempt says of its provider's health: a failure, a success, or nothing (neutral). */
export type AttemptHealth = 'failure' | 'success';

type PoolLabels = 'model' | 'pool' | 'provider';

/** The ejection metrics, declared once per gateway on its registry. */
export class OutlierMetrics {
  readonly ejected: Gauge<PoolLabels>;
  readonly ejections: Counter<PoolLabels>;

  constructor(registry: Registry, prefix: string) {
    const labelNames: PoolLabels[] = ['model', 'pool', 'provider'];
    this.ejected = new Gauge({
      name: `${prefix}_provider_ejected`,
      help: 'Whether outlier detection has ejected the provider from its pool: 1 ejected (skipped by selection), 0 not.',
      labelNames,
      registers: [registry],
    });
    this.ejections = new Counter({
      name: `${prefix}_provider_ejections_total`,
      help: 'Times outlier detection ejected the provider from its pool.',
      labelNames,
      registers: [registry],
    });
  }
}

class ProviderRecord {
  consecutive = 0;
  timesEjected = 0;
  ejected = false;
  timer: NodeJS.Timeout | undefined;
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

export interface OutlierDeps {
  metrics: OutlierMetrics;
  logger: Logger;
}

/** The ejection state of one pool's providers, by their index in the pool. */
export class PoolOutliers {
  readonly #model: string;
  readonly #pool: string;
  readonly #settings: OutlierSettings;
  readonly #deps: OutlierDeps;
  readonly #providers: ProviderRecord[];
  /** How many providers may be ejected at once: the percentage of the pool, never all of it. */
  readonly #maxEjected: number;
  #ejectedCount = 0;
  /** Left the configuration: requests still running on the old table change nothing. */
  #stopped = false;

  constructor(
    model: string,
    pool: string,
    providerNames: readonly string[],
    settings: OutlierSettings,
    deps: OutlierDeps,
  ) {
    this.#model = model;
    this.#pool = pool;
    this.#settings = settings;
    this.#deps = deps;
    this.#providers = providerNames.map((name) => new ProviderRecord(name));
    this.#maxEjected = Math.min(
      providerNames.length - 1,
      Math.floor((providerNames.length * settings.maxEjectedPercent) / 100),
    );
  }

  /** The table holding this state is in use: its providers' gauges start at 0. */
  activate(): void {
    for (const provider of this.#providers) this.#deps.metrics.ejected.set(this.#labels(provider.name), 0);
  }

  /** `order` without the ejected providers: the same array when none is ejected. */
  withoutEjected<T extends { readonly index: number }>(order: readonly T[]): readonly T[] {
    if (this.#ejectedCount === 0) return order;
    return order.filter((provider) => !this.#providers[provider.index]!.ejected);
  }

  /** An attempt on provider `index` ended, saying `health` of it (undefined: nothing). */
  record(index: number, health: AttemptHealth | undefined): void {
    if (this.#stopped) return;
    const provider = this.#providers[index]!;
    if (health === 'success') {
      provider.consecutive = 0;
      // A success after its return ends the probation: the next ejection starts from the base again.
      if (!provider.ejected) provider.timesEjected = 0;
      return;
    }
    if (health !== 'failure' || provider.ejected) return;
    provider.consecutive++;
    if (provider.consecutive >= this.#settings.consecutiveFailures && this.#ejectedCount < this.#maxEjected)
      this.#eject(provider);
  }

  #eject(provider: ProviderRecord): void {
    provider.ejected = true;
    provider.timesEjected++;
    this.#ejectedCount++;
    const settings = this.#settings;
    const ms = Math.min(settings.baseEjectionMs * provider.timesEjected, settings.maxEjectionMs);
    provider.timer = setTimeout(() => this.#return(provider), ms);
    provider.timer.unref();
    const labels = this.#labels(provider.name);
    this.#deps.metrics.ejected.set(labels, 1);
    this.#deps.metrics.ejections.inc(labels);
    this.#deps.logger.warn(
      { ...labels, failures: provider.consecutive, ejectionMs: ms, timesEjected: provider.timesEjected },
      'provider ejected from its pool after consecutive failures',
    );
  }

  /** Back in selection on probation: one more failure ejects it again. */
  #return(provider: ProviderRecord): void {
    provider.ejected = false;
    provider.timer = undefined;
    provider.consecutive = this.#settings.consecutiveFailures - 1;
    this.#ejectedCount--;
    const labels = this.#labels(provider.name);
    this.#deps.metrics.ejected.set(labels, 0);
    this.#deps.logger.info(labels, 'provider returned to its pool on probation');
  }

  #labels(provider: string): Record<PoolLabels, string> {
    return { model: this.#model, pool: this.#pool, provider };
  }

  /** Stops the return timers (the pool left the configuration, or the gateway stops). */
  stop(): void {
    this.#stopped = true;
    for (const provider of this.#providers) {
      clearTimeout(provider.timer);
      if (provider.ejected) this.#deps.metrics.ejected.set(this.#labels(provider.name), 0);
    }
  }
}

/**
 * The pools' ejection state across reloads: a pool whose providers and settings are unchanged keeps
 * its state (an ejected provider stays ejected); a changed or removed pool starts afresh.
 */
export class OutlierRegistry {
  readonly #deps: OutlierDeps;
  #pools = new Map<string, { signature: string; state: PoolOutliers }>();
  #next = new Map<string, { signature: string; state: PoolOutliers }>();

  constructor(deps: OutlierDeps) {
    this.#deps = deps;
  }

  /** A table is being compiled: `pool` is asked for each of its pools, then `commit` if it is used. */
  begin(): void {
    this.#next = new Map();
  }

  /**
   * The state of pool `pool` for the table being compiled; `providerUrls` (by index, like the names)
   * make a provider whose address changed a new one.
   */
  pool(
    model: string,
    pool: string,
    providerNames: readonly string[],
    providerUrls: readonly string[],
    settings: OutlierSettings,
  ): PoolOutliers {
    const signature = JSON.stringify([model, providerNames, providerUrls, settings]);
    const kept = this.#pools.get(pool);
    const entry =
      kept?.signature === signature
        ? kept
        : { signature, state: new PoolOutliers(model, pool, providerNames, settings, this.#deps) };
    this.#next.set(pool, entry);
    return entry.state;
  }

  /**
   * The compiled table is in use: the state of pools it no longer has is dropped, that of new ones
   * shows in the gauges.
   */
  commit(): void {
    for (const [pool, entry] of this.#pools) if (this.#next.get(pool) !== entry) entry.state.stop();
    for (const [pool, entry] of this.#next) if (this.#pools.get(pool) !== entry) entry.state.activate();
    this.#pools = this.#next;
    this.#next = new Map();
  }

  stop(): void {
    for (const entry of this.#pools.values()) entry.state.stop();
  }
}
