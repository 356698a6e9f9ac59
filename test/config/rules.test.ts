import { describe, expect, it } from 'vitest';
import { parseConfigText, type ConfigResult } from '../../src/gateway/config/load.js';

type Json = Record<string, unknown>;

const load = (config: unknown): ConfigResult => parseConfigText(JSON.stringify(config), 'config.json');

const single = (extra: Json = {}): Json => ({ url: 'http://127.0.0.1:8000/v1', ...extra });
const pool = (
  extra: Json = {},
  providers: Json[] = [{ url: 'http://a.example/v1' }, { url: 'http://b.example/v1' }],
) => ({
  providers,
  ...extra,
});
const priority = (fallback: Json, extra: Json = {}): Json =>
  pool({ strategy: 'priority', fallback, ...extra });
const withTargets = (targets: Json, root: Json = {}): Json => ({ targets, ...root });
const surface = (writes: Json[], unsupported: string[]): Json => ({
  writes,
  unsupported_efforts: unsupported,
});
const reasoning = (chat: Json): Json =>
  withTargets({ m: single({ reasoning_translation: { chat_completions: chat } }) });
const ALL_BUT = (...mapped: string[]) =>
  ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'].filter((e) => !mapped.includes(e));

describe('valid configurations', () => {
  const valid: [string, Json][] = [
    ['a single-provider target', withTargets({ sim: single() })],
    ['a pool', withTargets({ p: pool() })],
    ['a Kubernetes service url', withTargets({ a: single({ url: 'http://vllm.inference.svc:8000' }) })],
    ['an IPv6 url', withTargets({ a: single({ url: 'https://[::1]:8443/v1' }) })],
    ['a pool with one provider', withTargets({ p: pool({}, [{ url: 'http://a.example' }]) })],
    [
      'literal keys and key definition names',
      withTargets({ a: single({ keys: ['literal-token', 'alice'] }) }),
    ],
    ['an empty keys list', withTargets({ a: single({ keys: [] }) })],
    ['an empty auth prefix (bare key)', withTargets({ a: single({ upstream_auth_header_prefix: '' }) })],
    [
      'on_status codes and prefix wildcards',
      withTargets({ p: pool({ fallback: { on_status: [5, 50, 429, 599, 100] } }) }),
    ],
    [
      'a deadline equal to the default budget',
      withTargets({ p: priority({ first_token_timeout_ms: 2000 }) }),
    ],
    [
      'a deadline at an overridden budget',
      withTargets({ p: priority({ first_token_timeout_ms: 500, aimd: { latency_budget_ms: 500 } }) }),
    ],
    [
      'a short deadline with aimd opted out',
      withTargets({ p: priority({ first_token_timeout_ms: 100, aimd: false }) }),
    ],
    [
      'a short deadline on a weighted_random pool',
      withTargets({ p: pool({ fallback: { first_token_timeout_ms: 100 } }) }),
    ],
    [
      'a short deadline with fallback disabled',
      withTargets({ p: priority({ first_token_timeout_ms: 100, enabled: false }) }),
    ],
    [
      'a short deadline on a one-provider priority pool',
      withTargets({
        p: pool({ strategy: 'priority', fallback: { first_token_timeout_ms: 100 } }, [
          { url: 'http://a.example' },
        ]),
      }),
    ],
    ['aimd: false on a weighted_random pool', withTargets({ p: pool({ fallback: { aimd: false } }) })],
    [
      "a Service's pods beside a url, with more attempts than entries",
      withTargets({
        p: pool({ strategy: 'least_request', fallback: { max_attempts: 4 } }, [
          { service: { name: 'vllm', port: 8000, path: '/v1' } },
          { url: 'http://backup.example/v1' },
        ]),
      }),
    ],
    [
      'a Service in another namespace over https, weighted_random by default',
      withTargets({
        p: pool({}, [{ service: { name: 'vllm', namespace: 'models', port: 8443, scheme: 'https' } }]),
      }),
    ],
    [
      'two providers with one url and distinct names',
      withTargets({
        p: pool({}, [
          { url: 'http://a', name: 'x' },
          { url: 'http://a', name: 'y' },
        ]),
      }),
    ],
    ['a surface that refuses every effort', reasoning(surface([], ALL_BUT()))],
    [
      'nested and escaped target paths',
      reasoning(
        surface(
          [
            { target_path: '/chat_template_kwargs/enable_thinking', values: { low: true } },
            { target_path: '/a~1b/c~0d', values: { low: 'x' } },
          ],
          ALL_BUT('low'),
        ),
      ),
    ],
    [
      'an alias containing a colon whose prefix is not a target (ordinary alias, may carry limits)',
      withTargets({ 'llama3:8b': single({ inflight_limit: 4, batch_inflight_limit: 1 }) }),
    ],
    [
      'a request-class pool without limits',
      withTargets({ llama: single({ inflight_limit: 2 }), 'llama:fast': single() }),
    ],
    [
      'limits of zero',
      withTargets({
        a: single({ inflight_limit: 0, batch_inflight_limit: 0, account_inflight_limits: { t: 0 } }),
      }),
    ],
    [
      'catalog names in the reject list',
      withTargets({ a: single() }, { reject_unsupported_params: ['n', 'guided_json'] }),
    ],
    [
      'auth with global keys and definitions',
      withTargets(
        { a: single({ keys: ['alice'] }) },
        {
          auth: {
            global_keys: ['g1'],
            key_definitions: { alice: { key: 'k1', labels: { account: 'acme' } } },
          },
        },
      ),
    ],
  ];
  valid.push(['outlier detection with its defaults', withTargets({ p: pool({ outlier_detection: {} }) })]);
  valid.push([
    'timeouts at the top level, on a target and on a provider entry',
    withTargets(
      {
        s: single({ timeouts: { idle_ms: 60_000 } }),
        p: pool({ timeouts: { headers_ms: 30_000 } }, [
          { url: 'http://a.example/v1', timeouts: { connect_ms: 500, total_ms: 120_000 } },
        ]),
      },
      { timeouts: { connect_ms: 2_000, headers_ms: 600_000 } },
    ),
  ]);
  it.each(valid)('%s', (_name, config) => {
    const result = load(config);
    expect(result.ok ? [] : result.issues).toEqual([]);
  });

  it('applies the documented defaults and leaves AIMD overrides and strategy unresolved', () => {
    const result = load(withTargets({ s: single(), p: priority({ aimd: { share_floor: 0.2 } }) }));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const { s, p } = result.config.targets;
    expect(result.config.strict_mode).toBe(false);
    expect(result.config.reject_unsupported_params).toEqual([]);
    expect(s).toMatchObject({
      upstream_auth_header_name: 'Authorization',
      upstream_auth_header_prefix: 'Bearer ',
      trusted: false,
    });
    expect(s!.strategy).toBeUndefined();
    expect(p!.providers![0]).toEqual({ url: 'http://a.example/v1', weight: 1 });
    expect(p!.fallback).toEqual({
      enabled: true,
      on_status: [],
      on_rate_limit: false,
      on_connection_error: true,
      aimd: { share_floor: 0.2 },
    });
  });
});

