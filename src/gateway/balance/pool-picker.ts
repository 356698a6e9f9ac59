/**
 * The picking strategies that read the pool's load: `round_robin`, `least_request` (power of two
 * choices on the gateway's own in-flight attempts per provider) and `prefix_affinity` (a request to
 * the provider that most likely holds its prompt's prefix in cache, under a bound on the load).
 *
 * `prefix_affinity` is consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam):
 * a request goes to the provider that served its session or its conversation before (the affinity
 * table, least recently used entries dropped), else to the first provider clockwise from its key on a
 * hash ring; in either case only to a provider whose in-flight attempts stay within
 * `load_bound` times the pool's average (rounded up): a hot prefix spills to the next provider on the
 * ring instead of queueing on one. Failover continues around the ring.
 *
 * State lives as long as the pool's strategy and settings do (PickerRegistry): a reload that keeps
 * them keeps the counts and the table; when providers come or go (the pods of a Service), the
 * successor keeps the in-flight count of every provider it still has and the table entries that
 * point at one, and its ring moves only the keys of the providers that left or came.
 */
import { Counter, Gauge, type Registry } from '../telemetry/prom-client.js';
import { affinityKey, hashString } from './affinity-key.js';

export type LoadStrategy = 'round_robin' | 'least_request' | 'prefix_affinity';

/** Why the first attempt went where it went (`gateway_pool_picks_total{reason}`). */
export type PickReason = 'round_robin' | 'least_loaded' | 'affinity' | 'spill' | 'new';

export interface AffinitySettings {
  /** A provider takes a request only while its in-flight count stays within this times the average. */
  readonly loadBound: number;
  /** Entries of the affinity table (session keys and conversation prefixes). */
  readonly tableEntries: number;
  /** Characters per hashed block of the leading content. */
  readonly blockChars: number;
  /** Blocks hashed at most (the content beyond them does not count). */
  readonly maxBlocks: number;
}

/** What a request gives the picker: its parsed body and its session header. */
export interface PickInput {
  readonly json: Record<string, unknown> | undefined;
  readonly sessionHeader: string | undefined;
}

/** Virtual nodes per provider on the ring: enough for an even split of keys among a few providers. */
const RING_REPLICAS = 64;

type PoolLabels = 'model' | 'pool';

/** The picking metrics, declared once per gateway; the gauges read the live pools at scrape time. */
export class PickerMetrics {
  readonly picks: Counter<PoolLabels | 'reason'>;
  readonly pools = new Set<PoolPicker>();

  constructor(registry: Registry, prefix: string) {
    const pools = this.pools;
    this.picks = new Counter({
      name: `${prefix}_pool_picks_total`,
      help: 'First attempts of pools with a load-aware strategy, by why the provider was picked: round_robin, least_loaded (least_request), affinity (prefix_affinity: the provider of the session or conversation), spill (that provider was over the load bound, the next on the ring took it), new (no history: the ring decided).',
      labelNames: ['model', 'pool', 'reason'],
      registers: [registry],
    });
    new Gauge({
      name: `${prefix}_pool_provider_inflight`,
      help: 'Attempts in flight to each provider of a pool with a load-aware strategy, as the gateway counts them.',
      labelNames: ['model', 'pool', 'provider'],
      registers: [registry],
      collect() {
        this.reset();
        for (const pool of pools)
          pool.members.forEach((provider, i) =>
            this.set({ model: pool.model, pool: pool.pool, provider }, pool.inflightOf(i)),
          );
      },
    });
    new Gauge({
      name: `${prefix}_pool_affinity_entries`,
      help: 'Entries of the affinity table of a prefix_affinity pool (bounded by affinity.table_entries).',
      labelNames: ['model', 'pool'],
      registers: [registry],
      collect() {
        this.reset();
        for (const pool of pools)
          if (pool.strategy === 'prefix_affinity')
            this.set({ model: pool.model, pool: pool.pool }, pool.affinityEntries);
      },
    });
  }
}

/** A provider's attempts in flight, shared by the pickers of every table that has it. */
interface MemberLoad {
  inflight: number;
}

