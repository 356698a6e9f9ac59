import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  authenticate,
  buildKeyIndex,
  parseBearer,
  type AuthConfigInput,
  type KeyIndex,
  type TargetAuth,
  type TargetKeysInput,
} from '../../src/gateway/auth/keys.js';

function index(auth: AuthConfigInput | undefined, targets: Record<string, TargetKeysInput>): KeyIndex {
  const built = buildKeyIndex(auth, targets);
  if (!built.ok) throw new Error(`unexpected problems: ${JSON.stringify(built.problems)}`);
  return built.index;
}

function target(idx: KeyIndex, alias: string): TargetAuth {
  const t = idx.target(alias);
  if (t === undefined) throw new Error(`no target ${alias}`);
  return t;
}

const fingerprint = (key: string): string =>
  `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 8)}`;

const auth: AuthConfigInput = {
  global_keys: ['sk-global-0001'],
  key_definitions: {
    'team-a': {
      key: 'sk-team-a-0001',
      rate_limit: { requests_per_second: 5, burst_size: 10 },
      concurrency_limit: { max_concurrent_requests: 3 },
      labels: { account: 'acme', tier: 'gold' },
    },
    'team-b': { key: 'sk-team-b-0001' },
    unused: { key: 'sk-unused-0001', labels: { account: 'ghost' } },
  },
};

const targets: Record<string, TargetKeysInput> = {
  open: {},
  llama: { keys: ['team-a', 'sk-literal-0001'] },
  qwen: { keys: ['team-b'] },
  'llama:interactive': { keys: ['team-a'] },
  locked: { keys: [] },
};

describe('parseBearer', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer    abc', 'abc'],
    ['  Bearer abc  ', 'abc'],
    ['Bearer\tabc', 'abc'],
  ])('accepts %j', (value, token) => {
    expect(parseBearer(value)).toBe(token);
  });

  it.each([
    '',
    'Bearer',
    'Bearer ',
    'Bearer    ',
    'Bearerabc',
    'Basic abc',
    'Bearer a b',
    'abc',
    'Token abc',
  ])('rejects %j', (value) => {
    expect(parseBearer(value)).toBeNull();
  });
});

