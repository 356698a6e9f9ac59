import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheUsage, EngineObserver } from '../engine/engine.js';

/** The engine state the gauges read at scrape time. */
export interface EngineGaugeSource {
  model: string;
  capacity: () => { running: number; waiting: number; max_num_seqs: number };
  cacheUsage: () => CacheUsage | undefined;
}

// vLLM's bucket boundaries, so dashboards built for vLLM show the same resolution.
const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640,
];
const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const E2E_BUCKETS = [
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680,
];

/**
 * Prometheus metrics under vLLM's names and `model_name` label, so autoscalers and dashboards made
 * for vLLM work against the simulator, plus the simulator's own fault and rejection counters.
 */
export class SimMetrics {
  readonly registry = new Registry();
  private readonly sources: EngineGaugeSource[] = [];
  private readonly ttft: Histogram<'model_name'>;
  private readonly itl: Histogram<'model_name'>;
  private readonly e2e: Histogram<'model_name'>;
  private readonly success: Counter<'model_name' | 'finished_reason'>;
  private readonly faults: Counter<'model_name' | 'mode'>;
  private readonly rejections: Counter<'model_name' | 'code'>;
  private readonly generationTokens: Counter<'model_name'>;
  private readonly promptTokens: Counter<'model_name'>;
  private readonly prefixQueries: Counter<'model_name'>;
  private readonly prefixHits: Counter<'model_name'>;

  constructor() {
    const registers = [this.registry];
    const sources = this.sources;
    new Gauge({
      name: 'vllm:num_requests_running',
      help: 'Number of requests in model execution batches.',
      labelNames: ['model_name'],
      registers,
      collect() {
        for (const source of sources) this.set({ model_name: source.model }, source.capacity().running);
      },
    });
    new Gauge({
      name: 'vllm:num_requests_waiting',
      help: 'Number of requests waiting to be processed.',
      labelNames: ['model_name'],
      registers,
      collect() {
        for (const source of sources) this.set({ model_name: source.model }, source.capacity().waiting);
      },
    });
    new Gauge({
      name: 'vllm:kv_cache_usage_perc',
      help: 'KV cache in use, 0 to 1: the larger of the share of sequence slots running (running / max_num_seqs) and the share of the prefix cache holding blocks (cached / capacity tokens).',
      labelNames: ['model_name'],
      registers,
      collect() {
        for (const source of sources) {
          const { running, max_num_seqs } = source.capacity();
          const cache = source.cacheUsage();
          const cached = cache === undefined ? 0 : cache.cachedTokens / cache.capacityTokens;
          this.set({ model_name: source.model }, Math.min(1, Math.max(running / max_num_seqs, cached)));
        }
      },
    });
    this.ttft = new Histogram({
      name: 'vllm:time_to_first_token_seconds',
      help: 'Histogram of time to first token in seconds.',
      labelNames: ['model_name'],
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.itl = new Histogram({
      name: 'vllm:inter_token_latency_seconds',
      help: 'Histogram of inter-token latency in seconds.',
      labelNames: ['model_name'],
      buckets: ITL_BUCKETS,
      registers,
    });
    this.e2e = new Histogram({
      name: 'vllm:e2e_request_latency_seconds',
      help: 'Histogram of end to end request latency in seconds.',
      labelNames: ['model_name'],
      buckets: E2E_BUCKETS,
      registers,
    });
    this.success = new Counter({
      name: 'vllm:request_success_total',
      help: 'Count of finished requests by finish reason (abort: client left or engine stopped).',
      labelNames: ['model_name', 'finished_reason'],
      registers,
    });
    this.promptTokens = new Counter({
      name: 'vllm:prompt_tokens_total',
      help: 'Number of prefill tokens processed.',
      labelNames: ['model_name'],
      registers,
    });
    this.prefixQueries = new Counter({
      name: 'vllm:prefix_cache_queries_total',
      help: 'Prompt tokens looked up in the prefix cache (0 while the model has none).',
      labelNames: ['model_name'],
      registers,
    });
    this.prefixHits = new Counter({
      name: 'vllm:prefix_cache_hits_total',
      help: 'Prompt tokens found in the prefix cache, so not prefilled.',
      labelNames: ['model_name'],
      registers,
    });
    this.generationTokens = new Counter({
      name: 'vllm:generation_tokens_total',
      help: 'Number of generation tokens processed.',
      labelNames: ['model_name'],
      registers,
    });
    this.faults = new Counter({
      name: 'sim_faults_injected_total',
      help: 'Streams killed or corrupted on purpose, by fault mode.',
      labelNames: ['model_name', 'mode'],
      registers,
    });
    this.rejections = new Counter({
      name: 'sim_rejections_total',
      help: 'Requests refused before any response started, by error code.',
      labelNames: ['model_name', 'code'],
      registers,
    });
  }

  track(source: EngineGaugeSource): void {
    this.sources.push(source);
    this.prefixQueries.labels(source.model).inc(0);
    this.prefixHits.labels(source.model).inc(0);
    // Zero-valued series from the start, so rate() and absent() behave before the first event.
    this.success.labels(source.model, 'stop').inc(0);
    this.success.labels(source.model, 'length').inc(0);
  }

  /** Label children are resolved once per model: the per-token path must stay cheap. */
  observerFor(model: string): EngineObserver {
    const ttft = this.ttft.labels(model);
    const itl = this.itl.labels(model);
    const e2e = this.e2e.labels(model);
    const generated = this.generationTokens.labels(model);
    const aborted = this.success.labels(model, 'abort');
    const queried = this.prefixQueries.labels(model);
    const hit = this.prefixHits.labels(model);
    return {
      firstToken: (seconds) => {
        ttft.observe(seconds);
        generated.inc();
      },
      interToken: (seconds) => {
        itl.observe(seconds);
        generated.inc();
      },
      finished: (reason, seconds) => {
        e2e.observe(seconds);
        this.success.labels(model, reason).inc();
      },
      aborted: () => aborted.inc(),
      prefixCache: (queriedTokens, hitTokens) => {
        queried.inc(queriedTokens);
        hit.inc(hitTokens);
      },
    };
  }

  prompt(model: string, tokens: number): void {
    this.promptTokens.labels(model).inc(tokens);
  }

  faultInjected(model: string, mode: string): void {
    this.faults.labels(model, mode).inc();
  }

  rejected(model: string, code: string): void {
    this.rejections.labels(model, code).inc();
  }
}