/** The pool's attempts in flight, shared likewise. */
interface PoolLoad {
  total: number;
  /** The round-robin position. */
  next: number;
}

export class PoolPicker {
  readonly model: string;
  readonly pool: string;
  readonly strategy: LoadStrategy;
  readonly members: readonly string[];
  private readonly loads: MemberLoad[];
  private readonly load: PoolLoad;
  private readonly settings: AffinitySettings | undefined;
  /** Session or block hash -> provider index; Map order is recency (least recently used first). */
  private readonly table = new Map<number, number>();
  /** The ring: sorted hashes, and the provider of each. */
  private readonly ringHashes: number[] = [];
  private readonly ringMembers: number[] = [];
  private readonly picks: Record<PickReason, { inc(): void }>;

  constructor(
    model: string,
    pool: string,
    strategy: LoadStrategy,
    members: readonly string[],
    settings: AffinitySettings | undefined,
    metrics: PickerMetrics,
    previous?: PoolPicker,
  ) {
    this.model = model;
    this.pool = pool;
    this.strategy = strategy;
    this.members = members;
    this.settings = settings;
    this.load = previous?.load ?? { total: 0, next: 0 };
    const kept = new Map<string, number>();
    previous?.members.forEach((name, index) => kept.set(name, index));
    this.loads = members.map((name) => {
      const index = kept.get(name);
      return index === undefined ? { inflight: 0 } : previous!.loads[index]!;
    });
    if (previous !== undefined) {
      // Old index -> new index (-1: that provider left); the table keeps its recency order.
      const moved = previous.members.map((name) => members.indexOf(name));
      for (const [key, index] of previous.table) if (moved[index]! >= 0) this.table.set(key, moved[index]!);
    }
    const child = (reason: PickReason) => metrics.picks.labels(model, pool, reason);
    this.picks = {
      round_robin: child('round_robin'),
      least_loaded: child('least_loaded'),
      affinity: child('affinity'),
      spill: child('spill'),
      new: child('new'),
    };
    if (strategy === 'prefix_affinity') this.buildRing();
  }

  inflightOf(index: number): number {
    return this.loads[index]?.inflight ?? 0;
  }

  get affinityEntries(): number {
    return this.table.size;
  }

  /** An attempt to the provider at `index` started; `ended` must follow exactly once. */
  started(index: number): void {
    this.loads[index]!.inflight++;
    this.load.total++;
  }

  ended(index: number): void {
    this.loads[index]!.inflight--;
    this.load.total--;
  }

  /** The attempt order of one request over `providers` (indexed like `members`). */
  order<T>(providers: readonly T[], input: PickInput, random: () => number): readonly T[] {
    const n = providers.length;
    if (n <= 1) return providers;
    switch (this.strategy) {
      case 'round_robin': {
        const start = this.load.next++ % n;
        this.picks.round_robin.inc();
        return rotate(providers, start);
      }
      case 'least_request':
        return this.leastRequest(providers, random);
      case 'prefix_affinity':
        return this.prefixAffinity(providers, input, random);
    }
  }

  /** Power of two choices: two distinct providers at random, the one with fewer in flight first. */
  private leastRequest<T>(providers: readonly T[], random: () => number): readonly T[] {
    const n = providers.length;
    const i = Math.floor(random() * n);
    let j = Math.floor(random() * (n - 1));
    if (j >= i) j++;
    const loads = this.loads;
    const chosen = loads[j]!.inflight < loads[i]!.inflight ? j : i;
    this.picks.least_loaded.inc();
    // Failover: the rest, least loaded first.
    const rest: number[] = [];
    for (let k = 0; k < n; k++) if (k !== chosen) rest.push(k);
    rest.sort((a, b) => loads[a]!.inflight - loads[b]!.inflight);
    return [providers[chosen]!, ...rest.map((k) => providers[k]!)];
  }

