import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/ is one level below it). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type LogLine = Record<string, unknown> & { msg?: string };

/**
 * A program the benchmark started: a gateway, the floor proxy, the upstream or a baseline. Its
 * stdout and stderr are drained continuously (a full pipe would stall it) and parsed as JSON lines,
 * so the harness can wait for `listening` lines and count `configuration reloaded` lines.
 */
export interface Service {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  waitForLine(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** How many JSON lines matched the predicate so far (only lines kept by `keep`). */
  count(predicate: (line: LogLine) => boolean): number;
  /** Whether the process has not exited yet. */
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  /** Arguments for node itself (before the script): `--cpu-prof`, `--cpu-prof-dir=...`. */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Which parsed lines to retain (default: all). Request-path logs can be many; keep what matters. */
  keep?: (line: LogLine) => boolean;
  /** Called with every line that is not JSON (e.g. `--trace-gc` output). */
  onText?: (line: string) => void;
  /**
   * Run the program in a process group of its own and signal the whole group: for programs that
   * fork workers (nginx), so a master killed on the benchmark's exit does not leave a worker
   * listening.
   */
  group?: boolean;
}

const KEEP_LIMIT = 10_000;

/**
 * Every child still running, and whether it leads a process group. If the benchmark exits early
 * (an error, Ctrl-C), they are killed with it instead of being left listening.
 */
const running = new Map<ChildProcess, boolean>();
process.once('exit', () => {
  for (const [child, group] of running) signalChild(child, group, 'SIGKILL');
});

function signalChild(child: ChildProcess, group: boolean, name: NodeJS.Signals): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, name);
    else child.kill(name);
  } catch {
    // already gone
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(130));
}

/** A Node.js script run with this process's Node.js binary. */
export function spawnService(
  name: string,
  script: string,
  args: string[],
  options: SpawnOptions = {},
): Service {
  return spawnProgram(name, process.execPath, [...(options.nodeArgs ?? []), script, ...args], options);
}

/** Any program (`nodeArgs` is not used). */
export function spawnProgram(
  name: string,
  file: string,
  args: string[],
  options: Omit<SpawnOptions, 'nodeArgs'> = {},
): Service {
  const group = options.group ?? false;
  const proc = spawn(file, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  if (proc.pid === undefined) throw new Error(`${name}: spawn failed`);
  const lines: LogLine[] = [];
  let text = '';
  const waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  running.set(proc, group);
  const keep = options.keep ?? (() => true);

  const onLine = (raw: string): void => {
    if (raw.startsWith('{')) {
      let parsed: LogLine | undefined;
      try {
        parsed = JSON.parse(raw) as LogLine;
      } catch {
        parsed = undefined;
      }
      if (parsed) {
        for (let i = waiters.length - 1; i >= 0; i--) {
          const waiter = waiters[i]!;
          if (waiter.predicate(parsed)) {
            waiters.splice(i, 1);
            waiter.resolve(parsed);
          }
        }
        if ((parsed.msg === 'listening' || keep(parsed)) && lines.length < KEEP_LIMIT) lines.push(parsed);
        return;
      }
    }
    options.onText?.(raw);
    if (text.length < 64_000) text += raw + '\n';
  };
  for (const stream of [proc.stdout, proc.stderr]) {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        onLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
    });
  }

  const exited = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      running.delete(proc);
      resolve();
    }),
  );
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  return {
    name,
    proc,
    pid: proc.pid,
    waitForLine(predicate, timeoutMs = 20_000) {
      const seen = lines.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: expected log line not seen in ${timeoutMs} ms\n${text}`)),
          timeoutMs,
        );
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`${name} exited (code ${proc.exitCode}) before the expected log line\n${text}`));
        });
        waiters.push({
          predicate,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
    count: (predicate) => lines.filter(predicate).length,
    isRunning: () => !hasExited,
    async stop(graceMs = 10_000) {
      if (hasExited) return;
      signalChild(proc, group, 'SIGTERM');
      const timer = setTimeout(() => signalChild(proc, group, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every mainstream Linux). */
const USER_HZ = 100;

/** User plus system CPU seconds the process (all its threads) has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!match) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(match[1]);
}

/** The processes whose parent is `pid` (an nginx master's workers), from /proc. */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command name: state, then the parent's pid.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // exited while listing
    }
  }
  return children;
}

/** Resident set size now, in MB (10^6 bytes, the unit of the budget; /proc reports KiB). */
export function rssMB(pid: number): number {
  return (statusKb(pid, 'VmRSS') * 1024) / 1e6;
}

/** Peak resident set size (VmHWM) since start or since the last `resetPeakRss`, in MB. */
export function peakRssMB(pid: number): number {
  return (statusKb(pid, 'VmHWM') * 1024) / 1e6;
}

/** Resets VmHWM to the current RSS (Linux >= 4.0: `echo 5 > /proc/<pid>/clear_refs`). */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Busy CPU seconds of the whole machine so far (every CPU; idle and iowait excluded). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / USER_HZ;
}

/**
 * CPU seconds (summed over CPUs) during which this virtual machine's CPUs wanted to run and the
 * hypervisor ran something else (`steal` of /proc/stat).
 */
export function stealSeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  return Number(line.trim().split(/\s+/)[8] ?? 0) / USER_HZ;
}
