import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BenchSim {
  proc: ChildProcess;
  port: number;
  baseUrl: string;
  /** CPU seconds (user + system) the simulator process has used so far, or undefined off Linux. */
  cpuSeconds: () => number | undefined;
  stop: () => Promise<void>;
}

/** A model with zero latency: the simulator then runs as fast as the host lets it. */
export function writeZeroLatencyModel(name: string, outputTokens: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'sim-bench-'));
  const file = join(dir, `${name}.toml`);
  writeFileSync(
    file,
    `name = "${name}"
output_tokens = ${outputTokens}
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = 0
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = 1000000
max_waiting = 0
`,
  );
  return file;
}

/** Starts the built simulator (bin/sim.js) on an OS-chosen loopback port. */
export async function startBenchSim(args: string[]): Promise<BenchSim> {
  const proc = spawn(
    process.execPath,
    [join(ROOT, 'bin/sim.js'), 'serve', '--host', '127.0.0.1', '--port', '0', ...args],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('sim did not start within 15 s (run `make build` first)')),
      15_000,
    );
    const lines = createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { msg?: string; port?: number };
        if (parsed.msg === 'listening' && typeof parsed.port === 'number') {
          clearTimeout(timer);
          resolve(parsed.port);
        }
      } catch {
        // not a log line
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error('sim exited before listening (run `make build` first)'));
    });
  });
  const cpuSeconds = (): number | undefined => {
    try {
      // Fields 14 and 15 of /proc/<pid>/stat: utime and stime in clock ticks (100 per second on Linux).
      const stat = readFileSync(`/proc/${proc.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      return undefined;
    }
  };
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
  };
  return { proc, port, baseUrl: `http://127.0.0.1:${port}`, cpuSeconds, stop };
}
