import type {
  HistogramConfiguration,
  MetricObjectWithValues,
  MetricType,
  MetricValueWithName,
} from 'prom-client';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom-client.js';
import { BudgetMetrics } from './budget-metrics.js';

/**
 * Labelled children by their label values, made once per label combination and found again by one
 * map lookup per label, because a key string built per call allocated measurably per request
 * (docs/performance.md, changes 16-18). Label values are bounded by configuration (spec 6: label
 * sets persist), so the cache never needs eviction.
 */
class Children<C> {
  /** Label value -> next level (a Map) or, at the last label, the child. */
  readonly #root = new Map<string, unknown>();
  readonly #arity: 1 | 2 | 3 | 4 | 5;
  readonly #make: (values: string[]) => C;

  constructor(arity: 1 | 2 | 3 | 4 | 5, make: (values: string[]) => C) {
    this.#arity = arity;
    this.#make = make;
  }

  get(a: string, b = '', c = '', d = '', e = ''): C {
    let node = this.#root.get(a);
    if (this.#arity > 1) node = (node as Map<string, unknown> | undefined)?.get(b);
    if (this.#arity > 2) node = (node as Map<string, unknown> | undefined)?.get(c);
    if (this.#arity > 3) node = (node as Map<string, unknown> | undefined)?.get(d);
    if (this.#arity > 4) node = (node as Map<string, unknown> | undefined)?.get(e);
    return node === undefined ? this.#create([a, b, c, d, e].slice(0, this.#arity)) : (node as C);
  }

  #create(values: string[]): C {
    const child = this.#make(values);
    let level = this.#root;
    for (let i = 0; i < values.length - 1; i++) {
      let next = level.get(values[i]!) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map<string, unknown>();
        level.set(values[i]!, next);
      }
      level = next;
    }
    level.set(values[values.length - 1]!, child);
    return child;
  }
}

type Labels = Record<string, string>;

const REQUEST_LABELS = ['model', 'status', 'traffic', 'outcome', 'provider'] as const;
const INFLIGHT_LABELS = ['model'] as const;
const ATTEMPT_LABELS = ['model', 'pool', 'provider', 'outcome'] as const;
const DURATION_LABELS = ['model', 'traffic'] as const;
const PROVIDER_LABELS = ['model', 'provider'] as const;
const USAGE_LABELS = ['model', 'provider', 'account', 'key'] as const;

/** Time-to-first-token buckets (seconds): a cached answer's milliseconds to a long prefill's minute. */
const FIRST_TOKEN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

function labelsOf(names: readonly string[], values: readonly string[]): Labels {
  const labels: Labels = {};
  names.forEach((name, i) => (labels[name] = values[i]!));
  return labels;
}

/**
 * A request-path counter child: adding is a number increment and prom-client gets the sum when
 * `/metrics` is collected, because prom-client's own `inc`, even on a cached child, validates and
 * hashes the label set on every call (about 2-5 µs of a request's metric work against 0.1-0.4 µs).
 */
export class CountingChild {
  readonly labels: Labels;
  pending = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  inc(): void {
    this.pending++;
  }
}

/** A request-path gauge child: a plain number, published when `/metrics` is collected. */
export class GaugeChild {
  readonly labels: Labels;
  value = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  inc(): void {
    this.value++;
  }

  dec(): void {
    this.value--;
  }
}

/** Moves what the children counted since the last collection into their counter. */
function flushCounts(counter: Counter<string>, children: readonly CountingChild[]): void {
  for (const child of children) {
    if (child.pending === 0) continue;
    counter.inc(child.labels, child.pending);
    child.pending = 0;
  }
}

/** Token and cost counts of one (model, provider, account, key), published when `/metrics` is collected. */
export class UsageChild {
  readonly labels: Labels;
  prompt = 0;
  completion = 0;
  reasoning = 0;
  cachedPrompt = 0;
  cacheWrite = 0;
  cost = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }
}

/** The `type` label of `gateway_tokens_total`, by the field of `UsageChild` it counts. */
const TOKEN_TYPES = [
  ['prompt', 'prompt'],
  ['completion', 'completion'],
  ['reasoning', 'reasoning'],
  ['cached_prompt', 'cachedPrompt'],
  ['cache_write', 'cacheWrite'],
] as const;

function flushUsage(tokens: Counter<string>, cost: Counter<string>, children: readonly UsageChild[]): void {
  for (const child of children) {
    for (const [type, field] of TOKEN_TYPES) {
      if (child[field] === 0) continue;
      tokens.inc({ ...child.labels, type }, child[field]);
      child[field] = 0;
    }
    if (child.cost !== 0) {
      cost.inc(child.labels, child.cost);
      child.cost = 0;
    }
  }
}

/** Request-duration buckets (seconds): sub-millisecond gateway answers up to multi-minute streams. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * A request-path histogram child: observing finds the bucket and adds to plain numbers, because
 * prom-client's `observe` builds a label object and a hash string on every call (the same
 * measurement as `CountingChild`). Published by `ChildHistogram`.
 */
export class HistogramChild {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** `counts[i]`: observations in (bounds[i-1], bounds[i]]; the last slot holds those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** One exported sample, in the shape prom-client's registry formats (`metricName` set per line). */
interface Sample {
  labels: Labels;
  sharedLabels?: Labels;
  value: number;
  metricName: string;
}

type HistogramExport = MetricObjectWithValues<MetricValueWithName<string>>;

/**
 * A prom-client histogram whose series live in `HistogramChild`ren instead of prom-client's
 * label-hashed store: the same series in the same format (cumulative `_bucket` lines, `le` first,
 * then `+Inf`, `_sum`, `_count`) for the text exposition and for `getMetricsAsJSON`.
 */
class ChildHistogram<T extends string> extends Histogram<T> {
  readonly #name: string;
  readonly #help: string;
  readonly #bounds: readonly number[];
  readonly #children: HistogramChild[] = [];

