import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfigText, type ConfigResult } from '../../src/gateway/config/load.js';

const sha256 = (bytes: string | Buffer): string => createHash('sha256').update(bytes).digest('hex');

const BARE_YAML = `targets:
  sim:
    url: http://127.0.0.1:8000/v1
`;

const envelope = (
  spec: string,
  head = 'apiVersion: llm-gateway.dev/v1alpha1\nkind: GatewayConfig\n',
): string =>
  `${head}metadata:\n  name: gw\n  uid: 1234\nspec:\n${spec
    .split('\n')
    .map((line) => (line ? `  ${line}` : line))
    .join('\n')}`;

function issues(result: ConfigResult) {
  if (result.ok) throw new Error('expected issues');
  return result.issues;
}

function config(result: ConfigResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

describe('formats', () => {
  it('reads YAML and JSON to the same config', () => {
    const fromYaml = config(parseConfigText(BARE_YAML, 'a.yaml'));
    const fromJson = config(
      parseConfigText('{"targets": {"sim": {"url": "http://127.0.0.1:8000/v1"}}}', 'a.json'),
    );
    expect(fromYaml).toEqual(fromJson);
    expect(fromYaml.targets.sim!.url).toBe('http://127.0.0.1:8000/v1');
  });

  it('chooses the syntax by extension: YAML text in a .json file is a JSON error', () => {
    const [issue] = issues(parseConfigText(BARE_YAML, 'config.json'));
    expect(issue!.path).toBe('$');
    // `t` could start `true`; the `a` after it is the first character that cannot be JSON.
    expect(issue).toMatchObject({ line: 1, column: 2 });
    expect(issue!.message).toBe("JSON syntax error: Unexpected token 'a'");
  });

  it('accepts .yml and upper-case extensions', () => {
    expect(parseConfigText(BARE_YAML, 'config.yml').ok).toBe(true);
    expect(parseConfigText('{"targets": {"a": {"url": "http://a"}}}', 'CONFIG.JSON').ok).toBe(true);
  });

  it('tries JSON then YAML for other names', () => {
    expect(parseConfigText('{"targets": {"a": {"url": "http://a"}}}', 'gateway.conf').ok).toBe(true);
    expect(parseConfigText(BARE_YAML, 'gateway.conf').ok).toBe(true);
    expect(issues(parseConfigText('{"targets": ', 'gateway'))[0]!.message).toMatch(/^JSON syntax error/);
    expect(issues(parseConfigText('targets: [\n', 'gateway'))[0]!.message).toMatch(/^YAML syntax error/);
  });

  it('ignores a UTF-8 byte order mark but hashes the text as given', () => {
    const text = `\uFEFF${BARE_YAML}`;
    const result = parseConfigText(text, 'a.yaml');
    expect(result.ok && result.hash).toBe(sha256(Buffer.from(text, 'utf8')));
  });

  it('hashes the UTF-8 bytes of the text', () => {
    const result = parseConfigText(BARE_YAML, 'a.yaml');
    expect(result.ok && result.hash).toBe(sha256(BARE_YAML));
  });
});

describe('syntax errors', () => {
  it('reports a JSON error with line and column', () => {
    const [issue] = issues(
      parseConfigText('{\n  "targets": {\n    "a": {"url": "http://a",}\n  }\n}', 'c.json'),
    );
    expect(issue).toMatchObject({ path: '$', line: 3, column: 29 });
    expect(issue!.message).toMatch(/^JSON syntax error: /);
    expect(issue!.message).not.toMatch(/position/);
  });

  it('reports truncated JSON at its end', () => {
    const [issue] = issues(parseConfigText('{\n  "targets": {', 'c.json'));
    expect(issue).toMatchObject({ path: '$', line: 2, column: 15 });
  });

  it('reports duplicate JSON keys, which JSON.parse would silently merge', () => {
    const [issue] = issues(
      parseConfigText('{"targets": {"a": {"url": "http://a"}},\n "targets": {}}', 'c.json'),
    );
    expect(issue).toMatchObject({ path: '$', line: 2, column: 2 });
    expect(issue!.message).toBe(
      'JSON syntax error: duplicate key "targets" in one object (first at line 1, column 2); keys must be unique',
    );
  });

  it('gives validation issues of a JSON file their line and column', () => {
    const [issue] = issues(parseConfigText('{\n  "targets": {\n    "a": {"url": 5}\n  }\n}', 'c.json'));
    expect(issue).toMatchObject({ path: '$.targets.a.url', line: 3, column: 11 });
  });

  it('reports a YAML error with line and column', () => {
    const [issue] = issues(parseConfigText('targets:\n  a:\n    url: "http://a\n', 'c.yaml'));
    expect(issue!.path).toBe('$');
    expect(issue!.message).toMatch(/^YAML syntax error: /);
    expect(issue!.line).toBeGreaterThanOrEqual(3);
  });

  it('reports duplicate YAML keys at the repeated key', () => {
    const [issue] = issues(
      parseConfigText('targets:\n  a: {url: "http://a"}\n  a: {url: "http://b"}\n', 'c.yaml'),
    );
    expect(issue).toMatchObject({ path: '$', line: 3, column: 3 });
    expect(issue!.message).toContain('Map keys must be unique');
  });

  it('refuses several YAML documents in one file', () => {
    const [issue] = issues(parseConfigText(`${BARE_YAML}---\n${BARE_YAML}`, 'c.yaml'));
    expect(issue).toMatchObject({ path: '$', line: 4 });
    expect(issue!.message).toContain('the file must hold a single YAML document');
  });

  it('refuses alias expansion bombs instead of expanding them', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 8; i++)
      levels.push(
        `l${i}: &l${i} [${Array(10)
          .fill(i === 1 ? '*a' : `*l${i - 1}`)
          .join(', ')}]`,
      );
    const [issue] = issues(parseConfigText(levels.join('\n'), 'bomb.yaml'));
    expect(issue!.path).toBe('$');
    expect(issue!.message).toMatch(/^YAML error: .*alias/i);
  });
});

