import { describe, expect, it } from 'vitest';
import { formatIssue, formatPath } from '../../src/gateway/config/issues.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { closestMatch, editDistance } from '../../src/gateway/config/suggest.js';

const issuesOf = (config: unknown) => {
  const result = parseConfigText(JSON.stringify(config), 'config.json');
  if (result.ok) throw new Error('expected issues');
  return result.issues.map(({ path, message }) => ({ path, message }));
};

const target = { url: 'http://127.0.0.1:8000/v1' };
const poolOf = (extra: object) => ({ providers: [{ url: 'http://a' }, { url: 'http://b' }], ...extra });

describe('formatPath', () => {
  it.each([
    [[], '$'],
    [['targets', 'sim', 'url'], '$.targets.sim.url'],
    [['targets', 'my-model', 'providers', 1, 'url'], '$.targets["my-model"].providers[1].url'],
    [['targets', 'llama:fast'], '$.targets["llama:fast"]'],
    [['targets', '1abc'], '$.targets["1abc"]'],
    [['a', 'say "hi"'], '$.a["say \\"hi\\""]'],
    [['_under', 'x9'], '$._under.x9'],
  ])('%j -> %s', (segments, expected) => {
    expect(formatPath(segments)).toBe(expected);
  });
});

describe('formatIssue', () => {
  it('prints the path and message, and the position when known', () => {
    expect(formatIssue({ path: '$.a', message: 'is required' })).toBe('$.a: is required');
    expect(formatIssue({ path: '$.a', message: 'is required', line: 3, column: 5 })).toBe(
      '$.a: is required (line 3, column 5)',
    );
    // The whole document needs no path.
    expect(formatIssue({ path: '$', message: 'YAML syntax error: x', line: 2, column: 1 })).toBe(
      'YAML syntax error: x (line 2, column 1)',
    );
  });
});

describe('suggestions', () => {
  it.each([
    ['strategy', 'strategy', 0],
    ['stratgy', 'strategy', 1],
    ['stratgey', 'strategy', 1],
    ['kitten', 'sitting', 3],
    ['', 'abc', 3],
  ])('editDistance(%s, %s) = %d', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });

  it('suggests close keys and ignores case and dashes', () => {
    const keys = ['strategy', 'fallback', 'rate_limit', 'upstream_auth_header_name', 'url'];
    expect(closestMatch('stratgey', keys)).toBe('strategy');
    expect(closestMatch('Rate-Limit', keys)).toBe('rate_limit');
    expect(closestMatch('upstream-auth-header-name', keys)).toBe('upstream_auth_header_name');
    expect(closestMatch('urls', keys)).toBe('url');
    expect(closestMatch('banana', keys)).toBeUndefined();
    expect(closestMatch('xyz', keys)).toBeUndefined();
  });
});

