import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import { spawnProgram } from '../helpers/process.js';
import { tempDir } from '../helpers/temp-dir.js';

async function tempConfig(content: unknown, name = 'config.json'): Promise<string> {
  const dir = tempDir('gateway-cli-');
  const path = join(dir, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; text: string }> {
  const program = spawnProgram('gateway', args, { env });
  const { code } = await program.exited;
  return { code, text: program.text() + program.logs.map((l) => JSON.stringify(l)).join('\n') };
}

/** A loopback port another program holds. */
async function occupyPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

const VALID = { targets: { m: { url: 'http://127.0.0.1:1/v1' } } };

describe('gateway command line', () => {
  it('--help documents every flag with its environment variable and default', async () => {
    const { code, text } = await run(['--help']);
    expect(code).toBe(0);
    for (const flag of [
      '--targets',
      '--host',
      '--port',
      '--watch',
      '--metrics ',
      '--metrics-port',
      '--metrics-prefix',
      '--shutdown-delay-secs',
      '--shutdown-timeout-secs',
      '--sse-buffer-limit',
      '--dispatched-header',
      '--enforce-batch-inflight',
      '--max-body-bytes',
      '--config-poll-secs',
      '--header-timeout-secs',
      '--request-timeout-secs',
      '--keep-alive-timeout-secs',
    ]) {
      expect(text).toContain(flag);
    }
    const flat = text.replace(/\s+/g, ' ');
    for (const env of [
      'GATEWAY_SHUTDOWN_DELAY_SECS',
      'GATEWAY_SHUTDOWN_TIMEOUT_SECS',
      'GATEWAY_SSE_BUFFER_LIMIT',
    ]) {
      expect(flat).toContain(env);
    }
    expect(flat).toContain('default: 3000');
    expect(flat).toContain('default: 9090');
    expect(flat).toContain('default: 300');
    expect(flat).toContain('default: 65536');
    // The shared-state flags, each with its variable and default.
    for (const expected of [
      '--shared-state <redis-url>',
      'GATEWAY_SHARED_STATE)',
      '--shared-state-failure <policy>',
      'GATEWAY_SHARED_STATE_FAILURE',
      'default: rate=fail_open,concurrency=fail_open,inflight=fail_open,batch=fail_closed',
      '--shared-state-lease-secs <seconds>',
      'GATEWAY_SHARED_STATE_LEASE_SECS',
      '--shared-state-timeout-ms <ms>',
      'GATEWAY_SHARED_STATE_TIMEOUT_MS',
      'default: 50',
      '--shared-state-prefix <prefix>',
      'GATEWAY_SHARED_STATE_PREFIX',
      'default: "gateway:"',
    ]) {
      expect(flat).toContain(expected);
    }
  });

  it.each([[['--help']], [['validate', '--help']], [['schema', '--help']]])(
    '%j prints each section once',
    async (args) => {
      const { code, text } = await run(args);
      expect(code).toBe(0);
      const headers = text.split('\n').filter((line) => /^[A-Z][A-Za-z ]*:/.test(line));
      const names = headers.map((line) => line.slice(0, line.indexOf(':')));
      expect(names.length).toBeGreaterThan(1);
      expect(names).toEqual([...new Set(names)]);
    },
  );

  it('--version prints the package version', async () => {
    const { code, text } = await run(['--version']);
    expect(code).toBe(0);
    expect(text.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each([
    [['--port', 'abc'], '--port must be a whole number'],
    [['--port', '70000'], '--port must be between 0 and 65535'],
    [['--shutdown-timeout-secs', '0'], '--shutdown-timeout-secs must be positive'],
    [['--shutdown-delay-secs', '-1'], '--shutdown-delay-secs must be zero or more'],
    [['--sse-buffer-limit', '1.5'], '--sse-buffer-limit must be a whole number'],
    [['--watch', 'maybe'], '--watch must be true or false'],
    [['--metrics-prefix', '9bad'], '--metrics-prefix must be a valid metric name prefix'],
    [['--port', '9000', '--metrics-port', '9000'], '--port and --metrics-port must differ'],
    [
      ['--header-timeout-secs', '60', '--request-timeout-secs', '30'],
      'must not exceed --request-timeout-secs',
    ],
    [['--no-such-flag'], "unknown option '--no-such-flag'"],
    [['frobnicate'], "unknown command 'frobnicate'; commands: validate, schema"],
    [['valdate'], "unknown command 'valdate' (did you mean validate?)"],
  ])('rejects %j with exit code 2 and a clear message', async (args, message) => {
    const path = await tempConfig(VALID);
    const { code, text } = await run(['-f', path, ...args]);
    expect(code).toBe(2);
    expect(text).toContain(message);
  });

  it('requires --targets', async () => {
    const { code, text } = await run([]);
    expect(code).toBe(2);
    expect(text).toContain('--targets <file> (or -f) is required');
  });

  it('reads flags from the environment, and a bad environment value is a usage error too', async () => {
    const path = await tempConfig(VALID);
    const bad = await run(['-f', path], { GATEWAY_SHUTDOWN_TIMEOUT_SECS: '0' });
    expect(bad.code).toBe(2);
    expect(bad.text).toContain('--shutdown-timeout-secs must be positive');

    const fromEnv = await run([], { GATEWAY_TARGETS: path, GATEWAY_PORT: 'x' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.text).toContain('--port must be a whole number');

    // Environment values take effect: prefix and drain settings.
    const gateway = await startGateway(VALID, {
      env: {
        GATEWAY_METRICS_PREFIX: 'envprefix',
        GATEWAY_SHUTDOWN_DELAY_SECS: '0',
        GATEWAY_SHUTDOWN_TIMEOUT_SECS: '7',
      },
    });
    try {
      expect(await gateway.metrics()).toContain('envprefix_config_info');
      gateway.program.proc.kill('SIGTERM');
      const log = await gateway.program.waitForLog((l) => l.msg?.startsWith('shutdown: readiness') ?? false);
      expect(log.timeoutSecs).toBe(7);
    } finally {
      await gateway.stop();
    }
  });

  it('flags win over the environment', async () => {
    const gateway = await startGateway(VALID, {
      env: { GATEWAY_METRICS_PREFIX: 'fromenv' },
      args: ['--metrics-prefix', 'fromflag'],
    });
    try {
      const text = await gateway.metrics();
      expect(text).toContain('fromflag_config_info');
      expect(text).not.toContain('fromenv_');
    } finally {
      await gateway.stop();
    }
  });

  it.each([
    ['proxy', '--port', '--port or GATEWAY_PORT'],
    ['admin', '--metrics-port', '--metrics-port or GATEWAY_METRICS_PORT'],
  ])(
    'a port in use by the %s listener is one line naming it and its options, plus the log line, exit 1',
    async (listener, flag, options) => {
      const taken = await occupyPort();
      try {
        const path = await tempConfig(VALID);
        const ports = { '--port': '0', '--metrics-port': '0', [flag]: String(taken.port) };
        const program = spawnProgram('gateway', [
          '-f',
          path,
          '--host',
          '127.0.0.1',
          ...Object.entries(ports).flat(),
        ]);
        expect((await program.exited).code).toBe(1);
        expect(program.text()).toBe(
          `gateway: port ${taken.port} is already in use (${listener} listener); choose another with ${options}\n`,
        );
        expect(program.logs.find((l) => l.level === 'fatal')).toMatchObject({
          msg: 'cannot start listeners',
          listener,
          port: taken.port,
          code: 'EADDRINUSE',
        });
      } finally {
        taken.server.close();
      }
    },
  );

  it('a configuration file that cannot be read is one line saying so, where it was looked for, exit 2', async () => {
    const dir = tempDir('gateway-cli-');
    const missing = spawnProgram('gateway', ['-f', 'missing.yaml', '--port', '0', '--metrics-port', '0'], {
      cwd: dir,
    });
    expect((await missing.exited).code).toBe(2);
    expect(missing.text()).toBe(
      `missing.yaml: cannot read the file (${join(dir, 'missing.yaml')}): no such file\n`,
    );
    expect(missing.logs.find((l) => l.level === 'fatal')?.msg).toBe(
      'missing.yaml: cannot read the configuration file',
    );

    const directory = await run(['-f', dir, '--port', '0', '--metrics-port', '0']);
    expect(directory.code).toBe(2);
    expect(directory.text).toContain(`${dir}: cannot read the file: it is a directory\n`);
    expect(directory.text).not.toContain('invalid configuration');
  });

  it('refuses to start on an invalid configuration, printing every error with its path, exit 2', async () => {
    const path = await tempConfig({ targets: { m: { urll: 'http://x' }, n: { url: 'not a url' } } });
    const { code, text } = await run(['-f', path, '--port', '0', '--metrics-port', '0']);
    expect(code).toBe(2);
    expect(text).toContain('$.targets.m.urll');
    expect(text).toContain('did you mean `url`');
    expect(text).toContain('$.targets.n.url');
  });
});

describe('gateway validate and gateway schema', () => {
  it('validate exits 0 on a valid file (JSON or YAML, bare or envelope)', async () => {
    for (const file of [
      'examples/quickstart/config.yaml',
      'examples/pools/config.yaml',
      'examples/envelope/gateway-config.yaml',
    ]) {
      const { code, text } = await run(['validate', file]);
      expect(code, text).toBe(0);
      expect(text).toContain('valid');
    }
  });

  it('validate prints every error with its JSON path and exits 1', async () => {
    const path = await tempConfig(
      'targets:\n  m:\n    url: http://127.0.0.1:1\n    strict_mode: true\n    rate_limit: { requests_per_second: 0, burst_size: 1 }\n',
      'bad.yaml',
    );
    const { code, text } = await run(['validate', path]);
    expect(code).toBe(1);
    expect(text).toContain('$.targets.m.strict_mode');
    expect(text).toContain('$.targets.m.rate_limit.requests_per_second');
  });

  it("validate lists the problems in the order the file reads, not the schema's", async () => {
    // The schema checks `auth` before `targets`; the file has `targets` first.
    const path = await tempConfig(
      'targets:\n  m:\n    url: http://127.0.0.1:1\n    rate_limit: { requests_per_second: 0, burst_size: 1 }\nauth:\n  key_definitions:\n    k: { key: 5 }\n',
      'order.yaml',
    );
    const { code, text } = await run(['validate', path]);
    expect(code).toBe(1);
    const targets = text.indexOf('$.targets.m.rate_limit.requests_per_second');
    const auth = text.indexOf('$.auth.key_definitions.k.key');
    expect(targets).toBeGreaterThanOrEqual(0);
    expect(auth).toBeGreaterThan(targets);
  });

  it('a YAML syntax error states its location once, in validate and at startup', async () => {
    const path = await tempConfig('targets:\n  a:\n    url: [http://x\n  b: 1\n', 'bad.yaml');
    const validate = await run(['validate', path]);
    expect(validate.code).toBe(1);
    expect(validate.text).toContain('YAML syntax error');
    expect(validate.text.match(/line 4/g)).toHaveLength(1);

    const program = spawnProgram('gateway', ['-f', path, '--port', '0', '--metrics-port', '0']);
    expect((await program.exited).code).toBe(2);
    // One line on stderr for the person, and the structured line: each says where, once.
    const human = program.text().trim().split('\n');
    expect(human).toHaveLength(1);
    expect(human[0]).toContain(`${path}: `);
    expect(human[0]).toContain('YAML syntax error');
    expect(human[0]!.match(/line 4/g)).toHaveLength(1);
    const fatal = program.logs.find((l) => l.level === 'fatal');
    expect(fatal?.errors).toHaveLength(1);
    expect(String((fatal?.errors as string[])[0]).match(/line 4/g)).toHaveLength(1);
  });

  it('schema prints the JSON Schema; --markdown prints the field reference in docs/configuration.md', async () => {
    const json = await run(['schema']);
    expect(json.code).toBe(0);
    const schema = JSON.parse(json.text) as Record<string, unknown>;
    expect(JSON.stringify(schema)).toContain('"additionalProperties":false');
    expect(JSON.stringify(schema)).toContain('targets');
    const markdown = await run(['schema', '--markdown']);
    expect(markdown.code).toBe(0);
    expect(markdown.text).toContain('targets');
  });
});
