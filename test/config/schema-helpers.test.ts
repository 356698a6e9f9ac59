import { describe, expect, it } from 'vitest';
import {
  AIMD_DEFAULTS,
  aimdApplies,
  EFFORTS,
  GatewayConfigSchema,
  isPoolTarget,
  providerIdentity,
  requestClassOf,
  resolveAimd,
  resolveTimeouts,
  TIMEOUT_DEFAULTS,
  type TargetConfig,
} from '../../src/gateway/config/schema/index.js';

const target = (input: object): TargetConfig =>
  GatewayConfigSchema.parse({ targets: { t: input } }).targets.t!;

const twoProviders = [{ url: 'http://a' }, { url: 'http://b' }];

describe('schema constants and helpers', () => {
  it('exports the seven efforts in order', () => {
    expect(EFFORTS).toEqual(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
  });

  it('freezes the AIMD defaults of the design', () => {
    expect(AIMD_DEFAULTS).toEqual({
      latency_budget_ms: 2000,
      breach_rate_target: 0.1,
      recovery_breach_rate: 0.02,
      window_samples: 100,
      min_samples: 20,
      share_step: 0.05,
      share_decay: 0.5,
      share_floor: 0.05,
      dwell_ms: 10000,
      idle_recovery_ms: 30000,
      overload_statuses: [429, 503, 529],
    });
    expect(Object.isFrozen(AIMD_DEFAULTS)).toBe(true);
    expect(Object.isFrozen(AIMD_DEFAULTS.overload_statuses)).toBe(true);
  });

  it('resolves AIMD overrides over the defaults', () => {
    expect(resolveAimd(undefined)).toEqual(AIMD_DEFAULTS);
    expect(resolveAimd({ share_floor: 0.2, overload_statuses: [500] })).toEqual({
      ...AIMD_DEFAULTS,
      share_floor: 0.2,
      overload_statuses: [500],
    });
  });

  it('keeps AIMD overrides as written in the parsed config', () => {
    const parsed = target({
      providers: twoProviders,
      strategy: 'priority',
      fallback: { aimd: { dwell_ms: 5 } },
    });
    expect(parsed.fallback!.aimd).toEqual({ dwell_ms: 5 });
    expect(
      target({ providers: twoProviders, strategy: 'priority', fallback: {} }).fallback!.aimd,
    ).toBeUndefined();
  });

  it.each([
    ['a priority pool with fallback', { providers: twoProviders, strategy: 'priority', fallback: {} }, true],
    [
      'with aimd overrides',
      { providers: twoProviders, strategy: 'priority', fallback: { aimd: { dwell_ms: 1 } } },
      true,
    ],
    ['without fallback', { providers: twoProviders, strategy: 'priority' }, false],
    [
      'with fallback disabled',
      { providers: twoProviders, strategy: 'priority', fallback: { enabled: false } },
      false,
    ],
    ['with aimd: false', { providers: twoProviders, strategy: 'priority', fallback: { aimd: false } }, false],
    ['with one provider', { providers: [{ url: 'http://a' }], strategy: 'priority', fallback: {} }, false],
    ['weighted_random', { providers: twoProviders, fallback: {} }, false],
    ['a single-provider target', { url: 'http://a' }, false],
  ])('the share controller applies to %s: %s', (_name, input, expected) => {
    expect(aimdApplies(target(input))).toBe(expected);
  });

  it('tells pools from single-provider targets', () => {
    expect(isPoolTarget(target({ providers: twoProviders }))).toBe(true);
    expect(isPoolTarget(target({ url: 'http://a' }))).toBe(false);
  });

  it('identifies a provider by name, else by url', () => {
    expect(providerIdentity({ url: 'http://a', name: 'primary' })).toBe('primary');
    expect(providerIdentity({ url: 'http://a' })).toBe('http://a');
  });

  it.each([
    ['llama:fast', ['llama', 'llama:fast'], { alias: 'llama', requestClass: 'fast' }],
    ['llama3:8b', ['llama3:8b'], undefined],
    ['llama3:8b:fast', ['llama3:8b', 'llama3:8b:fast'], { alias: 'llama3:8b', requestClass: 'fast' }],
    ['llama', ['llama'], undefined],
    [':x', [':x', ''], undefined],
    ['llama:', ['llama', 'llama:'], { alias: 'llama', requestClass: '' }],
  ])('requestClassOf(%j)', (key, keys, expected) => {
    expect(requestClassOf(key, keys)).toEqual(expected);
  });
});

describe('resolveTimeouts: provider entry, then target, then top level, field by field', () => {
  it('takes each field from the most specific level that sets it, else the default', () => {
    expect(
      resolveTimeouts({ connect_ms: 1 }, { connect_ms: 2, headers_ms: 3 }, { headers_ms: 4, idle_ms: 5 }),
    ).toEqual({
      connectMs: 1,
      headersMs: 3,
      idleMs: 5,
      totalMs: TIMEOUT_DEFAULTS.total_ms,
      streamTotalMs: undefined,
    });
  });

  it('the default total applies to non-streamed attempts only; a configured one to streams too', () => {
    expect(resolveTimeouts(undefined, undefined, undefined)).toMatchObject({
      totalMs: TIMEOUT_DEFAULTS.total_ms,
      streamTotalMs: undefined,
    });
    expect(resolveTimeouts(undefined, { total_ms: 42 }, undefined)).toMatchObject({
      totalMs: 42,
      streamTotalMs: 42,
    });
  });
});
