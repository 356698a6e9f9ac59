import { cpuSeconds, machineBusySeconds, peakRssMB, resetPeakRss } from './process.ts';

/** Something the load is pointed at: the upstream directly, the floor proxy, or a gateway. */
export interface Target {
  /** Row label: `direct`, `floor`, `gateway plain`, ... */
  readonly name: string;
  readonly origin: string;
  /** Process whose CPU and RSS the row reports; undefined for `direct` (no proxy in between). */
  readonly pid: number | undefined;
  /** Extra request headers (the bearer token of keyed configurations). */
  readonly headers: Readonly<Record<string, string>>;
  /** The gateway's admin listener (`/metrics`), when the target is a gateway. */
  readonly adminOrigin?: string;
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

/** Starts measuring a window: resets the proxy's peak RSS and reads the CPU clocks. */
export function startWindow(target: Target, upstreamPid: number): () => { cpu: CpuWindow; peakRss: number } {
  if (target.pid !== undefined) resetPeakRss(target.pid);
  const proxy0 = target.pid === undefined ? 0 : cpuSeconds(target.pid);
  const upstream0 = cpuSeconds(upstreamPid);
  const self0 = process.cpuUsage();
  const machine0 = machineBusySeconds();
  const t0 = performance.now();
  return () => {
    const self = process.cpuUsage(self0);
    const proxy = target.pid === undefined ? 0 : cpuSeconds(target.pid) - proxy0;
    const upstream = cpuSeconds(upstreamPid) - upstream0;
    const loadgen = (self.user + self.system) / 1e6;
    const others = Math.max(0, machineBusySeconds() - machine0 - proxy - upstream - loadgen);
    return {
      cpu: { proxy, upstream, loadgen, others, seconds: (performance.now() - t0) / 1000 },
      peakRss: target.pid === undefined ? Number.NaN : peakRssMB(target.pid),
    };
  };
}