describe('authenticate', () => {
  const idx = index(auth, targets);

  it('lets anything through an open target without an identity, header or not', () => {
    const open = target(idx, 'open');
    expect(open.open).toBe(true);
    expect(authenticate(open, undefined)).toEqual({ ok: true, identity: null });
    expect(authenticate(open, 'Bearer wrong')).toEqual({ ok: true, identity: null });
    expect(authenticate(open, 'garbage')).toEqual({ ok: true, identity: null });
  });

  it('refuses a missing, malformed or unknown token on a keyed target', () => {
    const llama = target(idx, 'llama');
    expect(authenticate(llama, undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(authenticate(llama, 'Basic c2stdGVhbS1h')).toEqual({ ok: false, reason: 'malformed' });
    expect(authenticate(llama, 'Bearer sk-nope')).toEqual({ ok: false, reason: 'invalid' });
    expect(authenticate(llama, 'Bearer sk-team-a-000')).toEqual({ ok: false, reason: 'invalid' });
    expect(authenticate(llama, 'Bearer sk-team-a-00011')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('identifies a named key by its definition, with its account, labels and limits', () => {
    const result = authenticate(target(idx, 'llama'), 'bearer   sk-team-a-0001');
    expect(result).toEqual({
      ok: true,
      identity: {
        keyId: 'team-a',
        definitionName: 'team-a',
        account: 'acme',
        labels: { account: 'acme', tier: 'gold' },
        rateLimit: { requests_per_second: 5, burst_size: 10 },
        concurrencyLimit: { max_concurrent_requests: 3 },
      },
    });
  });

  it('identifies a literal key by a fingerprint of its digest, never the key', () => {
    const result = authenticate(target(idx, 'llama'), 'Bearer sk-literal-0001');
    expect(result.ok && result.identity).toEqual({
      keyId: fingerprint('sk-literal-0001'),
      definitionName: undefined,
      account: undefined,
      labels: {},
      rateLimit: undefined,
      concurrencyLimit: undefined,
    });
    expect(JSON.stringify(result)).not.toContain('sk-literal');
  });

  it('accepts a key only on the targets that list it', () => {
    expect(authenticate(target(idx, 'qwen'), 'Bearer sk-team-a-0001')).toEqual({
      ok: false,
      reason: 'invalid',
    });
    expect(authenticate(target(idx, 'qwen'), 'Bearer sk-team-b-0001').ok).toBe(true);
    expect(authenticate(target(idx, 'llama:interactive'), 'Bearer sk-team-a-0001').ok).toBe(true);
    expect(authenticate(target(idx, 'llama'), 'Bearer sk-unused-0001').ok).toBe(false);
  });

  it('adds global keys to every keyed target, including one with an empty key list', () => {
    for (const alias of ['llama', 'qwen', 'llama:interactive', 'locked']) {
      const result = authenticate(target(idx, alias), 'Bearer sk-global-0001');
      expect(result.ok && result.identity?.keyId).toBe(fingerprint('sk-global-0001'));
    }
    expect(authenticate(target(idx, 'locked'), 'Bearer sk-team-a-0001').ok).toBe(false);
  });

  it('fails closed on a target with an empty key list and no global keys', () => {
    const locked = target(index(undefined, { locked: { keys: [] } }), 'locked');
    expect(locked.open).toBe(false);
    expect(locked.keyCount).toBe(0);
    expect(authenticate(locked, 'Bearer anything')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('shares one identity object per key across targets', () => {
    const a = authenticate(target(idx, 'llama'), 'Bearer sk-team-a-0001');
    const b = authenticate(target(idx, 'llama:interactive'), 'Bearer sk-team-a-0001');
    expect(a.ok && b.ok && a.identity === b.identity).toBe(true);
    expect(a).toBe(b);
  });

  it('gives a literal entry equal to a definition key that definition identity and limits', () => {
    const idx2 = index(
      {
        key_definitions: {
          limited: { key: 'sk-x-0001', rate_limit: { requests_per_second: 1, burst_size: 1 } },
        },
      },
      {
        t: { keys: ['sk-x-0001'] },
      },
    );
    const result = authenticate(target(idx2, 't'), 'Bearer sk-x-0001');
    expect(result.ok && result.identity?.keyId).toBe('limited');
    expect(result.ok && result.identity?.rateLimit).toEqual({ requests_per_second: 1, burst_size: 1 });
  });

  it('resolves definition names in global_keys', () => {
    const idx2 = index(
      { global_keys: ['admin'], key_definitions: { admin: { key: 'sk-admin-0001' } } },
      {
        t: { keys: [] },
      },
    );
    const result = authenticate(target(idx2, 't'), 'Bearer sk-admin-0001');
    expect(result.ok && result.identity?.keyId).toBe('admin');
  });

  it('lists named keys for per-key limiters', () => {
    expect(idx.definitions().map((d) => d.keyId)).toEqual(['team-a', 'team-b', 'unused']);
  });
});

describe('visibleAliases (GET /v1/models)', () => {
  const idx = index(auth, targets);

  it('shows only open targets without a valid token', () => {
    expect(idx.visibleAliases(undefined)).toEqual(['open']);
    expect(idx.visibleAliases('Bearer sk-nope')).toEqual(['open']);
    expect(idx.visibleAliases('nonsense')).toEqual(['open']);
  });

  it('shows open targets and the targets accepting the token, in configuration order', () => {
    expect(idx.visibleAliases('Bearer sk-team-a-0001')).toEqual(['open', 'llama', 'llama:interactive']);
    expect(idx.visibleAliases('Bearer sk-team-b-0001')).toEqual(['open', 'qwen']);
    expect(idx.visibleAliases('Bearer sk-global-0001')).toEqual([
      'open',
      'llama',
      'qwen',
      'llama:interactive',
      'locked',
    ]);
    expect(idx.visibleAliases('Bearer sk-unused-0001')).toEqual(['open']);
  });
});

describe('buildKeyIndex problems', () => {
  it('reports two definitions sharing a key', () => {
    const built = buildKeyIndex({ key_definitions: { a: { key: 'sk-same' }, b: { key: 'sk-same' } } }, {});
    expect(built).toEqual({
      ok: false,
      problems: [{ path: 'auth.key_definitions.b.key', message: 'the same key is already defined as "a"' }],
    });
  });

  it('reports keys that can never be presented', () => {
    const built = buildKeyIndex(
      { global_keys: [''], key_definitions: { a: { key: 'sk has space' } } },
      {
        t: { keys: ['a', 'ok-key', ' '] },
      },
    );
    expect(!built.ok && built.problems.map((p) => p.path)).toEqual([
      'auth.key_definitions.a.key',
      'auth.global_keys[0]',
      'targets.t.keys[2]',
    ]);
  });
});

describe('authenticate properties', () => {
  const token = fc.stringMatching(/^[A-Za-z0-9._~+/=-]{1,40}$/);

  it('accepts exactly the tokens in the target key set plus the global keys', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(token, { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.nat(),
        token,
        (keys, targetCount, globalCount, probe) => {
          const own = keys.slice(0, 1 + (targetCount % keys.length));
          const globals = keys.slice(own.length, own.length + (globalCount % (keys.length - own.length + 1)));
          const t = target(index({ global_keys: globals }, { t: { keys: own } }), 't');
          for (const candidate of [...keys, probe]) {
            const expected = own.includes(candidate) || globals.includes(candidate);
            expect(authenticate(t, `Bearer ${candidate}`).ok).toBe(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