/** [name, config, [path, message fragment][]]: the issues must be exactly these paths. */
type Case = [string, Json, [string, string][]];

const invalid: Case[] = [
  // Timeouts
  [
    'a zero timeout',
    withTargets({ a: single({ timeouts: { headers_ms: 0 } }) }),
    [['$.targets.a.timeouts.headers_ms', 'must be > 0']],
  ],
  [
    'a timeout beyond a day',
    withTargets({ a: single() }, { timeouts: { total_ms: 86_400_001 } }),
    [['$.timeouts.total_ms', 'at most 86400000 ms']],
  ],
  [
    'an unknown timeout field',
    withTargets({ p: pool({}, [{ url: 'http://a', timeouts: { read_ms: 5 } }]) }),
    [['$.targets.p.providers[0].timeouts.read_ms', 'unknown']],
  ],
  // Outlier detection
  [
    'outlier_detection on a single-provider target',
    withTargets({ a: single({ outlier_detection: {} }) }),
    [['$.targets.a.outlier_detection', 'only applies to a pool']],
  ],
  [
    'an ejection cap below its base',
    withTargets({ p: pool({ outlier_detection: { base_ejection_ms: 60_000, max_ejection_ms: 1_000 } }) }),
    [['$.targets.p.outlier_detection.max_ejection_ms', 'at least `base_ejection_ms` (60000)']],
  ],
  [
    'max_ejected_percent above 100',
    withTargets({ p: pool({ outlier_detection: { max_ejected_percent: 101 } }) }),
    [['$.targets.p.outlier_detection.max_ejected_percent', '<= 100']],
  ],
  // Placement of fields
  [
    'strict_mode inside a target',
    withTargets({ a: single({ strict_mode: true }) }),
    [['$.targets.a.strict_mode', 'global only']],
  ],
  [
    'strict_mode inside a provider entry',
    withTargets({ p: pool({}, [{ url: 'http://a', strict_mode: false }]) }),
    [['$.targets.p.providers[0].strict_mode', 'global only']],
  ],
  [
    'url and providers together',
    withTargets({ p: pool({ url: 'http://x' }) }),
    [['$.targets.p.url', 'not both']],
  ],
  ['neither url nor providers', withTargets({ a: {} }), [['$.targets.a', 'needs either `url`']]],
  [
    'an empty providers list',
    withTargets({ p: { providers: [] } }),
    [['$.targets.p.providers', 'must not be empty']],
  ],
  [
    'propagate_trace_context on a pool',
    withTargets({ p: pool({ propagate_trace_context: true }) }),
    [['$.targets.p.propagate_trace_context', 'set `propagate_trace_context` on each provider entry']],
  ],
  [
    'strategy on a single-provider target',
    withTargets({ a: single({ strategy: 'priority' }) }),
    [['$.targets.a.strategy', 'only applies to a pool']],
  ],
  [
    'fallback on a single-provider target',
    withTargets({ a: single({ fallback: {} }) }),
    [['$.targets.a.fallback', 'only applies to a pool']],
  ],
  // Pools and fallback
  [
    'duplicate provider urls',
    withTargets({ p: pool({}, [{ url: 'http://a' }, { url: 'http://a' }]) }),
    [['$.targets.p.providers[1].url', 'already used by providers[0]']],
  ],
  [
    'duplicate provider names',
    withTargets({
      p: pool({}, [
        { url: 'http://a', name: 'x' },
        { url: 'http://b', name: 'x' },
      ]),
    }),
    [['$.targets.p.providers[1].name', 'identity `x`']],
  ],
  [
    'weight 0',
    withTargets({ p: pool({}, [{ url: 'http://a', weight: 0 }]) }),
    [['$.targets.p.providers[0].weight', 'must be > 0']],
  ],
  [
    'max_attempts above the provider count',
    withTargets({ p: pool({ fallback: { max_attempts: 3 } }) }),
    [['$.targets.p.fallback.max_attempts', 'exceed the 2 provider(s)']],
  ],
  [
    'a provider entry with both url and service',
    withTargets({ p: pool({}, [{ url: 'http://a', service: { name: 'vllm', port: 8000 } }]) }),
    [['$.targets.p.providers[0]', 'either `url` or `service`, not both']],
  ],
  [
    'a provider entry with neither url nor service',
    withTargets({ p: pool({}, [{ name: 'nowhere' }]) }),
    [['$.targets.p.providers[0]', 'needs either `url`']],
  ],
  [
    'a Service in a priority pool',
    withTargets({ p: pool({ strategy: 'priority' }, [{ service: { name: 'vllm', port: 8000 } }]) }),
    [['$.targets.p.providers[0].service', "a Service's pods are peers"]],
  ],
  [
    'a Service name that is not a DNS label, a port out of range, a path without a slash',
    withTargets({ p: pool({}, [{ service: { name: 'vLLM_svc', port: 70000, path: 'v1' } }]) }),
    [
      ['$.targets.p.providers[0].service.name', 'must be a Service name'],
      ['$.targets.p.providers[0].service.port', '65535'],
      ['$.targets.p.providers[0].service.path', 'starting with `/`'],
    ],
  ],
  [
    "a provider named like a pod of the pool's service entry",
    withTargets({
      p: pool({}, [
        { name: 'vllm', service: { name: 'vllm', port: 8000 } },
        { name: 'vllm/vllm-a', url: 'http://a' },
      ]),
    }),
    [['$.targets.p.providers[1].name', 'could be the name of a pod of providers[0]']],
  ],
  [
    'max_attempts 0',
    withTargets({ p: pool({ fallback: { max_attempts: 0 } }) }),
    [['$.targets.p.fallback.max_attempts', 'must be >= 1']],
  ],
  [
    'on_status 600',
    withTargets({ p: pool({ fallback: { on_status: [600] } }) }),
    [['$.targets.p.fallback.on_status[0]', 'HTTP status code (100-599) or a prefix wildcard']],
  ],
  [
    'on_status 0',
    withTargets({ p: pool({ fallback: { on_status: [0] } }) }),
    [['$.targets.p.fallback.on_status[0]', 'prefix wildcard']],
  ],
  [
    'on_status 60',
    withTargets({ p: pool({ fallback: { on_status: [60] } }) }),
    [['$.targets.p.fallback.on_status[0]', 'prefix wildcard']],
  ],
  [
    'on_status 5.5',
    withTargets({ p: pool({ fallback: { on_status: [5.5] } }) }),
    [['$.targets.p.fallback.on_status[0]', 'must be an integer']],
  ],
  [
    'on_status duplicates',
    withTargets({ p: pool({ fallback: { on_status: [503, 429, 503] } }) }),
    [['$.targets.p.fallback.on_status[2]', 'duplicate status `503`']],
  ],
  [
    'first_token_timeout_ms 0',
    withTargets({ p: pool({ fallback: { first_token_timeout_ms: 0 } }) }),
    [['$.targets.p.fallback.first_token_timeout_ms', 'must be > 0']],
  ],
  [
    'aimd overrides on a weighted_random pool',
    withTargets({ p: pool({ fallback: { aimd: { share_floor: 0.2 } } }) }),
    [['$.targets.p.fallback.aimd', 'only runs on `strategy: priority` pools']],
  ],
  [
    'aimd: true',
    withTargets({ p: priority({ aimd: true }) }),
    [['$.targets.p.fallback.aimd', 'must be `false` or an object, got true']],
  ],
  [
    'a deadline below the default latency budget',
    withTargets({ p: priority({ first_token_timeout_ms: 1999 }) }),
    [
      [
        '$.targets.p.fallback.first_token_timeout_ms',
        "1999 ms is below the share controller's latency budget (2000 ms, the default)",
      ],
    ],
  ],
  [
    'a deadline below an overridden latency budget',
    withTargets({ p: priority({ first_token_timeout_ms: 2500, aimd: { latency_budget_ms: 3000 } }) }),
    [['$.targets.p.fallback.first_token_timeout_ms', 'latency budget (3000 ms)']],
  ],
  // AIMD sanity
  [
    'share_floor 0',
    withTargets({ p: priority({ aimd: { share_floor: 0 } }) }),
    [['$.targets.p.fallback.aimd.share_floor', 'must be > 0']],
  ],
  [
    'share_floor above 1',
    withTargets({ p: priority({ aimd: { share_floor: 1.5 } }) }),
    [['$.targets.p.fallback.aimd.share_floor', 'must be <= 1']],
  ],
  [
    'share_decay 1',
    withTargets({ p: priority({ aimd: { share_decay: 1 } }) }),
    [['$.targets.p.fallback.aimd.share_decay', 'must be < 1']],
  ],
  [
    'share_decay 0',
    withTargets({ p: priority({ aimd: { share_decay: 0 } }) }),
    [['$.targets.p.fallback.aimd.share_decay', 'must be > 0']],
  ],
  [
    'share_step 0',
    withTargets({ p: priority({ aimd: { share_step: 0 } }) }),
    [['$.targets.p.fallback.aimd.share_step', 'must be > 0']],
  ],
  [
    'breach_rate_target above 1',
    withTargets({ p: priority({ aimd: { breach_rate_target: 2 } }) }),
    [['$.targets.p.fallback.aimd.breach_rate_target', 'must be <= 1']],
  ],
  [
    'negative dwell_ms',
    withTargets({ p: priority({ aimd: { dwell_ms: -1 } }) }),
    [['$.targets.p.fallback.aimd.dwell_ms', 'must be >= 0']],
  ],
  [
    'recovery rate above an explicit target',
    withTargets({ p: priority({ aimd: { breach_rate_target: 0.2, recovery_breach_rate: 0.3 } }) }),
    [
      [
        '$.targets.p.fallback.aimd.recovery_breach_rate',
        '`recovery_breach_rate` (0.3) must not exceed `breach_rate_target` (0.2)',
      ],
    ],
  ],
  [
    'recovery rate above the default target',
    withTargets({ p: priority({ aimd: { recovery_breach_rate: 0.5 } }) }),
    [['$.targets.p.fallback.aimd.recovery_breach_rate', '(0.1, the default)']],
  ],
  [
    'a target below the default recovery rate',
    withTargets({ p: priority({ aimd: { breach_rate_target: 0.01 } }) }),
    [
      [
        '$.targets.p.fallback.aimd.breach_rate_target',
        '`recovery_breach_rate` (0.02, the default) must not exceed `breach_rate_target` (0.01)',
      ],
    ],
  ],
  [
    'min_samples above window_samples',
    withTargets({ p: priority({ aimd: { min_samples: 50, window_samples: 10 } }) }),
    [['$.targets.p.fallback.aimd.min_samples', 'must not exceed `window_samples` (10)']],
  ],
  [
    'window_samples below the default min_samples',
    withTargets({ p: priority({ aimd: { window_samples: 5 } }) }),
    [['$.targets.p.fallback.aimd.window_samples', '`min_samples` (20, the default)']],
  ],
  [
    'an overload status that is not an error',
    withTargets({ p: priority({ aimd: { overload_statuses: [200] } }) }),
    [['$.targets.p.fallback.aimd.overload_statuses[0]', 'HTTP error status code (400-599)']],
  ],
  [
    'duplicate overload statuses',
    withTargets({ p: priority({ aimd: { overload_statuses: [429, 429] } }) }),
    [['$.targets.p.fallback.aimd.overload_statuses[1]', 'duplicate status `429`']],
  ],
  // Limits
  [
    'requests_per_second 0',
    withTargets({ a: single({ rate_limit: { requests_per_second: 0, burst_size: 1 } }) }),
    [['$.targets.a.rate_limit.requests_per_second', 'must be > 0']],
  ],
  [
    'fractional burst_size',
    withTargets({ a: single({ rate_limit: { requests_per_second: 1, burst_size: 1.5 } }) }),
    [['$.targets.a.rate_limit.burst_size', 'must be an integer, got the number 1.5']],
  ],
  [
    'burst_size 0',
    withTargets({ a: single({ rate_limit: { requests_per_second: 1, burst_size: 0 } }) }),
    [['$.targets.a.rate_limit.burst_size', 'must be >= 1']],
  ],
  [
    'a rate limit without burst_size',
    withTargets({ a: single({ rate_limit: { requests_per_second: 1 } }) }),
    [['$.targets.a.rate_limit.burst_size', 'is required']],
  ],
  [
    'max_concurrent_requests 0',
    withTargets({ a: single({ concurrency_limit: { max_concurrent_requests: 0 } }) }),
    [['$.targets.a.concurrency_limit.max_concurrent_requests', 'must be >= 1']],
  ],
  [
    'a negative inflight_limit',
    withTargets({ a: single({ inflight_limit: -1 }) }),
    [['$.targets.a.inflight_limit', 'non-negative integer']],
  ],
  [
    'a fractional batch_inflight_limit',
    withTargets({ a: single({ batch_inflight_limit: 1.5 }) }),
    [['$.targets.a.batch_inflight_limit', 'must be an integer']],
  ],
  [
    'an empty account name',
    withTargets({ a: single({ account_inflight_limits: { '': 3 } }) }),
    [['$.targets.a.account_inflight_limits[""]', 'invalid key: must not be empty']],
  ],
  [
    'in-flight limits on a request-class pool',
    withTargets({
      llama: single(),
      'llama:fast': single({ inflight_limit: 1, account_inflight_limits: { a: 1 }, batch_inflight_limit: 1 }),
    }),
    [
      [
        '$.targets["llama:fast"].inflight_limit',
        'read from the alias default pool; set it on `targets.llama`',
      ],
      ['$.targets["llama:fast"].account_inflight_limits', 'not valid on the request-class pool `llama:fast`'],
      ['$.targets["llama:fast"].batch_inflight_limit', 'not valid on the request-class pool `llama:fast`'],
    ],
  ],
  [
    'an empty request class',
    withTargets({ llama: single(), 'llama:': single() }),
    [['$.targets["llama:"]', 'request class after `:` must not be empty']],
  ],
  [
    'nested request classes',
    withTargets({ a: single(), 'a:b': single(), 'a:b:c': single() }),
    [['$.targets["a:b:c"]', 'classes do not nest']],
  ],
  // Targets map, urls and headers
  ['no targets', withTargets({}), [['$.targets', 'at least one alias']]],
  ['targets missing', {}, [['$.targets', 'is required']]],
  [
    'an alias with a space',
    withTargets({ 'my model': single() }),
    [['$.targets["my model"]', 'invalid key: an alias must be non-empty, without whitespace']],
  ],
  [
    'a non-http url',
    withTargets({ a: single({ url: 'ftp://host/v1' }) }),
    [['$.targets.a.url', 'absolute http:// or https:// URL']],
  ],
  [
    'a relative url',
    withTargets({ a: single({ url: '/v1' }) }),
    [['$.targets.a.url', 'absolute http:// or https:// URL']],
  ],
  [
    'a url with a query',
    withTargets({ a: single({ url: 'http://a/v1?x=1' }) }),
    [['$.targets.a.url', 'must not carry a query string']],
  ],
  [
    'a provider url with a fragment',
    withTargets({ p: pool({}, [{ url: 'http://a/v1#x' }]) }),
    [['$.targets.p.providers[0].url', 'must not carry a query string or fragment']],
  ],
  [
    'an empty gateway_key',
    withTargets({ a: single({ gateway_key: '' }) }),
    [['$.targets.a.gateway_key', 'must not be empty']],
  ],
  [
    'an empty gateway_model',
    withTargets({ a: single({ gateway_model: '' }) }),
    [['$.targets.a.gateway_model', 'must not be empty']],
  ],
  [
    'an invalid auth header name',
    withTargets({ a: single({ upstream_auth_header_name: 'api key' }) }),
    [['$.targets.a.upstream_auth_header_name', 'valid HTTP header name']],
  ],
  [
    'a prefix with a line break',
    withTargets({ a: single({ upstream_auth_header_prefix: 'Bearer\r\nX: y' }) }),
    [['$.targets.a.upstream_auth_header_prefix', 'line breaks']],
  ],
  [
    'a framing response header',
    withTargets({ a: single({ response_headers: { 'Content-Length': '3' } }) }),
    [
      [
        '$.targets.a.response_headers["Content-Length"]',
        'invalid key: names a header the proxy manages itself',
      ],
    ],
  ],
  [
    'response headers differing in case',
    withTargets({ a: single({ response_headers: { 'X-A': '1', 'x-a': '2' } }) }),
    [['$.targets.a.response_headers["x-a"]', 'same header as `X-A`']],
  ],
  [
    'a response header value with a newline',
    withTargets({ a: single({ response_headers: { 'x-a': 'a\nb' } }) }),
    [['$.targets.a.response_headers["x-a"]', 'line breaks']],
  ],
  [
    'a non-boolean trusted',
    withTargets({ a: single({ trusted: 'yes' }) }),
    [['$.targets.a.trusted', 'must be a boolean (true or false), got the string "yes"']],
  ],
  [
    'a strategy typo',
    withTargets({ p: pool({ strategy: 'priorty' }) }),
    [['$.targets.p.strategy', 'did you mean `priority`?']],
  ],
  // Auth
  [
    'an empty key',
    withTargets({ a: single() }, { auth: { key_definitions: { k: { key: '' } } } }),
    [['$.auth.key_definitions.k.key', 'must not be empty']],
  ],
  [
    'a non-string label',
    withTargets({ a: single() }, { auth: { key_definitions: { k: { key: 'x', labels: { account: 5 } } } } }),
    [['$.auth.key_definitions.k.labels.account', 'must be a string, got the integer 5']],
  ],
  [
    'a token used twice',
    withTargets(
      { a: single() },
      { auth: { global_keys: ['t1', 't2'], key_definitions: { k: { key: 't2' }, j: { key: 't2' } } } },
    ),
    [
      ['$.auth.key_definitions.k.key', 'already used by global_keys[1]'],
      ['$.auth.key_definitions.j.key', 'already used by global_keys[1]'],
    ],
  ],
  [
    'a duplicated global key',
    withTargets({ a: single() }, { auth: { global_keys: ['t', 't'] } }),
    [['$.auth.global_keys[1]', 'duplicate key']],
  ],
  // Unsupported-parameter reject list
  [
    'names outside the catalog',
    withTargets({ a: single() }, { reject_unsupported_params: ['n', 'guided_jsn', 'temperature'] }),
    [
      [
        '$.reject_unsupported_params[1]',
        '`guided_jsn` is not in the unsupported-parameter catalog; did you mean `guided_json`?',
      ],
      ['$.reject_unsupported_params[2]', '`temperature` is not in the unsupported-parameter catalog'],
    ],
  ],
  [
    'a repeated catalog name',
    withTargets({ a: single() }, { reject_unsupported_params: ['n', 'n'] }),
    [['$.reject_unsupported_params[1]', 'duplicate parameter `n`']],
  ],
  // Reasoning translation
  [
    'an effort mapped by one write only (rule 1)',
    reasoning(
      surface(
        [
          { target_path: '/a', values: { low: 1 } },
          { target_path: '/b', values: { low: 2, high: 3 } },
        ],
        ALL_BUT('low', 'high'),
      ),
    ),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[1].values.high',
        'maps `high`, which writes[0] does not',
      ],
    ],
  ],
  [
    'an effort missing from one write (rule 1)',
    reasoning(
      surface(
        [
          { target_path: '/a', values: { low: 1, high: 2 } },
          { target_path: '/b', values: { low: 2 } },
        ],
        ALL_BUT('low', 'high'),
      ),
    ),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[1].values',
        'does not map `high`, which writes[0] maps',
      ],
    ],
  ],
  [
    'an effort both mapped and unsupported (rule 2)',
    reasoning(surface([{ target_path: '/a', values: { low: 1 } }], ['low', ...ALL_BUT('low')])),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.unsupported_efforts[0]',
        '`low` is mapped by the writes and listed as unsupported',
      ],
    ],
  ],
  [
    'efforts named nowhere (rule 2)',
    reasoning(
      surface([{ target_path: '/a', values: { low: 1 } }], ['none', 'minimal', 'medium', 'high', 'xhigh']),
    ),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.unsupported_efforts',
        '`max` is neither mapped by the writes nor listed as unsupported',
      ],
    ],
  ],
  [
    'a repeated unsupported effort',
    reasoning(surface([{ target_path: '/a', values: { low: 1 } }], [...ALL_BUT('low'), 'max'])),
    [['$.targets.m.reasoning_translation.chat_completions.unsupported_efforts[6]', 'duplicate effort `max`']],
  ],
  [
    'an unknown effort in values',
    reasoning(surface([{ target_path: '/a', values: { low: 1, hgih: 2 } }], ALL_BUT('low'))),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[0].values.hgih',
        'unknown key `hgih` (must be one of none, minimal, low, medium, high, xhigh, max); did you mean `high`?',
      ],
    ],
  ],
  [
    'an unknown unsupported effort',
    reasoning(surface([{ target_path: '/a', values: { low: 1 } }], [...ALL_BUT('low', 'max'), 'maximum'])),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.unsupported_efforts[5]',
        'must be one of `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`',
      ],
    ],
  ],
  [
    'a value that is not a string, number or boolean',
    reasoning(surface([{ target_path: '/a', values: { low: [] } }], ALL_BUT('low'))),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[0].values.low',
        'must be a string, a number or a boolean (true or false), got an array',
      ],
    ],
  ],
  [
    'a write mapping nothing',
    reasoning(surface([{ target_path: '/a', values: {} }], ALL_BUT())),
    [['$.targets.m.reasoning_translation.chat_completions.writes[0].values', 'must map at least one effort']],
  ],
  [
    'a path without a slash',
    reasoning(surface([{ target_path: 'reasoning_effort', values: { low: 1 } }], ALL_BUT('low'))),
    [['$.targets.m.reasoning_translation.chat_completions.writes[0].target_path', 'of the form `/name`']],
  ],
  [
    'a path with an empty segment',
    reasoning(surface([{ target_path: '/a//b', values: { low: 1 } }], ALL_BUT('low'))),
    [['$.targets.m.reasoning_translation.chat_completions.writes[0].target_path', 'of the form `/name`']],
  ],
  [
    'a path with a bad escape',
    reasoning(surface([{ target_path: '/a~2', values: { low: 1 } }], ALL_BUT('low'))),
    [['$.targets.m.reasoning_translation.chat_completions.writes[0].target_path', 'of the form `/name`']],
  ],
  [
    'a prototype path',
    reasoning(surface([{ target_path: '/__proto__/x', values: { low: 1 } }], ALL_BUT('low'))),
    [['$.targets.m.reasoning_translation.chat_completions.writes[0].target_path', '`__proto__`']],
  ],
  [
    'two writes to one path',
    reasoning(
      surface(
        [
          { target_path: '/a', values: { low: 1 } },
          { target_path: '/a', values: { low: 2 } },
        ],
        ALL_BUT('low'),
      ),
    ),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[1].target_path',
        'duplicate target_path `/a` (also writes[0])',
      ],
    ],
  ],
  [
    'a write inside another write',
    reasoning(
      surface(
        [
          { target_path: '/a/b', values: { low: 1 } },
          { target_path: '/a', values: { low: 2 } },
        ],
        ALL_BUT('low'),
      ),
    ),
    [
      [
        '$.targets.m.reasoning_translation.chat_completions.writes[1].target_path',
        'overlaps writes[0] `/a/b`',
      ],
    ],
  ],
  [
    'a translation with no surface',
    withTargets({ m: single({ reasoning_translation: {} }) }),
    [['$.targets.m.reasoning_translation', 'at least one surface']],
  ],
  [
    'an unknown surface',
    withTargets({ m: single({ reasoning_translation: { chat: surface([], ALL_BUT()) } }) }),
    [['$.targets.m.reasoning_translation.chat', 'unknown field `chat`']],
  ],
  [
    'rules apply to the responses surface and to provider entries',
    withTargets({
      p: pool({}, [
        {
          url: 'http://a',
          reasoning_translation: {
            responses: surface([{ target_path: '/reasoning/effort', values: { low: 'low' } }], ['none']),
          },
        },
      ]),
    }),
    [
      [
        '$.targets.p.providers[0].reasoning_translation.responses.unsupported_efforts',
        '`minimal`, `medium`, `high`, `xhigh`, `max` are neither mapped',
      ],
    ],
  ],
  // Root
  [
    'a non-boolean strict_mode',
    withTargets({ a: single() }, { strict_mode: 1 }),
    [['$.strict_mode', 'must be a boolean']],
  ],
];

