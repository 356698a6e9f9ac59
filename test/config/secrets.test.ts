import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKeyIndex } from '../../src/gateway/auth/keys.js';
import { compileRuntime } from '../../src/gateway/runtime/compile.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { MAX_SECRET_FILE_BYTES } from '../../src/gateway/config/secret-file.js';
import { resolveSecrets, type ResolveOptions } from '../../src/gateway/config/secrets.js';
import { ROOT } from '../helpers/process.js';

let dir: string;
beforeAll(async () => {
  await mkdir(join(ROOT, 'test/.tmp'), { recursive: true });
  dir = await mkdtemp(join(ROOT, 'test/.tmp/secrets-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const URL = 'http://127.0.0.1:9/v1';

function parsed(config: unknown) {
  const result = parseConfigText(JSON.stringify(config), 'config.json');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

async function resolve(config: unknown, options: ResolveOptions = {}) {
  return resolveSecrets(parsed(config), { env: {}, ...options });
}

async function file(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** A config whose upstream key and one client key are references. */
const withRefs = (clientRef: unknown, upstreamRef: unknown) => ({
  targets: { a: { url: URL, keys: ['team-a'], gateway_key: upstreamRef } },
  auth: { key_definitions: { 'team-a': { key: clientRef } } },
});

async function issuesOf(config: unknown, options: ResolveOptions = {}) {
  const result = await resolve(config, options);
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.issues;
}

describe('resolving references', () => {
  it('reads a file without its one trailing newline, and an environment variable', async () => {
    const client = await file('client-lf', 'sk-client-0001\n');
    const result = await resolve(withRefs({ from_file: client }, { from_env: 'UP_KEY' }), {
      env: { UP_KEY: 'sk-upstream-0001' },
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.auth?.key_definitions?.['team-a']?.key).toBe('sk-client-0001');
    expect(result.config.targets.a?.gateway_key).toBe('sk-upstream-0001');
    expect([...result.references.files.keys()]).toEqual([client]);
    expect(result.references.env).toEqual(['UP_KEY']);
  });

  it.each([
    ['\\n', 'k-1\n', 'k-1'],
    ['\\r\\n', 'k-2\r\n', 'k-2'],
    ['none', 'k-3', 'k-3'],
  ])('removes one trailing newline (%s), no more', async (_label, content, expected) => {
    const path = await file(`nl-${expected}`, content);
    const result = await resolve(withRefs({ from_file: path }, 'sk-up'));
    expect(result.ok && result.config.auth?.key_definitions?.['team-a']?.key).toBe(expected);
  });

  it('keeps literal values as they are and references nothing then', async () => {
    const result = await resolve(withRefs('sk-literal', 'sk-up'));
    expect(result.ok && result.config.targets.a?.gateway_key).toBe('sk-up');
    expect(result.ok && result.references.files.size + result.references.env.length).toBe(0);
  });

  it('resolves a provider entry, global keys and target keys; a referenced entry is always a token', async () => {
    const up = await file('pool-up', 'sk-pool-up\n');
    // The file holds a definition's *name*: as a reference it must still be a token, not the name.
    const nameLike = await file('name-like', 'team-a\n');
    const config = {
      targets: {
        pool: {
          providers: [{ url: URL, gateway_key: { from_file: up } }],
          keys: [{ from_file: nameLike }],
        },
      },
      auth: {
        global_keys: [{ from_env: 'GLOBAL' }],
        key_definitions: { 'team-a': { key: 'sk-team-a' } },
      },
    };
    const result = await resolve(config, { env: { GLOBAL: 'sk-global' } });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.targets.pool?.providers?.[0]?.gateway_key).toBe('sk-pool-up');
    expect(result.config.auth?.global_keys).toEqual([{ token: 'sk-global' }]);
    expect(result.config.targets.pool?.keys).toEqual([{ token: 'team-a' }]);
    const built = buildKeyIndex(result.config.auth, result.config.targets);
    if (!built.ok) throw new Error(JSON.stringify(built.problems));
    const pool = built.index.target('pool')!;
    expect(pool.authenticate('Bearer team-a').ok).toBe(true);
    expect(pool.authenticate('Bearer sk-team-a').ok).toBe(false);
    expect(pool.authenticate('Bearer sk-global').ok).toBe(true);
  });

  it('compiles the resolved keys into the upstream header', async () => {
    const up = await file('compiled-up', 'sk-compiled\n');
    const result = await resolve({
      targets: { a: { url: URL, gateway_key: { from_file: up }, upstream_auth_header_name: 'x-api-key' } },
    });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const compiled = compileRuntime(result.config, 'h', undefined, {
      enforceBatchInflight: false,
      batchLimiter: undefined,
      aimd: undefined,
      sharedLimits: undefined,
    });
    expect(compiled.ok && compiled.table.routes.get('a')?.providers[0]?.authHeader).toEqual([
      'x-api-key',
      'Bearer sk-compiled',
    ]);
  });
});

describe('references that cannot be resolved', () => {
  it('names the path and the errno of a missing file', async () => {
    const missing = join(dir, 'absent', 'team-a');
    expect(await issuesOf(withRefs({ from_file: missing }, 'sk-up'))).toEqual([
      {
        path: '$.auth.key_definitions["team-a"].key.from_file',
        message: `cannot read ${missing}: no such file (ENOENT)`,
      },
    ]);
  });

  it('refuses an empty file, and a file holding only its newline', async () => {
    const empty = await file('empty', '');
    const newline = await file('newline', '\n');
    expect(await issuesOf(withRefs({ from_file: empty }, { from_file: newline }))).toEqual([
      { path: '$.auth.key_definitions["team-a"].key.from_file', message: `${empty} is empty` },
      { path: '$.targets.a.gateway_key.from_file', message: `${newline} is empty` },
    ]);
  });

  it('refuses an unset or empty environment variable', async () => {
    expect(
      await issuesOf(withRefs({ from_env: 'UNSET_KEY' }, { from_env: 'EMPTY_KEY' }), {
        env: { EMPTY_KEY: '' },
      }),
    ).toEqual([
      {
        path: '$.auth.key_definitions["team-a"].key.from_env',
        message: 'environment variable UNSET_KEY is not set',
      },
      { path: '$.targets.a.gateway_key.from_env', message: 'environment variable EMPTY_KEY is empty' },
    ]);
  });

  it('refuses a directory, a FIFO, an oversized file and invalid UTF-8', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const big = await file('big', Buffer.alloc(MAX_SECRET_FILE_BYTES + 1, 0x61));
    const binary = await file('binary', Buffer.from([0xff, 0xfe, 0x41]));
    const config = {
      targets: {
        a: {
          providers: [
            { url: URL, name: 'dir', gateway_key: { from_file: dir } },
            { url: URL, name: 'fifo', gateway_key: { from_file: fifo } },
            { url: URL, name: 'big', gateway_key: { from_file: big } },
            { url: URL, name: 'bin', gateway_key: { from_file: binary } },
          ],
        },
      },
    };
    expect((await issuesOf(config)).map((i) => i.message)).toEqual([
      `cannot read ${dir}: it is a directory (EISDIR)`,
      `cannot read ${fifo}: not a regular file (ENOTFILE)`,
      `cannot read ${big}: larger than ${MAX_SECRET_FILE_BYTES} bytes: a key file holds one key (EFBIG)`,
      `cannot read ${binary}: the file is not valid UTF-8`,
    ]);
  });

  it('applies the checks of a literal to the resolved value, naming the source and not the value', async () => {
    const upstream = await file('two-lines-up', 'sk-first-line\nsk-second-line\n');
    const client = await file('two-lines-client', 'sk-client part-two\n');
    const issues = await issuesOf(withRefs({ from_file: client }, { from_file: upstream }));
    expect(issues).toEqual([
      {
        path: '$.auth.key_definitions["team-a"].key.from_file',
        message: `content of ${client}: a key containing whitespace can never be presented`,
      },
      {
        path: '$.targets.a.gateway_key.from_file',
        message: `content of ${upstream}: must not contain line breaks or NUL characters`,
      },
    ]);
    const text = JSON.stringify(issues);
    for (const part of ['sk-first-line', 'sk-second-line', 'sk-client', 'part-two'])
      expect(text).not.toContain(part);
  });

  it('applies the token-ownership rule to resolved keys', async () => {
    const same = await file('same', 'sk-shared\n');
    const config = {
      targets: { a: { url: URL, keys: [] } },
      auth: {
        global_keys: ['sk-shared'],
        key_definitions: { one: { key: { from_file: same } }, two: { key: { from_env: 'SAME' } } },
      },
    };
    expect(await issuesOf(config, { env: { SAME: 'sk-shared' } })).toEqual([
      {
        path: '$.auth.key_definitions.one.key',
        message: 'the same token is already used by global_keys[0]; each token must belong to one key',
      },
      {
        path: '$.auth.key_definitions.two.key',
        message: 'the same token is already used by global_keys[0]; each token must belong to one key',
      },
    ]);
  });

  it('never puts a resolved value into an issue', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Keys of every kind, including ones that fail the checks (whitespace, line breaks, NUL).
        fc.string({
          unit: fc.constantFrom('a', 'b', '7', ' ', '\t', '\n', '\r', '\0', 'é'),
          minLength: 3,
          maxLength: 24,
        }),
        async (secret) => {
          const path = await file('property', secret);
          const result = await resolve(
            {
              targets: { a: { url: URL, keys: [{ from_file: path }], gateway_key: { from_env: 'K' } } },
              auth: { key_definitions: { d: { key: { from_file: path } } } },
            },
            { env: { K: secret } },
          );
          if (result.ok) return;
          const core = secret.replace(/(\r?\n)$/, '');
          for (const issue of result.issues)
            if (core.trim().length >= 3) expect(issue.message).not.toContain(core);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('lists every referenced file with a fingerprint, on failure too', async () => {
    const good = await file('listed-good', 'sk-good\n');
    const missing = join(dir, 'listed-missing');
    const result = await resolve(withRefs({ from_file: good }, { from_file: missing }));
    expect(result.ok).toBe(false);
    expect([...result.references.files.keys()]).toEqual([good, missing]);
    expect(result.references.files.get(missing)).toBe('!ENOENT');
    expect(result.references.files.get(good)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('placeholders (validate --skip-references)', () => {
  it('reads nothing and stands in distinct values that pass every check', async () => {
    const missing = join(dir, 'never-read');
    const result = await resolve(
      {
        targets: { a: { url: URL, keys: [{ from_file: missing }], gateway_key: { from_env: 'UNSET' } } },
        auth: { key_definitions: { d: { key: { from_file: missing } } } },
      },
      { placeholders: true },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const d = result.config.auth?.key_definitions?.d?.key;
    expect(result.config.targets.a?.keys).toEqual([
      { token: expect.stringMatching(/^unresolved-reference-/) },
    ]);
    expect(d).not.toBe((result.config.targets.a?.keys?.[0] as { token: string }).token);
    expect(result.references.env).toEqual(['UNSET']);
  });
});

describe('the shape of a reference', () => {
  const at = (gatewayKey: unknown) => {
    const result = parseConfigText(
      JSON.stringify({ targets: { a: { url: URL, gateway_key: gatewayKey } } }),
      'c.json',
    );
    return result.ok ? [] : result.issues.map(({ path, message }) => ({ path, message }));
  };

  it.each([
    [
      {},
      '$.targets.a.gateway_key',
      'a reference needs `from_file` (a file path) or `from_env` (an environment variable name)',
    ],
    [
      { from_file: '/a', from_env: 'B' },
      '$.targets.a.gateway_key.from_env',
      'a reference has either `from_file` or `from_env`, not both',
    ],
    [
      { from_file: 'keys/a' },
      '$.targets.a.gateway_key.from_file',
      'must be an absolute path (starting with `/`)',
    ],
    [
      { from_env: '1BAD' },
      '$.targets.a.gateway_key.from_env',
      'must be an environment variable name (letters, digits and `_`, not starting with a digit)',
    ],
    [
      { from_fil: '/a' },
      '$.targets.a.gateway_key.from_fil',
      'unknown field `from_fil`; did you mean `from_file`?',
    ],
    [42, '$.targets.a.gateway_key', 'must be a string or an object, got the integer 42'],
  ])('%j is refused at its path', (value, path, message) => {
    expect(at(value)).toEqual([{ path, message }]);
  });

  it('keeps the messages of a literal', () => {
    expect(at('a\nb')).toEqual([
      { path: '$.targets.a.gateway_key', message: 'must not contain line breaks or NUL characters' },
    ]);
    expect(at('')).toEqual([{ path: '$.targets.a.gateway_key', message: 'must not be empty' }]);
  });
});

describe('symlinked key files (a Secret volume)', () => {
  it('reads through `key -> ..data/key`', async () => {
    const volume = join(dir, 'volume');
    await mkdir(join(volume, '..2026_01_01'), { recursive: true });
    await writeFile(join(volume, '..2026_01_01', 'team-a'), 'sk-volume\n');
    await symlink('..2026_01_01', join(volume, '..data'));
    await symlink('..data/team-a', join(volume, 'team-a'));
    const result = await resolve(withRefs({ from_file: join(volume, 'team-a') }, 'sk-up'));
    expect(result.ok && result.config.auth?.key_definitions?.['team-a']?.key).toBe('sk-volume');
  });
});
