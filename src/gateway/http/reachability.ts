import { connect } from 'node:net';
import type { Logger } from '../telemetry/logger.js';
import type { UpstreamEndpoint } from './upstream.js';

/** How long one connection attempt may take before the provider counts as unreachable. */
const PROBE_TIMEOUT_MS = 2000;
/** Connection attempts at a time, so a configuration with a thousand providers probes politely. */
const PROBE_CONCURRENCY = 16;

/** A provider as the probe sees it: where it is, and what names it in the configuration. */
export interface ProbedProvider {
  readonly endpoint: UpstreamEndpoint;
  /** `alias` / `provider` names that use this endpoint. */
  readonly users: readonly string[];
}

/**
 * Tries to open a TCP connection to each provider's host and port once, off the request path, and
 * logs one warning per provider it cannot reach, naming the aliases that use it. The gateway's
 * readiness never depends on it: a provider that is down answers with the gateway's 502/503 (or a
 * failover) per request, and a replica that refused traffic for it would only spread the outage.
 * The warning tells an operator at start-up (and after a reload) what the first request would find.
 */
export async function warnUnreachable(providers: readonly ProbedProvider[], logger: Logger): Promise<void> {
  const queue = [...providers];
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const failure = await probe(next.endpoint);
      if (failure === undefined) continue;
      logger.warn(
        { upstream: next.endpoint.origin, usedBy: next.users.slice(0, 10), reason: failure },
        'provider unreachable: requests routed to it will fail until it answers (readiness does not depend on it)',
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, queue.length) }, worker));
}

/** Undefined when a connection opened; else why it did not (an error code, or `timeout`). */
function probe(endpoint: UpstreamEndpoint): Promise<string | undefined> {
  return new Promise((resolve) => {
    const url = new URL(endpoint.origin);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port });
    socket.unref();
    const done = (failure: string | undefined): void => {
      socket.destroy();
      resolve(failure);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done('timeout'));
    socket.once('connect', () => done(undefined));
    socket.once('error', (error: Error & { code?: string }) => done(error.code ?? error.message));
  });
}