  constructor(config: HistogramConfiguration<T> & { buckets: number[] }) {
    super(config);
    this.#name = config.name;
    this.#help = config.help;
    this.#bounds = config.buckets;
  }

  child(labels: Labels): HistogramChild {
    const child = new HistogramChild(labels, this.#bounds);
    this.#children.push(child);
    return child;
  }

  /** What the registry's text exposition reads: the series labels as shared labels, as prom-client does. */
  async getForPromString(): Promise<HistogramExport> {
    return this.#export(true);
  }

  override async get(): Promise<HistogramExport> {
    return this.#export(false);
  }

  override reset(): void {
    // prom-client's constructor resets the metric before this class's fields exist.
    if (!(#children in this)) return;
    for (const child of this.#children) child.reset();
  }

  #export(shared: boolean): HistogramExport {
    const samples: Sample[] = [];
    const add = (labels: Labels, le: Labels, value: number, metricName: string): void => {
      samples.push(
        shared
          ? { labels: le, sharedLabels: labels, value, metricName }
          : { labels: { ...le, ...labels }, value, metricName },
      );
    };
    const bucket = `${this.#name}_bucket`;
    for (const child of this.#children) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += child.counts[i]!;
        add(child.labels, { le: String(this.#bounds[i]) }, cumulative, bucket);
      }
      add(child.labels, { le: '+Inf' }, child.count, bucket);
      add(child.labels, {}, child.sum, `${this.#name}_sum`);
      add(child.labels, {}, child.count, `${this.#name}_count`);
    }
    return {
      name: this.#name,
      help: this.#help,
      // prom-client's typings declare a numeric enum; its registry prints this string.
      type: 'histogram' as unknown as MetricType,
      aggregator: 'sum',
      collect: () => {},
      values: samples,
    };
  }
}

/**
 * Every metric the gateway exports, on one registry per gateway instance (so two gateways in one
 * process, as in tests or an embedding program, never collide). Names carry the configurable prefix
 * (`--metrics-prefix`, default `gateway`). Labels are bounded by configuration: alias, pool, provider,
 * status, code, traffic class, a key's configured name and its account label; never a key itself, an
 * unnamed key's fingerprint or a user.
 */
export class GatewayMetrics {
  readonly registry = new Registry();

  // Configuration
  readonly configReloads: Counter<'result'>;
  readonly configLastReloadSuccess: Gauge;
  readonly configLastReloadSuccessful: Gauge;
  readonly configInfo: Gauge<'hash'>;
  readonly configSourceUp: Gauge;

  // Lifecycle
  readonly shutdownForcedConnections: Counter;

  // Request path
  readonly requests: Counter<'model' | 'status' | 'traffic' | 'outcome' | 'provider'>;
  readonly requestDuration: ChildHistogram<'model' | 'traffic'>;
  readonly rejections: Counter<'model' | 'status' | 'code' | 'traffic'>;
  readonly batchInflightRefusals: Counter<'model'>;
  readonly modelInflight: Gauge<'model'>;
  readonly upstreamErrors: Counter<'model' | 'reason'>;
  readonly upstreamAttempts: Counter<'model' | 'pool' | 'provider' | 'outcome'>;
  readonly unsupportedParams: Counter<'param' | 'model' | 'traffic' | 'action'>;
  readonly tokens: Counter<'model' | 'provider' | 'account' | 'key' | 'type'>;
  readonly cost: Counter<'model' | 'provider' | 'account' | 'key'>;
  readonly usageMissing: Counter<'model' | 'provider'>;
  readonly timeToFirstToken: ChildHistogram<'model' | 'provider'>;
  readonly upstreamDuration: ChildHistogram<'model' | 'provider'>;

  readonly prefix: string;
  /** Spend budgets: their limits, spend, reservations and refusals. */
  readonly budgets: BudgetMetrics;

  /** (model, provider, account, key): tokens and cost; (model, provider): missing usage, TTFT, upstream time. */
  readonly usageOf: Children<UsageChild>;
  readonly usageMissingOf: Children<CountingChild>;
  readonly firstTokenOf: Children<HistogramChild>;
  readonly upstreamDurationOf: Children<HistogramChild>;
  readonly #usageCounts: UsageChild[] = [];
  readonly #usageMissingCounts: CountingChild[] = [];

  /** Request-path children: (model, status, traffic, outcome, provider), (model, traffic), (model), (model, pool, provider, outcome). */
  readonly requestsOf: Children<CountingChild>;
  readonly durationOf: Children<HistogramChild>;
  readonly inflightOf: Children<GaugeChild>;
  readonly attemptsOf: Children<CountingChild>;
  readonly #requestCounts: CountingChild[] = [];
  readonly #attemptCounts: CountingChild[] = [];
  readonly #inflightValues: GaugeChild[] = [];

  constructor(prefix: string) {
    this.prefix = prefix;
    const registers = [this.registry];
    const name = (suffix: string): string => `${prefix}_${suffix}`;

    this.configReloads = new Counter({
      name: name('config_reloads_total'),
      help: 'Configuration reload attempts by result (success or failure).',
      labelNames: ['result'],
      registers,
    });
    this.configLastReloadSuccess = new Gauge({
      name: name('config_last_reload_success_timestamp_seconds'),
      help: 'Unix time of the last configuration load that succeeded (startup included).',
      registers,
    });
    this.configLastReloadSuccessful = new Gauge({
      name: name('config_last_reload_successful'),
      help: '1 when the last configuration load succeeded, 0 while the file on disk is rejected.',
      registers,
    });
    // Both results exist from the start, so "failures increased" never misses the first failure.
    this.configReloads.inc({ result: 'success' }, 0);
    this.configReloads.inc({ result: 'failure' }, 0);
    this.configInfo = new Gauge({
      name: name('config_info'),
      help: 'Always 1; the hash label is the sha256 of the configuration file now serving.',
      labelNames: ['hash'],
      registers,
    });
    this.configSourceUp = new Gauge({
      name: name('config_source_up'),
      help: 'Whether the configuration source answers: 1 while the configuration file is readable, or while the GatewayConfig object is watched through the Kubernetes API and exists; 0 otherwise (the last good configuration keeps serving).',
      registers,
    });
    this.configSourceUp.set(1);
    this.shutdownForcedConnections = new Counter({
      name: name('shutdown_forced_connections_total'),
      help: 'Connections still open when the drain deadline expired and were cut.',
      registers,
    });
    this.requests = new Counter({
      name: name('requests_total'),
      help: 'Proxy requests finished, by alias, response status (499: the client left before a status was sent), traffic class, outcome (completed, upstream_error, upstream_cut, client_cancelled, timeout, rejected, internal_error) and the provider that served (empty when none did).',
      labelNames: REQUEST_LABELS,
      registers,
      collect: () => flushCounts(this.requests, this.#requestCounts),
    });
    this.requestDuration = new ChildHistogram({
      name: name('request_duration_seconds'),
      help: 'Time from request arrival to the end of the response body.',
      labelNames: DURATION_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.rejections = new Counter({
      name: name('rejections_total'),
      help: 'Client errors the gateway decided itself (unknown model, auth, limits, strict checks).',
      labelNames: ['model', 'status', 'code', 'traffic'],
      registers,
    });
    this.batchInflightRefusals = new Counter({
      name: name('batch_inflight_refusals_total'),
      help: 'Dispatched requests refused because the alias batch in-flight cap was reached.',
      labelNames: ['model'],
      registers,
    });
    this.modelInflight = new Gauge({
      name: name('model_inflight'),
      help: 'Requests in flight on the alias (until the response body ends).',
      labelNames: INFLIGHT_LABELS,
      registers,
      collect: () => {
        for (const child of this.#inflightValues) this.modelInflight.set(child.labels, child.value);
      },
    });
    this.upstreamErrors = new Counter({
      name: name('upstream_errors_total'),
      help: 'Upstream attempts that failed before or during the response, by reason: an undici error code (connect error, reset), body (broken after the response started), or connect_timeout, headers_timeout, idle_timeout, total_timeout.',
      labelNames: ['model', 'reason'],
      registers,
    });

    this.upstreamAttempts = new Counter({
      name: name('upstream_attempts_total'),
      help: 'Upstream attempts by provider and outcome: committed (served the client), status, embedded_error, deadline, timeout, connection_error, local_refusal, client_gone.',
      labelNames: ATTEMPT_LABELS,
      registers,
      collect: () => flushCounts(this.upstreamAttempts, this.#attemptCounts),
    });
    this.unsupportedParams = new Counter({
      name: name('unsupported_params_total'),
      help: 'Strict chat requests carrying an engine-extension parameter of the catalog, by parameter and action (logged or rejected).',
      labelNames: ['param', 'model', 'traffic', 'action'],
      registers,
    });

    this.tokens = new Counter({
      name: name('tokens_total'),
      help: 'Tokens the providers reported, by alias, provider, account, key name and type (prompt, completion, reasoning: part of completion, cached_prompt: part of prompt).',
      labelNames: [...USAGE_LABELS, 'type'],
      registers,
      collect: () => flushUsage(this.tokens, this.cost, this.#usageCounts),
    });
    this.cost = new Counter({
      name: name('cost_total'),
      help: 'Cost of the reported tokens at the configured prices (in their currency unit), by alias, provider, account and key name.',
      labelNames: USAGE_LABELS,
      registers,
      collect: () => flushUsage(this.tokens, this.cost, this.#usageCounts),
    });
    this.usageMissing = new Counter({
      name: name('usage_missing_total'),
      help: 'Responses that ended without reporting token usage (a stream without its usage chunk), by alias and provider.',
      labelNames: PROVIDER_LABELS,
      registers,
      collect: () => flushCounts(this.usageMissing, this.#usageMissingCounts),
    });
    this.timeToFirstToken = new ChildHistogram({
      name: name('time_to_first_token_seconds'),
      help: 'Time from request arrival to the first data frame of every streamed response, by alias and provider.',
      labelNames: PROVIDER_LABELS,
      buckets: FIRST_TOKEN_BUCKETS,
      registers,
    });
    this.upstreamDuration = new ChildHistogram({
      name: name('upstream_duration_seconds'),
      help: 'Time from sending the request to the provider that served to the end of its response body.',
      labelNames: PROVIDER_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });

    // A child's series exists from its first use, as with prom-client's own children.
    this.requestsOf = new Children(5, (v) => {
      const child = new CountingChild(labelsOf(REQUEST_LABELS, v));
      this.requests.inc(child.labels, 0);
      this.#requestCounts.push(child);
      return child;
    });
    this.durationOf = new Children(2, (v) => this.requestDuration.child(labelsOf(DURATION_LABELS, v)));
    this.inflightOf = new Children(1, (v) => {
      const child = new GaugeChild(labelsOf(INFLIGHT_LABELS, v));
      this.modelInflight.set(child.labels, 0);
      this.#inflightValues.push(child);
      return child;
    });
    this.attemptsOf = new Children(4, (v) => {
      const child = new CountingChild(labelsOf(ATTEMPT_LABELS, v));
      this.upstreamAttempts.inc(child.labels, 0);
      this.#attemptCounts.push(child);
      return child;
    });

    this.usageOf = new Children(4, (v) => {
      const child = new UsageChild(labelsOf(USAGE_LABELS, v));
      this.#usageCounts.push(child);
      return child;
    });
    this.usageMissingOf = new Children(2, (v) => {
      const child = new CountingChild(labelsOf(PROVIDER_LABELS, v));
      this.#usageMissingCounts.push(child);
      return child;
    });
    this.firstTokenOf = new Children(2, (v) => this.timeToFirstToken.child(labelsOf(PROVIDER_LABELS, v)));
    this.upstreamDurationOf = new Children(2, (v) =>
      this.upstreamDuration.child(labelsOf(PROVIDER_LABELS, v)),
    );

    this.budgets = new BudgetMetrics(this.registry, prefix);
    collectDefaultMetrics(this.registry);
  }

  contentType(): string {
    return this.registry.contentType;
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * Metrics of limits shared across replicas (`--shared-state`), registered only when that is on:
 * an `up` gauge reading 0 in a gateway that has no shared state would page someone for nothing.
 */
export class SharedStateMetrics {
  /** 1 while the Redis connection is ready, 0 while it is down or reconnecting. */
  readonly up: Gauge;
  /** Decisions taken by failure policy instead of by Redis; labels bounded (4 kinds x 2 policies). */
  readonly degraded: Counter<'kind' | 'policy'>;

  constructor(registry: Registry, prefix: string) {
    const registers = [registry];
    this.up = new Gauge({
      name: `${prefix}_shared_state_up`,
      help: 'Whether the shared limit store (Redis) is connected and ready: 1 or 0.',
      registers,
    });
    this.degraded = new Counter({
      name: `${prefix}_shared_state_degraded_total`,
      help: 'Limit decisions taken by the failure policy because Redis was unreachable or slower than the per-call timeout, by limit kind and policy.',
      labelNames: ['kind', 'policy'],
      registers,
    });
  }
}
