import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, spawnProgram } from '../helpers/process.js';
import { startSim } from '../helpers/sim.js';
import { getJson, writeModels, zeroLatencyModel } from './support.js';

/** A loopback port another program holds. */
async function occupyPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

const VERSION = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;

describe('sim command line', () => {
  it('prints the package version', async () => {
    const program = spawnProgram('sim', ['--version']);
    expect((await program.exited).code).toBe(0);
    expect(program.text().trim()).toBe(VERSION);
  });

  it.each([[['--help']], [['serve', '--help']], [['help', 'serve']]])(
    '%j prints each section once',
    async (args) => {
      const program = spawnProgram('sim', args);
      expect((await program.exited).code).toBe(0);
      const headers = program
        .text()
        .split('\n')
        .filter((line) => /^[A-Z][A-Za-z ]*:/.test(line));
      const names = headers.map((line) => line.slice(0, line.indexOf(':')));
      expect(names.length).toBeGreaterThan(1);
      expect(names).toEqual([...new Set(names)]);
    },
  );

  it.each([
    [['serve', '--bogus']],
    [['serve', '--port', 'eighty']],
    [['serve', '--port', '70000']],
    [['serve', '--max-waiting', '-3']],
    [['serve', '--reasoning-field', 'thoughts']],
    [['frobnicate']],
  ])('exits 2 with a message on bad usage: %j', async (args) => {
    const program = spawnProgram('sim', args);
    expect((await program.exited).code).toBe(2);
    expect(program.text()).toMatch(/error/i);
  });

  it('fails startup (exit 1) naming the file and the unknown key', async () => {
    const { files } = writeModels({ 'bad.toml': 'name = "x"\n[latency]\ndecode_msec = 3\n' });
    const program = spawnProgram('sim', ['serve', '--port', '0', '--model', files[0]!]);
    expect((await program.exited).code).toBe(1);
    const fatal = program.logs.find((l) => l.level === 'fatal');
    expect(String(fatal?.error)).toContain(files[0]!);
    expect(String(fatal?.error)).toContain('unknown key "latency.decode_msec"');
    // The same, once, as a line for the person at the terminal.
    expect(program.text()).toBe(`sim: ${String(fatal?.error)}\n`);
  });

  it('a port in use is one line naming the port and --port, and the structured log line, exit 1', async () => {
    const taken = await occupyPort();
    try {
      const program = spawnProgram('sim', ['serve', '--host', '127.0.0.1', '--port', String(taken.port)]);
      expect((await program.exited).code).toBe(1);
      expect(program.text()).toBe(`sim: port ${taken.port} is already in use; choose another with --port\n`);
      expect(program.logs.find((l) => l.level === 'fatal')).toMatchObject({
        msg: 'startup failed',
        error: `port ${taken.port} is already in use; choose another with --port`,
      });
    } finally {
      taken.server.close();
    }
  });

  it('a model file with a TOML syntax error, or missing, is one line with the file and where, exit 1', async () => {
    const { files, dir } = writeModels({ 'broken.toml': 'name = "x"\n[latency\n' });
    const broken = spawnProgram('sim', ['serve', '--port', '0', '--model', files[0]!]);
    expect((await broken.exited).code).toBe(1);
    expect(broken.text()).toBe(
      `sim: ${files[0]!}: invalid TOML at line 2, column 9: illegal character in key\n`,
    );

    const missing = spawnProgram('sim', ['serve', '--port', '0', '--model', 'absent.toml'], { cwd: dir });
    expect((await missing.exited).code).toBe(1);
    expect(missing.text()).toBe(
      `sim: ${join(dir, 'absent.toml')}: cannot read the model file: no such file\n`,
    );
  });

  it('fails startup on an invalid [fault] block', async () => {
    const { files } = writeModels({ 'f.toml': 'name = "x"\n[fault]\nmode = "explode"\n' });
    const program = spawnProgram('sim', ['serve', '--port', '0', '--model', files[0]!]);
    expect((await program.exited).code).toBe(1);
    expect(String(program.logs.find((l) => l.level === 'fatal')?.error)).toContain('fault.mode');
  });

  it('logs the loaded models and the actual port, serves them, and exits 0 on SIGTERM', async () => {
    const { dir } = writeModels({ 'a.toml': zeroLatencyModel('alpha'), 'b.toml': zeroLatencyModel('beta') });
    const sim = await startSim(['--models', dir, '--max-waiting', '7']);
    try {
      const loaded = sim.program.logs.find((l) => l.msg === 'models loaded');
      expect(
        (loaded?.models as { name: string; max_waiting: number }[]).map((m) => [m.name, m.max_waiting]),
      ).toEqual([
        ['alpha', 7],
        ['beta', 7],
      ]);
      const models = (await getJson(sim.baseUrl, '/v1/models')) as { object: string; data: { id: string }[] };
      expect(models.object).toBe('list');
      expect(models.data.map((m) => m.id)).toEqual(['alpha', 'beta']);
      const capacity = (await getJson(sim.baseUrl, '/control/capacity')) as { max_waiting: number }[];
      expect(capacity.map((c) => c.max_waiting)).toEqual([7, 7]);
      sim.program.proc.kill('SIGTERM');
      expect(await sim.program.exited).toEqual({ code: 0, signal: null });
    } finally {
      await sim.stop();
    }
  });

  it('serves the built-in model "sim" when no model is given, and exits 0 on SIGINT', async () => {
    const sim = await startSim();
    try {
      const models = (await getJson(sim.baseUrl, '/v1/models')) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual(['sim']);
      sim.program.proc.kill('SIGINT');
      expect((await sim.program.exited).code).toBe(0);
    } finally {
      await sim.stop();
    }
  });
});