describe('document shape', () => {
  it.each([
    ['', 'got an empty document'],
    ['[1, 2]', 'got an array'],
    ['"text"', 'got a string'],
    ['42', 'got a number'],
  ])('refuses %j at the root', (text, fragment) => {
    const [issue] = issues(parseConfigText(text, 'c.yaml'));
    expect(issue!.path).toBe('$');
    expect(issue!.message).toContain(fragment);
  });

  it('gives validation issues the line and column of the offending key', () => {
    const text = 'targets:\n  sim:\n    url: http://127.0.0.1:8000/v1\n    stratgy: priority\n';
    expect(issues(parseConfigText(text, 'c.yaml'))).toEqual([
      {
        path: '$.targets.sim.stratgy',
        message: 'unknown field `stratgy`; did you mean `strategy`?',
        line: 4,
        column: 5,
      },
    ]);
  });

  it('locates issues in JSON files and inside arrays', () => {
    const text =
      '{\n  "targets": {\n    "p": {\n      "providers": [\n        {"url": "http://a"},\n        {"url": "ftp://b"}\n      ]\n    }\n  }\n}';
    expect(issues(parseConfigText(text, 'c.json'))).toEqual([
      {
        path: '$.targets.p.providers[1].url',
        message: 'must be an absolute http:// or https:// URL',
        line: 6,
        column: 10,
      },
    ]);
  });

  it('refuses YAML values JSON cannot hold, with plain messages', () => {
    const text = 'targets:\n  a:\n    url: http://a\n    inflight_limit: .inf\n    trusted: yes\n';
    expect(issues(parseConfigText(text, 'c.yaml')).map(({ path, message }) => ({ path, message }))).toEqual([
      // In the order the file reads.
      {
        path: '$.targets.a.inflight_limit',
        message: 'must be a finite number, got Infinity',
      },
      { path: '$.targets.a.trusted', message: 'must be a boolean (true or false), got the string "yes"' },
    ]);
  });

  it('places a missing field at its parent object', () => {
    const [issue] = issues(
      parseConfigText('targets:\n  sim:\n    rate_limit:\n      burst_size: 1\n', 'c.yaml'),
    );
    expect(issue).toMatchObject({
      path: '$.targets.sim.rate_limit.requests_per_second',
      message: 'is required',
      line: 3,
    });
  });
});

