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
  /** Left the pool (a pod gone from its Service): attempts still running on it change nothing. */
  gone = false;
  timer: NodeJS.Timeout | undefined;
  readonly name: string;
  /** The `provider` label of counters: the entry's name, which a Service's pods share. */
  readonly label: string;
  constructor(name: string, label: string) {
    this.name = name;
    this.label = label;
  }
}

/**
 * A provider of a pool: its name (a pod's is `<entry>/<pod>`: the gauge's label), its address, and
 * the label its counters carry (the entry's name; the name when absent).
 */
export interface OutlierProvider {
  readonly name: string;
  readonly url: string;
  readonly label?: string;
}

export interface OutlierDeps {
  metrics: OutlierMetrics;
  logger: Logger;
}

/** What the tables of one pool share while its settings hold, whatever its members. */
class PoolCount {
  ejected = 0;
  /** How many providers may be ejected at once: the percentage of the pool, never all of it. */
  max = 0;
  /** Left the configuration: requests still running on an old table change nothing. */
  stopped = false;
}

/**
 * The ejection state of one pool's providers, by their index in one compiled table. A table
 * compiled for new members of a Service (or a reload that adds or removes a provider) gets a
 * successor that keeps the records of the providers it still has, so an ejected pod stays ejected.
 */
export class PoolOutliers {
  readonly #model: string;
  readonly #pool: string;
  readonly #settings: OutlierSettings;
  readonly #deps: OutlierDeps;
  readonly #providers: ProviderRecord[];
  /** By `name url`: a provider whose address changed is a new one. */
  readonly #byIdentity: Map<string, ProviderRecord>;
  readonly #count: PoolCount;

