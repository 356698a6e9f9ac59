import { spawnProgram, type RunningProgram } from './process.js';

export interface StartedSim {
  program: RunningProgram;
  port: number;
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  baseUrl: string;
  /** SIGKILL; safe to call twice. */
  stop: () => Promise<void>;
}

/**
 * Starts `sim serve` on a loopback port chosen by the OS and resolves once it logs `listening`.
 * `args` are appended after `serve --host 127.0.0.1 --port 0`.
 */
export async function startSim(
  args: string[] = [],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<StartedSim> {
  const program = spawnProgram('sim', ['serve', '--host', '127.0.0.1', '--port', '0', ...args], options);
  try {
    const line = await program.waitForLog((l) => l.msg === 'listening' && l.listener === 'sim');
    const port = Number(line.port);
    return { program, port, baseUrl: `http://127.0.0.1:${port}`, stop: () => program.kill() };
  } catch (err) {
    await program.kill();
    throw err;
  }
}
