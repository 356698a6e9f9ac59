import { ALIAS } from './payloads.ts';

/** The bearer token of the keyed configurations (a benchmark-only value). */
export const BENCH_TOKEN = 'bench-token-3f9c2a7d51e84b06a1c4d2e7f8091b3c';

/** Limits far above what two cores can drive: every check runs, none refuses. */
const NEVER_RATE = { requests_per_second: 10_000_000, burst_size: 10_000_000 };
const NEVER_CONCURRENCY = { max_concurrent_requests: 1_000_000 };
const NEVER_TOKENS = { tokens_per_minute: 1_000_000_000_000, burst_tokens: 1_000_000_000_000 };
const NEVER_BUDGET = { amount: 1_000_000_000_000, window: 'month' };
const BENCH_PRICING = { prompt_per_million: 1, completion_per_million: 2 };

export type GatewayKind =
  | 'plain'
  | 'limits'
  | 'limits-without-budgets'
  | 'pool'
  | 'strict'
  | 'least'
  | 'affinity'
  | 'messages'
  | 'messages-translated';

/** The configurations whose requests carry the bench key. */
export function isKeyed(kind: string): boolean {
  return kind === 'limits' || kind === 'limits-without-budgets';
}

/** The rows of the full benchmark. */
export const GATEWAY_KINDS: readonly GatewayKind[] = ['plain', 'limits', 'pool', 'strict'];
/** Every configuration `compare.ts` and `profile.ts` run: the rows, and the picking strategies' pools. */
export const COMPARE_KINDS: readonly GatewayKind[] = [
  ...GATEWAY_KINDS,
  'limits-without-budgets',
  'least',
  'affinity',
];

export const GATEWAY_DESCRIPTIONS: Record<GatewayKind, string> = {
  plain: 'one alias, one provider, no keys',
  limits:
    "keyed auth (named key with account), key + target rate limit, key + target concurrency limit, account in-flight limit, key token limit (checked, and charged each response's usage), key + account + target spend budget (reserved, then settled with each response's cost)",
  'limits-without-budgets':
    'the limits row without its spend budgets (what the limits row was before budgets)',
  pool: 'priority pool of two providers, fallback (on 429/5xx and connection errors), AIMD share controller, outlier ejection, provider timeouts',
  strict: 'strict_mode: true, one alias',
  least: 'least_request pool of two providers',
  affinity: 'prefix_affinity pool of two providers (the body parsed, its prompt hashed, per request)',
  messages: 'one alias, one provider with `api: anthropic`, no keys: Messages requests passed through',
  'messages-translated':
    'one alias, one provider with `api: openai`, no keys: Messages requests translated to chat completions and the answers back',
};

const base = (port: number): string => `http://127.0.0.1:${port}/v1`;

/**
 * The gateway configurations of the benchmark rows. `ports` are the upstream's listening ports (the
 * pool's second provider gets its own port, so it has its own connection pool as a real second
 * provider would).
 */
export function gatewayConfig(kind: GatewayKind, ports: readonly number[]): Record<string, unknown> {
  const first = ports[0]!;
  const second = ports[1] ?? first;
  switch (kind) {
    case 'plain':
      return { targets: { [ALIAS]: { url: base(first) } } };
    case 'limits':
    case 'limits-without-budgets': {
      const budgets = kind === 'limits';
      return {
        auth: {
          key_definitions: {
            'bench-key': {
              key: BENCH_TOKEN,
              labels: { account: 'bench-account' },
              rate_limit: NEVER_RATE,
              concurrency_limit: NEVER_CONCURRENCY,
              token_limit: NEVER_TOKENS,
              ...(budgets ? { budget: NEVER_BUDGET } : {}),
            },
          },
          ...(budgets ? { accounts: { 'bench-account': { budget: NEVER_BUDGET } } } : {}),
        },
        targets: {
          [ALIAS]: {
            url: base(first),
            keys: ['bench-key'],
            rate_limit: NEVER_RATE,
            concurrency_limit: NEVER_CONCURRENCY,
            inflight_limit: 1_000_000,
            ...(budgets ? { pricing: BENCH_PRICING, budget: NEVER_BUDGET } : {}),
          },
        },
      };
    }
    case 'pool':
      return {
        targets: {
          [ALIAS]: {
            strategy: 'priority',
            providers: [
              { name: 'primary', url: base(first) },
              { name: 'secondary', url: base(second) },
            ],
            fallback: {
              on_status: [429, 5],
              on_connection_error: true,
              max_attempts: 2,
              aimd: { latency_budget_ms: 2000 },
            },
            // Every attempt's outcome is recorded for ejection (none is ejected: nothing fails);
            // a short headers timeout is timed per request by the gateway itself.
            outlier_detection: {},
            timeouts: { headers_ms: 5_000, idle_ms: 30_000, total_ms: 60_000 },
          },
        },
      };
    case 'strict':
      return { strict_mode: true, targets: { [ALIAS]: { url: base(first) } } };
    // The plain configuration with the API its provider speaks for Messages requests said outright.
    case 'messages':
      return { targets: { [ALIAS]: { url: base(first), api: 'anthropic' } } };
    case 'messages-translated':
      return { targets: { [ALIAS]: { url: base(first), api: 'openai' } } };
    case 'least':
    case 'affinity':
      return {
        targets: {
          [ALIAS]: {
            strategy: kind === 'least' ? 'least_request' : 'prefix_affinity',
            providers: [
              { name: 'primary', url: base(first) },
              { name: 'secondary', url: base(second) },
            ],
          },
        },
      };
  }
}

/**
 * The reload row's configuration: the benchmarked alias plus filler aliases up to `aliases`, each
 * filler with a response header carrying `generation`, so every rewrite changes the file's hash
 * (an unchanged hash is not reloaded) while the benchmarked alias stays the same.
 */
export function manyAliasesConfig(
  port: number,
  aliases: number,
  generation: number,
): Record<string, unknown> {
  const targets: Record<string, unknown> = { [ALIAS]: { url: base(port) } };
  for (let i = 1; i < aliases; i++) {
    targets[`filler-${String(i).padStart(4, '0')}`] = {
      url: base(port),
      gateway_model: `model-${i % 17}`,
      response_headers: { 'x-bench-generation': String(generation) },
    };
  }
  return { targets };
}