describe('unknown keys', () => {
  it('reports each unknown key at its own path, with did-you-mean when close', () => {
    expect(
      issuesOf({ targets: { sim: { ...target, stratgy: 'priority', gatway_model: 'x', bogus: 1 } } }),
    ).toEqual([
      { path: '$.targets.sim.stratgy', message: 'unknown field `stratgy`; did you mean `strategy`?' },
      {
        path: '$.targets.sim.gatway_model',
        message: 'unknown field `gatway_model`; did you mean `gateway_model`?',
      },
      { path: '$.targets.sim.bogus', message: 'unknown field `bogus`' },
    ]);
  });

  it('suggests at the root and in nested objects', () => {
    expect(issuesOf({ target: {} })).toEqual([
      { path: '$.targets', message: 'is required' },
      { path: '$.target', message: 'unknown field `target`; did you mean `targets`?' },
    ]);
    expect(issuesOf({ targets: { p: poolOf({ fallback: { on_statuses: [5] } }) } })).toEqual([
      {
        path: '$.targets.p.fallback.on_statuses',
        message: 'unknown field `on_statuses`; did you mean `on_status`?',
      },
    ]);
  });

  it('points a field written one level too high to the object it belongs in', () => {
    expect(issuesOf({ targets: { sim: { ...target, max_concurrent_requests: 3 } } })).toEqual([
      {
        path: '$.targets.sim.max_concurrent_requests',
        message:
          'unknown field `max_concurrent_requests`; did you mean `concurrency_limit.max_concurrent_requests`? (it belongs inside `concurrency_limit`)',
      },
    ]);
  });

  it('points a pool-level field on a provider entry to the target', () => {
    expect(issuesOf({ targets: { p: { providers: [{ url: 'http://a', inflight_limit: 3 }] } } })).toEqual([
      {
        path: '$.targets.p.providers[0].inflight_limit',
        message: 'unknown field `inflight_limit` here: `inflight_limit` is a field of $.targets.p',
      },
    ]);
  });

  it('lists the known fields of a small object when nothing is close', () => {
    const [issue] = issuesOf({
      targets: { s: { ...target, rate_limit: { requests_per_second: 1, burst_size: 1, zzz: 1 } } },
    });
    expect(issue).toEqual({
      path: '$.targets.s.rate_limit.zzz',
      message: 'unknown field `zzz` (known fields: requests_per_second, burst_size)',
    });
  });

  it('holds back cross-field issues of an object that has an unknown key', () => {
    // Without the typo the pool would also be told that aimd needs strategy priority.
    expect(
      issuesOf({
        targets: { p: poolOf({ stratgey: 'priority', fallback: { aimd: { share_floor: 0.3 } } }) },
      }),
    ).toEqual([
      { path: '$.targets.p.stratgey', message: 'unknown field `stratgey`; did you mean `strategy`?' },
    ]);
  });
});

describe('unions', () => {
  it('reports the branch the value was written for, not every branch', () => {
    expect(
      issuesOf({
        targets: {
          p: poolOf({ strategy: 'priority', fallback: { aimd: { latency_budget: 100, share_floor: 2 } } }),
        },
      }),
    ).toEqual([
      // In the order the file reads.
      {
        path: '$.targets.p.fallback.aimd.latency_budget',
        message: 'unknown field `latency_budget`; did you mean `latency_budget_ms`?',
      },
      { path: '$.targets.p.fallback.aimd.share_floor', message: 'must be <= 1, got the integer 2' },
    ]);
  });

  it('says which kinds are allowed when no branch accepts the kind of value', () => {
    expect(issuesOf({ targets: { p: poolOf({ strategy: 'priority', fallback: { aimd: 'off' } }) } })).toEqual(
      [{ path: '$.targets.p.fallback.aimd', message: 'must be `false` or an object, got the string "off"' }],
    );
  });

  it('reports a url-and-providers target once, not per union branch', () => {
    const issues = issuesOf({ targets: { p: { url: 'http://x', providers: [{ url: 'http://a' }] } } });
    expect(issues).toEqual([
      {
        path: '$.targets.p.url',
        message:
          'a target has either `url` (single provider) or `providers` (pool), not both: set the url on a provider entry',
      },
    ]);
  });
});

describe('type messages', () => {
  it.each([
    [{ targets: [] }, '$.targets', 'must be an object, got an array'],
    [{ targets: { a: 'http://x' } }, '$.targets.a', 'must be an object, got the string "http://x"'],
    [{ targets: { a: { url: 5 } } }, '$.targets.a.url', 'must be a string, got the integer 5'],
    [{ targets: { a: { url: null } } }, '$.targets.a.url', 'must be a string, got null'],
    [
      { targets: { a: { ...target, keys: 'k' } } },
      '$.targets.a.keys',
      'must be an array, got the string "k"',
    ],
    [
      { targets: { a: { ...target, inflight_limit: 2 ** 60 } } },
      '$.targets.a.inflight_limit',
      'must be an integer between -9007199254740991 and 9007199254740991',
    ],
  ])('%j', (config, path, message) => {
    const issues = issuesOf(config);
    expect(issues.map((i) => i.path)).toEqual([path]);
    expect(issues[0]!.message).toContain(message);
  });
});
