import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSchema } from '../../src/gateway/commands/schema.js';
import { runValidate, type ValidateOptions } from '../../src/gateway/commands/validate.js';
import { renderConfigReference } from '../../src/gateway/config/docs.js';
import { configFileJsonSchema } from '../../src/gateway/config/json-schema.js';
import { ROOT } from '../helpers/process.js';
import { EXAMPLE_FILES } from './helpers/examples.js';

function collector(): Writable & { text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString('utf8') });
}

async function validate(file: string, options: ValidateOptions = {}) {
  const out = collector();
  const err = collector();
  const code = await runValidate(file, out, err, options);
  return { code, out: out.text(), err: err.text() };
}

let dir: string;
beforeAll(async () => {
  await mkdir(join(ROOT, 'test/.tmp'), { recursive: true });
  dir = await mkdtemp(join(ROOT, 'test/.tmp/config-commands-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('validate', () => {
  it.each(EXAMPLE_FILES)('accepts %s', async (file) => {
    const { code, out, err } = await validate(file);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out.split('\n')[0]).toBe(`${file}: valid`);
  });

  it('summarizes aliases, pools and strict mode', async () => {
    const { out } = await validate('examples/pools/config.yaml');
    expect(out).toBe(
      [
        'examples/pools/config.yaml: valid',
        '  2 aliases, 3 targets: 0 single-provider targets, 3 pools',
        '  pool llama: priority, 2 providers, fallback, share controller',
        '  pool llama:batch: weighted_random, 2 providers, fallback',
        '  pool embed: weighted_random, 2 providers, fallback',
        '  auth: 1 key',
        '  strict mode: off',
        '',
      ].join('\n'),
    );
  });

  it('prints every issue with its path, message and position, and returns 1', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      'targets:\n  sim:\n    url: ftp://x\n    stratgy: priority\n  pool:\n    providers: []\n',
    );
    const { code, out, err } = await validate(file);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe(
      [
        `${file}: 3 problems`,
        '$.targets.sim.url: must be an absolute http:// or https:// URL (line 3, column 5)',
        '$.targets.sim.stratgy: unknown field `stratgy`; did you mean `strategy`? (line 4, column 5)',
        '$.targets.pool.providers: must not be empty, got an array (line 6, column 5)',
        '',
      ].join('\n'),
    );
  });

  it('reports an unreadable file', async () => {
    const { code, err } = await validate(join(dir, 'absent.json'));
    expect(code).toBe(1);
    expect(err).toBe(`${join(dir, 'absent.json')}: 1 problem\ncannot read the file: no such file\n`);
  });
});

describe('validate with key references', () => {
  const referencing = (keyFile: string) => ({
    targets: {
      a: { url: 'http://127.0.0.1:9/v1', keys: ['team-a'], gateway_key: { from_env: 'VALIDATE_UP_KEY' } },
    },
    auth: { key_definitions: { 'team-a': { key: { from_file: keyFile } } } },
  });

  it('resolves them like the gateway and lists where the keys come from', async () => {
    const keyFile = join(dir, 'team-a.key');
    await writeFile(keyFile, 'sk-validate-0001\n');
    const file = join(dir, 'refs.json');
    await writeFile(file, JSON.stringify(referencing(keyFile)));
    const { code, out, err } = await validate(file, { env: { VALIDATE_UP_KEY: 'sk-up-0001' } });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toContain(`  key references: 2 resolved: file ${keyFile}, env VALIDATE_UP_KEY\n`);
    expect(out).not.toContain('sk-validate-0001');
  });

  it('reports references that cannot be resolved with their paths, and exits 1', async () => {
    const missing = join(dir, 'absent.key');
    const file = join(dir, 'refs-missing.json');
    await writeFile(file, JSON.stringify(referencing(missing)));
    const { code, out, err } = await validate(file, { env: {} });
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toBe(
      [
        `${file}: 2 problems`,
        `$.auth.key_definitions["team-a"].key.from_file: cannot read ${missing}: no such file (ENOENT)`,
        '$.targets.a.gateway_key.from_env: environment variable VALIDATE_UP_KEY is not set',
        '',
      ].join('\n'),
    );
  });

  it('--skip-references checks their shape only', async () => {
    const file = join(dir, 'refs-skip.json');
    await writeFile(file, JSON.stringify(referencing(join(dir, 'absent.key'))));
    const { code, out } = await validate(file, { skipReferences: true, env: {} });
    expect(code).toBe(0);
    expect(out).toContain('  key references: 2 not read (--skip-references): file ');
    const broken = join(dir, 'refs-broken.json');
    await writeFile(
      broken,
      JSON.stringify({ targets: { a: { url: 'http://a', gateway_key: { from_file: 'relative/key' } } } }),
    );
    const result = await validate(broken, { skipReferences: true });
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      '$.targets.a.gateway_key.from_file: must be an absolute path (starting with `/`)',
    );
  });

  it('finds what only compiling finds: a literal key that can never be presented', async () => {
    const file = join(dir, 'spaced-key.json');
    await writeFile(file, JSON.stringify({ targets: { a: { url: 'http://a', keys: ['two words'] } } }));
    const { code, err } = await validate(file);
    expect(code).toBe(1);
    expect(err).toContain('$.targets.a.keys[0]: a key containing whitespace can never be presented');
  });
});

describe('schema', () => {
  it('prints the JSON Schema', () => {
    const out = collector();
    expect(runSchema('json', out)).toBe(0);
    expect(JSON.parse(out.text())).toEqual(configFileJsonSchema());
    expect(out.text().endsWith('}\n')).toBe(true);
  });

  it('prints the Markdown reference', () => {
    const out = collector();
    expect(runSchema('markdown', out)).toBe(0);
    expect(out.text()).toBe(renderConfigReference());
  });
});

describe('through the gateway binary', () => {
  const gateway = (...args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, 'bin/gateway.js'), ...args], { cwd: ROOT, encoding: 'utf8' });

  it('`gateway schema --markdown` prints docs/configuration.md (what `make check-docs` compares)', async () => {
    const result = gateway('schema', '--markdown');
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(await readFile(join(ROOT, 'docs/configuration.md'), 'utf8'));
  });

  it('`gateway validate --skip-references` does not read key files; without it they must exist', async () => {
    const file = join(dir, 'cli-refs.yaml');
    await writeFile(
      file,
      `targets:\n  a:\n    url: http://a\n    gateway_key: { from_file: ${join(dir, 'cli-absent.key')} }\n`,
    );
    expect(gateway('validate', '--skip-references', file).status).toBe(0);
    const result = gateway('validate', file);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `$.targets.a.gateway_key.from_file: cannot read ${join(dir, 'cli-absent.key')}`,
    );
  });

  it('`gateway validate` exits 0 for an example and 1 for a broken file', async () => {
    expect(gateway('validate', 'examples/quickstart/config.yaml').status).toBe(0);
    const file = join(dir, 'broken.json');
    await writeFile(file, '{"targets": {"a": {"url": "http://a", "strict_mode": true}}}');
    const result = gateway('validate', file);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('$.targets.a.strict_mode: `strict_mode` is global only');
  });
});
