/**
 * fast-check generators of valid configuration files (in their input form, before defaults), used
 * by the property tests. Every generated value must pass validation: the property tests assert it,
 * which also keeps these generators honest.
 */
import fc from 'fast-check';
import { EFFORTS, resolveAimd, type GatewayConfigInput } from '../../../src/gateway/config/schema/index.js';
import { UNSUPPORTED_PARAM_NAMES } from '../../../src/gateway/strict/unsupported-params-catalog.js';

type Json = Record<string, unknown>;

/** Drops keys whose generated value is `undefined` (an absent optional field). */
const compact = (record: Json): Json =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined));

const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });

const token = fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/);
const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
/** Finite numbers that survive a JSON and YAML round trip unchanged (no negative zero). */
const number = fc
  .oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.double({ min: -1e6, max: 1e6, noNaN: true }))
  .map((n) => (Object.is(n, -0) ? 0 : n));

const url = fc
  .tuple(
    fc.constantFrom('http', 'https'),
    label,
    fc.integer({ min: 1, max: 65535 }),
    fc.constantFrom('', '/v1', '/api/v1'),
  )
  .map(([scheme, host, port, path]) => `${scheme}://${host}.example:${port}${path}`);

const rateLimit = fc.record({
  requests_per_second: fc.double({ min: 0.001, max: 1e5, noNaN: true }),
  burst_size: fc.integer({ min: 1, max: 10_000 }),
});
const concurrencyLimit = fc.record({ max_concurrent_requests: fc.integer({ min: 1, max: 10_000 }) });

/** A key kept out of the file: a path under a Secret mount, or an environment variable name. */
const secretReference = fc.oneof(
  label.map((name) => ({ from_file: `/etc/gateway-keys/${name}` })),
  fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,12}$/).map((name) => ({ from_env: name })),
);
/** A key field: the literal token or a reference. */
const secret = fc.oneof(token, secretReference);

const headerValue = fc.stringMatching(/^[ -~]{0,20}$/);
/** Lower-case names, so no two keys are the same header in a different case. */
const responseHeaders = fc.dictionary(fc.stringMatching(/^x-[a-z]{1,8}$/), headerValue, { maxKeys: 3 });

const reasoningSurface = fc
  .tuple(fc.subarray([...EFFORTS]), fc.integer({ min: 0, max: 3 }))
  .chain(([mapped, writeCount]) => {
    // Writes map one shared set of efforts; no mapped effort means no writes.
    const writes = mapped.length === 0 ? 0 : Math.max(1, writeCount);
    const value = fc.oneof(fc.string({ maxLength: 10 }), number, fc.boolean());
    return fc.record({
      writes: fc.tuple(
        ...Array.from({ length: writes }, (_, i) =>
          fc.tuple(...mapped.map(() => value)).map((values) => ({
            target_path: i % 2 === 0 ? `/field_${i}` : `/nested_${i}/leaf`,
            values: Object.fromEntries(mapped.map((effort, j) => [effort, values[j]])),
          })),
        ),
      ),
      unsupported_efforts: fc.constant(EFFORTS.filter((effort) => !mapped.includes(effort))),
    });
  });

const reasoningTranslation = fc
  .record({ chat_completions: optional(reasoningSurface), responses: optional(reasoningSurface) })
  .map(compact)
  .filter((t) => Object.keys(t).length > 0);

/** Fields a target and a provider entry share (provider-only and target-only fields are added below). */
const upstreamFields = (scope: 'target' | 'provider') =>
  fc.record({
    gateway_key: optional(secret),
    gateway_model: optional(token),
    upstream_auth_header_name: optional(fc.constantFrom('Authorization', 'api-key', 'X-Api-Key')),
    upstream_auth_header_prefix: optional(fc.constantFrom('', 'Bearer ', 'Token ')),
    response_headers: optional(responseHeaders),
    sanitize_response: optional(fc.boolean()),
    trusted: optional(fc.boolean()),
    propagate_trace_context: scope === 'provider' ? optional(fc.boolean()) : fc.constant(undefined),
    reasoning_translation: optional(reasoningTranslation),
    rate_limit: optional(rateLimit),
    concurrency_limit: optional(concurrencyLimit),
  });

// Ranges chosen so any subset of fields is consistent with the defaults of the others
// (recovery <= 0.02 <= target, min_samples <= 20 <= window_samples).
const aimdOverrides = fc
  .record(
    {
      latency_budget_ms: fc.integer({ min: 1, max: 60_000 }),
      breach_rate_target: fc.double({ min: 0.02, max: 1, noNaN: true }),
      recovery_breach_rate: fc.double({ min: 0, max: 0.02, noNaN: true }),
      window_samples: fc.integer({ min: 20, max: 1000 }),
      min_samples: fc.integer({ min: 1, max: 20 }),
      share_step: fc.double({ min: 0.001, max: 1, noNaN: true }),
      share_decay: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
      share_floor: fc.double({ min: 0.001, max: 1, noNaN: true }),
      dwell_ms: fc.integer({ min: 0, max: 100_000 }),
      idle_recovery_ms: fc.integer({ min: 0, max: 100_000 }),
      overload_statuses: fc.uniqueArray(fc.integer({ min: 400, max: 599 }), { maxLength: 4 }),
    },
    { requiredKeys: [] },
  )
  .map((o) => compact(o as Json));

