import { request } from 'node:http';
import { ALIAS, CHAT_PATH, chatRequestBody } from '../support/payloads.ts';
import { Samples } from '../support/stats.ts';
import { startWindow, type Target } from '../support/target.ts';
import type { ClosedLoopResult } from './closed-loop.ts';

const BODY = chatRequestBody(ALIAS, false);

/** One request on a connection of its own (`Connection: close`, no agent); resolves with its status. */
function once(origin: URL, target: Target): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: origin.hostname,
        port: origin.port,
        path: CHAT_PATH,
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(BODY),
          connection: 'close',
          ...target.headers,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(BODY);
  });
}

/**
 * Closed loop of `clients` clients that open a new connection for every request (latency includes
 * each connection's setup), as clients
 * without keep-alive do: each connection's setup and teardown is per request here, which the
 * keep-alive loads never exercise (per-connection state, the server's accept path).
 */
export async function connectionPerRequest(
  target: Target,
  upstreamPid: number,
  options: { clients: number; durationSeconds: number },
): Promise<ClosedLoopResult> {
  const origin = new URL(target.origin);
  const latency = new Samples();
  let ok = 0;
  let failed = 0;
  const stop = startWindow(target, upstreamPid);
  const start = performance.now();
  const deadline = start + options.durationSeconds * 1000;
  const client = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const sentAt = performance.now();
      const status = await once(origin, target);
      if (status >= 200 && status < 300) {
        ok++;
        latency.push(performance.now() - sentAt);
      } else {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  const durationSeconds = (performance.now() - start) / 1000;
  const { cpu, peakRss } = stop();
  return { ok, failed, durationSeconds, latency, cpu, peakRss };
}
