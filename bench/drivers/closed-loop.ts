import autocannon from 'autocannon';
import { Samples } from '../support/stats.ts';
import { startWindow, surfaceOf, type CpuWindow, type Target } from '../support/target.ts';

export interface ClosedLoopResult {
  /** 2xx responses. */
  ok: number;
  /** Non-2xx responses plus connection errors and timeouts. */
  failed: number;
  durationSeconds: number;
  /** Per-response latency in ms, as measured by autocannon's client (send to last byte). */
  latency: Samples;
  cpu: CpuWindow;
  peakRss: number;
}

export interface ClosedLoopOptions {
  connections: number;
  durationSeconds: number;
  /** Record latencies and CPU (false during warm-up). */
  measure?: boolean;
}

/**
 * Closed loop with autocannon: `connections` keep-alive connections, each sending its next request
 * (the target's surface's non-streamed request) as soon as the previous response ended. Latencies come from autocannon's per-response event (float
 * milliseconds), not its integer-millisecond histogram, so sub-millisecond differences survive.
 */
export async function closedLoop(
  target: Target,
  upstreamPid: number,
  options: ClosedLoopOptions,
): Promise<ClosedLoopResult> {
  const latency = new Samples();
  const surface = surfaceOf(target);
  const stop = startWindow(target, upstreamPid);
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${target.origin}${surface.path}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...surface.headers, ...target.headers },
        body: surface.body,
        connections: options.connections,
        duration: options.durationSeconds,
        timeout: 10,
      },
      (error, finished) => (error ? reject(error as Error) : resolve(finished)),
    );
    if (options.measure !== false) {
      instance.on('response', (_client, statusCode, _bytes, responseTime) => {
        if (statusCode >= 200 && statusCode < 300) latency.push(responseTime);
      });
    }
  });
  const { cpu, peakRss } = stop();
  return {
    ok: result['2xx'],
    failed: result.non2xx + result.errors + result.timeouts,
    durationSeconds: result.duration,
    latency,
    cpu,
    peakRss,
  };
}
