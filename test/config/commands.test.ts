import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSchema } from '../../src/gateway/commands/schema.js';
import { runValidate } from '../../src/gateway/commands/validate.js';
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

async function validate(file: string) {
  const out = collector();
  const err = collector();
  const code = await runValidate(file, out, err);
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
    expect(err).toContain(`$: cannot read ${join(dir, 'absent.json')}: no such file`);
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

  it('`gateway validate` exits 0 for an example and 1 for a broken file', async () => {
    expect(gateway('validate', 'examples/quickstart/config.yaml').status).toBe(0);
    const file = join(dir, 'broken.json');
    await writeFile(file, '{"targets": {"a": {"url": "http://a", "strict_mode": true}}}');
    const result = gateway('validate', file);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('$.targets.a.strict_mode: `strict_mode` is global only');
  });
});
