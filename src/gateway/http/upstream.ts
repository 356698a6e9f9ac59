import type { Dispatcher } from 'undici';
import { Agent } from './undici.js';
import { UpstreamExchange, type HeadListener } from './upstream-exchange.js';

/** Upstream client timeouts. The first-token deadline of a pool is separate (fallback settings). */
export const UPSTREAM_TIMEOUTS = {
  connectMs: 10_000,
  /** Until the provider's response headers arrive. */
  headersMs: 300_000,
  /** Longest silence between two body chunks (a stalled stream is cut after this). */
  bodyMs: 300_000,
  keepAliveMs: 30_000,
} as const;

/** Where one provider lives: its origin and how request paths map onto its base URL. */
export interface UpstreamEndpoint {
  /** `scheme://host:port` */
  origin: string;
  /** The base URL's path without a trailing slash (`''`, `/v1`, `/openai/v1`). */
  basePath: string;
  /** A base ending in `/v1` absorbs the request's leading `/v1`, as OpenAI SDK base URLs do. */
  absorbsV1: boolean;
  /** `server.address` and `server.port` of the trace attributes. */
  server: { serverAddress: string; serverPort: number };
}

export function parseEndpoint(url: string): UpstreamEndpoint {
  const parsed = new URL(url);
  const basePath = parsed.pathname.replace(/\/+$/, '');
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return {
    origin: parsed.origin,
    basePath,
    absorbsV1: basePath.endsWith('/v1'),
    server: { serverAddress: parsed.hostname, serverPort: port },
  };
}

/** The path (with query string, unchanged) to request from the provider for a client request URL. */
export function upstreamPath(endpoint: UpstreamEndpoint, requestUrl: string): string {
  let rest = requestUrl;
  if (
    endpoint.absorbsV1 &&
    rest.startsWith('/v1') &&
    (rest.length === 3 || rest[3] === '/' || rest[3] === '?')
  ) {
    rest = rest.slice(3);
  }
  return endpoint.basePath + rest;
}

/**
 * One undici Agent for the process: it keeps a keep-alive connection pool per upstream origin, so a
 * reload that keeps a provider's URL keeps its warm connections.
 */
export class UpstreamClient {
  readonly agent: Agent;

  constructor() {
    this.agent = new Agent({
      connect: { timeout: UPSTREAM_TIMEOUTS.connectMs },
      keepAliveTimeout: UPSTREAM_TIMEOUTS.keepAliveMs,
      headersTimeout: UPSTREAM_TIMEOUTS.headersMs,
      bodyTimeout: UPSTREAM_TIMEOUTS.bodyMs,
    });
  }

  /** Starts a request; `listener` hears of its response head, `abort()` gives it up. */
  send(options: Dispatcher.DispatchOptions, listener: HeadListener): UpstreamExchange {
    const exchange = new UpstreamExchange(listener);
    this.agent.dispatch(options, exchange);
    return exchange;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
