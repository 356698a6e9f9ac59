import { cpuSeconds, machineBusySeconds, peakRssMB, resetPeakRss } from './process.ts';
import { CHAT_SURFACE, type RequestSurface } from './surfaces.ts';

/** What the load is pointed at: the upstream directly, the floor proxy, a baseline, or a gateway. */
export interface Target {
  /** Row label: `direct`, `floor`, `gateway plain`, ... */
  readonly name: string;
  readonly origin: string;
  /** Process whose CPU and RSS the row reports; undefined for `direct` (no proxy in between). */
  readonly pid: number | undefined;
  /**
   * Every process of a proxy that runs as several (nginx: its master and its worker); CPU and RSS
   * are summed over them. Unset: `pid` alone.
   */
  readonly processes?: readonly number[];
  /** Extra request headers (the bearer token of keyed configurations). */
  readonly headers: Readonly<Record<string, string>>;
  /** The gateway's admin listener (`/metrics`), when the target is a gateway. */
  readonly adminOrigin?: string;
  /** The API its requests are sent in; unset: chat completions. */
  readonly surface?: RequestSurface;
}

/** The API a target's requests are sent in. */
export function surfaceOf(target: Target): RequestSurface {
  return target.surface ?? CHAT_SURFACE;
}

/**
 * CPU seconds over one window: the proxy, the upstream, this process (the load generator), and
 * everything else on the machine (`others`: other programs competing for the same cores).
 */
export interface CpuWindow {
  proxy: number;
  upstream: number;
  loadgen: number;
  others: number;
  seconds: number;
}

/** The processes a target's CPU and RSS are read from (none for `direct`). */
export function proxyPids(target: Target): readonly number[] {
  return target.processes ?? (target.pid === undefined ? [] : [target.pid]);
}

/** Summed over the processes. */
const total = (pids: readonly number[], read: (pid: number) => number): number =>
  pids.reduce((sum, pid) => sum + read(pid), 0);

/** Starts measuring a window: resets the proxy's peak RSS and reads the CPU clocks. */
export function startWindow(target: Target, upstreamPid: number): () => { cpu: CpuWindow; peakRss: number } {
  const pids = proxyPids(target);
  for (const pid of pids) resetPeakRss(pid);
  const proxy0 = total(pids, cpuSeconds);
  const upstream0 = cpuSeconds(upstreamPid);
  const self0 = process.cpuUsage();
  const machine0 = machineBusySeconds();
  const t0 = performance.now();
  return () => {
    const self = process.cpuUsage(self0);
    const proxy = total(pids, cpuSeconds) - proxy0;
    const upstream = cpuSeconds(upstreamPid) - upstream0;
    const loadgen = (self.user + self.system) / 1e6;
    const others = Math.max(0, machineBusySeconds() - machine0 - proxy - upstream - loadgen);
    return {
      cpu: { proxy, upstream, loadgen, others, seconds: (performance.now() - t0) / 1000 },
      peakRss: pids.length === 0 ? Number.NaN : total(pids, peakRssMB),
    };
  };
}