describe('invalid configurations', () => {
  it.each(invalid)('%s', (_name, config, expected) => {
    const result = load(config);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((issue) => issue.path)).toEqual(expected.map(([path]) => path));
    result.issues.forEach((issue, i) => expect(issue.message).toContain(expected[i]![1]));
  });
});

describe('size bounds (what lets the Kubernetes API server price its checks)', () => {
  const issuesOf = (config: unknown) => {
    const result = load(config);
    return result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
  };

  it('refuses more than 1000 targets, and accepts 1000', () => {
    const targets = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`alias-${i}`, single()]));
    expect(issuesOf(withTargets(targets(1000)))).toEqual([]);
    expect(issuesOf(withTargets(targets(1001)))).toEqual([
      '$.targets: 1001 targets: at most 1000 aliases and request-class pools',
    ]);
  });

  it('refuses a pool of more than 64 providers, a URL over 2048 characters and a provider name over 253', () => {
    const providers = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ url: `http://p${i}.example/v1` }));
    expect(issuesOf(withTargets({ p: pool({}, providers(64)) }))).toEqual([]);
    expect(issuesOf(withTargets({ p: pool({}, providers(65)) }))).toEqual([
      '$.targets.p.providers: a pool has at most 64 providers',
    ]);
    const long = `http://a.example/${'x'.repeat(2048)}`;
    expect(issuesOf(withTargets({ a: single({ url: long }) }))).toEqual([
      '$.targets.a.url: must be at most 2048 characters',
    ]);
    expect(
      issuesOf(withTargets({ p: pool({}, [{ url: 'http://a.example/v1', name: 'n'.repeat(254) }]) })),
    ).toEqual(['$.targets.p.providers[0].name: must be at most 253 characters']);
  });
});
