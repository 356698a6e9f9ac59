import { cpuSeconds, machineBusySeconds } from './process.ts';
import { sleep } from './stats.ts';

/** Cores busy with other programs over `ms`, i.e. machine busy time minus our own processes. */
export async function otherLoad(ownPids: readonly number[], ms = 250): Promise<number> {
  const own = (): number =>
    ownPids.reduce((total, pid) => {
      try {
        return total + cpuSeconds(pid);
      } catch {
        return total;
      }
    }, 0);
  const self0 = process.cpuUsage();
  const own0 = own();
  const machine0 = machineBusySeconds();
  await sleep(ms);
  const self = process.cpuUsage(self0);
  const ours = own() - own0 + (self.user + self.system) / 1e6;
  return Math.max(0, (machineBusySeconds() - machine0 - ours) / (ms / 1000));
}

/**
 * Waits (at most `maxSeconds`) until other programs use less than `thresholdCores`, so windows are
 * not measured while something else competes for the cores. Returns the last load seen.
 */
export async function waitForQuiet(
  ownPids: readonly number[],
  maxSeconds: number,
  thresholdCores: number,
): Promise<number> {
  const deadline = performance.now() + maxSeconds * 1000;
  let load = await otherLoad(ownPids);
  while (load > thresholdCores && performance.now() < deadline) load = await otherLoad(ownPids);
  return load;
}

/**
 * Waits (at most `maxSeconds`) until the given processes of our own use less than `thresholdCores`
 * together: a proxy that fell behind in its window (an open loop above what it can serve) goes on
 * working through its backlog, and would take the cores from the next proxy's window. Returns the
 * last load seen.
 */
export async function waitForIdle(
  pids: readonly number[],
  maxSeconds: number,
  thresholdCores = 0.05,
): Promise<number> {
  const busy = (): number =>
    pids.reduce((total, pid) => {
      try {
        return total + cpuSeconds(pid);
      } catch {
        return total;
      }
    }, 0);
  const deadline = performance.now() + maxSeconds * 1000;
  for (;;) {
    const before = busy();
    await sleep(250);
    const load = (busy() - before) / 0.25;
    if (load < thresholdCores || performance.now() >= deadline) return load;
  }
}