describe('envelope', () => {
  it('loads the same config bare and wrapped', () => {
    const bare = config(parseConfigText(BARE_YAML, 'a.yaml'));
    const wrapped = parseConfigText(envelope(BARE_YAML), 'a.yaml');
    expect(config(wrapped)).toEqual(bare);
  });

  it('reports paths inside spec with the $.spec prefix', () => {
    const text = envelope('targets:\n  sim:\n    url: http://a\n    fallback: {}\n');
    expect(issues(parseConfigText(text, 'a.yaml'))).toEqual([
      {
        path: '$.spec.targets.sim.fallback',
        message:
          '`fallback` only applies to a pool: use `providers` instead of `url` to balance or fail over',
        line: 10,
        column: 7,
      },
    ]);
  });

  it('reports a wrong apiVersion and kind with their paths', () => {
    const text = envelope(BARE_YAML, 'apiVersion: llm-gateway.dev/v1\nkind: Gateway\n');
    expect(issues(parseConfigText(text, 'a.yaml')).map(({ path, message }) => ({ path, message }))).toEqual([
      { path: '$.apiVersion', message: 'must be `llm-gateway.dev/v1alpha1`' },
      { path: '$.kind', message: 'must be `GatewayConfig`' },
    ]);
  });

  it('requires spec, and points bare fields next to the envelope into it', () => {
    const text = `apiVersion: llm-gateway.dev/v1alpha1\nkind: GatewayConfig\n${BARE_YAML}`;
    expect(issues(parseConfigText(text, 'a.yaml')).map(({ path, message }) => ({ path, message }))).toEqual([
      { path: '$.spec', message: 'is required' },
      {
        path: '$.targets',
        message: 'unknown field `targets`; did you mean `spec.targets`? (it belongs inside `spec`)',
      },
    ]);
  });

  it('treats a top-level spec alone as an envelope', () => {
    const result = issues(parseConfigText(`spec:\n  targets:\n    a: {url: "http://a"}\n`, 'a.yaml'));
    expect(result.map((i) => i.path)).toEqual(['$.apiVersion', '$.kind']);
  });

  it('accepts any metadata fields but checks the typed ones', () => {
    const text = envelope(BARE_YAML).replace('uid: 1234', 'uid: 1234\n  labels: {a: 1}');
    expect(issues(parseConfigText(text, 'a.yaml')).map(({ path }) => path)).toEqual(['$.metadata.labels.a']);
  });
});

describe('loadConfigFile', () => {
  let dir: string;
  beforeAll(async () => {
    await mkdir(join(process.cwd(), 'test/.tmp'), { recursive: true });
    dir = await mkdtemp(join(process.cwd(), 'test/.tmp/config-load-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a file and hashes its raw bytes', async () => {
    const path = join(dir, 'gateway.yaml');
    const bytes = Buffer.from(`\uFEFF${BARE_YAML}`, 'utf8');
    await writeFile(path, bytes);
    const result = await loadConfigFile(path);
    expect(result.ok && result.hash).toBe(sha256(bytes));
    expect(result.ok && result.hash).toBe(parseConfigText(bytes.toString('utf8'), path).ok && sha256(bytes));
  });

  it('reports a missing file as an issue', async () => {
    const path = join(dir, 'missing.yaml');
    expect(issues(await loadConfigFile(path))).toEqual([
      { path: '$', message: 'cannot read the file: no such file', unreadable: true },
    ]);
  });

  it('reports a directory as an issue', async () => {
    expect(issues(await loadConfigFile(dir))).toEqual([
      { path: '$', message: 'cannot read the file: it is a directory', unreadable: true },
    ]);
  });

  it('reports bytes that are not UTF-8', async () => {
    const path = join(dir, 'latin1.yaml');
    await writeFile(path, Buffer.from([0x74, 0x3a, 0x20, 0xe9, 0x0a]));
    expect(issues(await loadConfigFile(path))).toEqual([
      { path: '$', message: 'the file is not valid UTF-8' },
    ]);
  });

  it('reports validation issues of a file', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, '{"targets": {"a": {}}}');
    expect(issues(await loadConfigFile(path))).toEqual([
      {
        path: '$.targets.a',
        message: 'a target needs either `url` (single provider) or `providers` (pool)',
        line: 1,
        column: 14,
      },
    ]);
  });
});