const statusMatcher = fc.oneof(
  fc.integer({ min: 1, max: 5 }),
  fc.integer({ min: 10, max: 59 }),
  fc.integer({ min: 100, max: 599 }),
);

const pool = fc
  .tuple(
    fc.array(
      fc.tuple(upstreamFields('provider'), url, optional(fc.double({ min: 0.01, max: 100, noNaN: true }))),
      {
        minLength: 1,
        maxLength: 4,
      },
    ),
    fc.constantFrom<'priority' | 'weighted_random' | undefined>('priority', 'weighted_random', undefined),
    fc.boolean(),
  )
  .chain(([entries, strategy, withFallback]) => {
    const providers = entries.map(([fields, providerUrl, weight], i) =>
      // Names make identities unique even when two entries share a url.
      compact({ ...compact(fields), url: providerUrl, name: `p${i}`, weight }),
    );
    const fallback = withFallback
      ? fc
          .record({
            enabled: optional(fc.boolean()),
            on_status: optional(fc.uniqueArray(statusMatcher, { maxLength: 4 })),
            on_rate_limit: optional(fc.boolean()),
            on_connection_error: optional(fc.boolean()),
            max_attempts: optional(fc.integer({ min: 1, max: providers.length })),
            aimd:
              strategy === 'priority'
                ? fc.oneof(fc.constant(undefined), fc.constant(false), {
                    arbitrary: aimdOverrides,
                    weight: 3,
                  })
                : optional(fc.constant(false)),
            deadline_slack: optional(fc.integer({ min: 0, max: 10_000 })),
          })
          .map(({ deadline_slack, ...rest }) => {
            // An armed deadline is at least the effective latency budget (valid whether or not the
            // controller runs).
            const budget = resolveAimd(
              rest.aimd === false || rest.aimd === undefined ? undefined : rest.aimd,
            ).latency_budget_ms;
            return compact({
              ...rest,
              first_token_timeout_ms: deadline_slack === undefined ? undefined : budget + deadline_slack,
            });
          })
      : fc.constant(undefined);
    return fc.record({ providers: fc.constant(providers), strategy: fc.constant(strategy), fallback });
  });

const single = fc.record({ url, propagate_trace_context: optional(fc.boolean()) });

const inflight = fc.record({
  inflight_limit: optional(fc.integer({ min: 0, max: 1000 })),
  account_inflight_limits: optional(fc.dictionary(label, fc.integer({ min: 0, max: 1000 }), { maxKeys: 3 })),
  batch_inflight_limit: optional(fc.integer({ min: 0, max: 1000 })),
});

const target = (withInflight: boolean) =>
  fc
    .tuple(
      fc.oneof(single, pool),
      upstreamFields('target'),
      withInflight ? inflight : fc.constant({}),
      optional(fc.array(token, { maxLength: 3 })),
    )
    .map(([form, fields, limits, keys]) =>
      compact({ ...compact(fields), ...compact(form), ...compact(limits), keys }),
    );

const auth = fc
  .tuple(
    fc.uniqueArray(token, { maxLength: 6 }),
    fc.uniqueArray(label, { maxLength: 3 }),
    fc.array(
      fc.record({
        rate_limit: optional(rateLimit),
        concurrency_limit: optional(concurrencyLimit),
        account: optional(label),
      }),
      {
        maxLength: 3,
      },
    ),
  )
  .map(([tokens, names, definitions]) => {
    // Tokens are unique across global keys and definitions.
    const defs = names.slice(0, Math.min(definitions.length, tokens.length)).map((name, i) => {
      const d = definitions[i]!;
      return [
        name,
        compact({
          // Every other definition keeps its key in a file.
          key: i % 2 === 0 ? tokens[i] : { from_file: `/etc/gateway-keys/${name}` },
          rate_limit: d.rate_limit,
          concurrency_limit: d.concurrency_limit,
          labels: d.account === undefined ? undefined : { account: d.account },
        }),
      ] as const;
    });
    return compact({
      global_keys: tokens.length > defs.length ? tokens.slice(defs.length) : undefined,
      key_definitions: defs.length > 0 ? Object.fromEntries(defs) : undefined,
    });
  });

/** A valid bare configuration as it would be written in a file. */
export const validConfig: fc.Arbitrary<GatewayConfigInput> = fc
  .tuple(
    fc.uniqueArray(label, { minLength: 1, maxLength: 4 }),
    fc.array(fc.tuple(fc.nat(), label), { maxLength: 2 }),
    optional(fc.boolean()),
    optional(auth),
    optional(fc.subarray([...UNSUPPORTED_PARAM_NAMES], { maxLength: 4 })),
  )
  .chain(([aliases, classes, strictMode, authConfig, reject]) => {
    const classKeys = [...new Set(classes.map(([i, cls]) => `${aliases[i % aliases.length]}:${cls}`))];
    // Request-class pools take their in-flight limits from the default pool, so they have none.
    return fc
      .tuple(fc.tuple(...aliases.map(() => target(true))), fc.tuple(...classKeys.map(() => target(false))))
      .map(
        ([defaultTargets, classTargets]) =>
          compact({
            strict_mode: strictMode,
            auth: authConfig,
            reject_unsupported_params: reject,
            targets: Object.fromEntries([
              ...aliases.map((alias, i) => [alias, defaultTargets[i]]),
              ...classKeys.map((key, i) => [key, classTargets[i]]),
            ]),
          }) as GatewayConfigInput,
      );
  });