  private prefixAffinity<T>(providers: readonly T[], input: PickInput, random: () => number): readonly T[] {
    const settings = this.settings!;
    const key = affinityKey(input.json, input.sessionHeader, settings.blockChars, settings.maxBlocks);
    let known: number | undefined;
    if (key.session !== undefined) known = this.table.get(key.session);
    else
      for (let b = key.blocks.length - 1; b >= 0 && known === undefined; b--)
        known = this.table.get(key.blocks[b]!);
    const ringKey = key.session ?? key.blocks[0] ?? Math.floor(random() * 2 ** 53);
    const capacity = Math.ceil((settings.loadBound * (this.load.total + 1)) / providers.length);
    const order = this.ringOrder(ringKey);
    const loads = this.loads;
    let chosen: number;
    if (known !== undefined && loads[known]!.inflight < capacity) {
      chosen = known;
      this.picks.affinity.inc();
    } else {
      chosen = order.find((m) => m !== known && loads[m]!.inflight < capacity) ?? order[0]!;
      (known === undefined ? this.picks.new : this.picks.spill).inc();
    }
    this.remember(key.session ?? key.blocks.at(-1), chosen);
    return [providers[chosen]!, ...order.filter((m) => m !== chosen).map((m) => providers[m]!)];
  }

  /** The providers in ring order from `key`, each once. */
  private ringOrder(key: number): number[] {
    const hashes = this.ringHashes;
    let low = 0;
    let high = hashes.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (hashes[mid]! < key) low = mid + 1;
      else high = mid;
    }
    const seen = new Set<number>();
    for (let k = 0; k < hashes.length && seen.size < this.members.length; k++)
      seen.add(this.ringMembers[(low + k) % hashes.length]!);
    return [...seen];
  }

  private remember(key: number | undefined, member: number): void {
    if (key === undefined) return;
    this.table.delete(key);
    this.table.set(key, member);
    if (this.table.size > this.settings!.tableEntries) this.table.delete(this.table.keys().next().value!);
  }

  private buildRing(): void {
    const points: [number, number][] = [];
    this.members.forEach((name, member) => {
      for (let r = 0; r < RING_REPLICAS; r++) points.push([hashString(`${name}#${r}`), member]);
    });
    points.sort((a, b) => a[0] - b[0]);
    for (const [hash, member] of points) {
      this.ringHashes.push(hash);
      this.ringMembers.push(member);
    }
  }
}

function rotate<T>(items: readonly T[], start: number): readonly T[] {
  return start === 0 ? items : [...items.slice(start), ...items.slice(0, start)];
}

/**
 * The pickers of a gateway's pools, carried across reloads: a pool whose strategy, settings and
 * providers are unchanged keeps its picker (its counts, table and ring); one whose providers
 * changed gets a successor that keeps what it can (PoolPicker). Requests still running on the
 * previous table count on the picker they started with, whose in-flight counts are the successor's.
 */
export class PickerRegistry {
  readonly #metrics: PickerMetrics;
  #pools = new Map<string, { signature: string; picker: PoolPicker }>();
  #next = new Map<string, { signature: string; picker: PoolPicker }>();

  constructor(metrics: PickerMetrics) {
    this.#metrics = metrics;
  }

  begin(): void {
    this.#next = new Map();
  }

  pool(
    model: string,
    pool: string,
    strategy: LoadStrategy,
    members: readonly string[],
    settings: AffinitySettings | undefined,
  ): PoolPicker {
    const signature = JSON.stringify([model, strategy, settings]);
    const kept = this.#pools.get(pool);
    const same = kept?.signature === signature;
    const entry =
      same && sameMembers(kept.picker.members, members)
        ? kept
        : {
            signature,
            picker: new PoolPicker(
              model,
              pool,
              strategy,
              members,
              settings,
              this.#metrics,
              same ? kept.picker : undefined,
            ),
          };
    this.#next.set(pool, entry);
    return entry.picker;
  }

  /** The compiled table is in use: the gauges show its pools. */
  commit(): void {
    this.#pools = this.#next;
    this.#metrics.pools.clear();
    for (const { picker } of this.#pools.values()) this.#metrics.pools.add(picker);
  }
}

function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