  constructor(
    model: string,
    pool: string,
    providers: readonly OutlierProvider[],
    settings: OutlierSettings,
    deps: OutlierDeps,
    previous?: PoolOutliers,
  ) {
    this.#model = model;
    this.#pool = pool;
    this.#settings = settings;
    this.#deps = deps;
    this.#count = previous === undefined ? new PoolCount() : previous.#count;
    const kept = previous === undefined ? undefined : previous.#byIdentity;
    this.#byIdentity = new Map();
    this.#providers = providers.map(({ name, url, label }) => {
      const identity = `${name} ${url}`;
      const record = kept?.get(identity) ?? new ProviderRecord(name, label ?? name);
      this.#byIdentity.set(identity, record);
      return record;
    });
    if (previous === undefined) this.#count.max = this.#maxFor(providers.length);
  }

  #maxFor(size: number): number {
    return Math.max(0, Math.min(size - 1, Math.floor((size * this.#settings.maxEjectedPercent) / 100)));
  }

  /** The table holding this state is in use: its providers' gauges start at 0. */
  activate(): void {
    for (const provider of this.#providers) this.#deps.metrics.ejected.set(this.#labels(provider.name), 0);
  }

  /**
   * This successor's table replaces `previous`'s: the providers it no longer has leave (their
   * ejection ends, their gauge series go), new ones show in the gauges, and the cap follows the
   * pool's new size.
   */
  succeed(previous: PoolOutliers): void {
    for (const [identity, record] of previous.#byIdentity) {
      if (this.#byIdentity.get(identity) === record) continue;
      record.gone = true;
      clearTimeout(record.timer);
      if (record.ejected) this.#count.ejected--;
      this.#deps.metrics.ejected.remove(this.#labels(record.name));
    }
    for (const [identity, record] of this.#byIdentity)
      if (previous.#byIdentity.get(identity) !== record)
        this.#deps.metrics.ejected.set(this.#labels(record.name), 0);
    this.#count.max = this.#maxFor(this.#providers.length);
  }

  /** `order` without the ejected providers: the same array when none is ejected. */
  withoutEjected<T extends { readonly index: number }>(order: readonly T[]): readonly T[] {
    if (this.#count.ejected === 0) return order;
    return order.filter((provider) => !this.#providers[provider.index]!.ejected);
  }

  /** An attempt on provider `index` ended, saying `health` of it (undefined: nothing). */
  record(index: number, health: AttemptHealth | undefined): void {
    const provider = this.#providers[index]!;
    if (this.#count.stopped || provider.gone) return;
    if (health === 'success') {
      provider.consecutive = 0;
      // A success after its return ends the probation: the next ejection starts from the base again.
      if (!provider.ejected) provider.timesEjected = 0;
      return;
    }
    if (health !== 'failure' || provider.ejected) return;
    provider.consecutive++;
    if (provider.consecutive >= this.#settings.consecutiveFailures && this.#count.ejected < this.#count.max)
      this.#eject(provider);
  }

  #eject(provider: ProviderRecord): void {
    provider.ejected = true;
    provider.timesEjected++;
    this.#count.ejected++;
    const settings = this.#settings;
    const ms = Math.min(settings.baseEjectionMs * provider.timesEjected, settings.maxEjectionMs);
    provider.timer = setTimeout(() => this.#return(provider), ms);
    provider.timer.unref();
    const labels = this.#labels(provider.name);
    this.#deps.metrics.ejected.set(labels, 1);
    this.#deps.metrics.ejections.inc(this.#labels(provider.label));
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
    this.#count.ejected--;
    const labels = this.#labels(provider.name);
    this.#deps.metrics.ejected.set(labels, 0);
    this.#deps.logger.info(labels, 'provider returned to its pool on probation');
  }

  #labels(provider: string): Record<PoolLabels, string> {
    return { model: this.#model, pool: this.#pool, provider };
  }

  /**
   * Stops the return timers and removes the providers' gauge series (the pool left the
   * configuration, or changed its settings: a successor shows its own; or the gateway stops).
   */
  stop(): void {
    this.#count.stopped = true;
    for (const provider of this.#providers) {
      clearTimeout(provider.timer);
      this.#deps.metrics.ejected.remove(this.#labels(provider.name));
    }
  }
}

/**
 * The pools' ejection state across reloads: a pool whose settings are unchanged keeps the state of
 * the providers it keeps (an ejected provider stays ejected, also when other members come and go);
 * a pool whose settings changed, or a removed one, starts afresh.
 */
export class OutlierRegistry {
  readonly #deps: OutlierDeps;
  #pools = new Map<string, PoolEntry>();
  #next = new Map<string, PoolEntry>();

  constructor(deps: OutlierDeps) {
    this.#deps = deps;
  }

  /** A table is being compiled: `pool` is asked for each of its pools, then `commit` if it is used. */
  begin(): void {
    this.#next = new Map();
  }

  /** The state of pool `pool` for the table being compiled, its providers by index. */
  pool(
    model: string,
    pool: string,
    providers: readonly OutlierProvider[],
    settings: OutlierSettings,
  ): PoolOutliers {
    const signature = JSON.stringify([model, settings]);
    const members = JSON.stringify(providers);
    const kept = this.#pools.get(pool);
    let entry: PoolEntry;
    if (kept?.signature === signature && kept.members === members) entry = kept;
    else if (kept?.signature === signature)
      entry = {
        signature,
        members,
        state: new PoolOutliers(model, pool, providers, settings, this.#deps, kept.state),
        successorOf: kept.state,
      };
    else
      entry = { signature, members, state: new PoolOutliers(model, pool, providers, settings, this.#deps) };
    this.#next.set(pool, entry);
    return entry.state;
  }

  /**
   * The compiled table is in use: the state of pools it no longer has is dropped, that of new ones
   * shows in the gauges, and a pool with other members hands over to its successor.
   */
  commit(): void {
    for (const [pool, entry] of this.#pools) {
      const next = this.#next.get(pool);
      if (next !== entry && next?.successorOf !== entry.state) entry.state.stop();
    }
    for (const [pool, entry] of this.#next) {
      const previous = this.#pools.get(pool);
      if (previous === entry) continue;
      if (entry.successorOf !== undefined && entry.successorOf === previous?.state)
        entry.state.succeed(previous.state);
      else entry.state.activate();
    }
    this.#pools = this.#next;
    this.#next = new Map();
  }

  stop(): void {
    for (const entry of this.#pools.values()) entry.state.stop();
  }
}

interface PoolEntry {
  signature: string;
  members: string;
  state: PoolOutliers;
  /** The state this one was built from (other members, same settings). */
  successorOf?: PoolOutliers;
}
