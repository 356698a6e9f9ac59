import type { Dispatcher } from 'undici';
import { Agent } from './undici.js';
import { UpstreamExchange, type HeadListener } from './upstream-exchange.js';

/** How long an idle kept-alive connection to a provider stays open. */
const KEEP_ALIVE_MS = 30_000;

/** A headers timeout below this is timed by the exchange, to the millisecond, not by undici. */
const PRECISE_HEADERS_BELOW_MS = 10_000;

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
  /**
   * The name a TLS certificate is checked for when it is not the URL's host: a pod reached by its
   * address serves the certificate of its Service's name.
   */
  servername: string | undefined;
}

export function parseEndpoint(url: string, servername?: string): UpstreamEndpoint {
  const parsed = new URL(url);
  const basePath = parsed.pathname.replace(/\/+$/, '');
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return {
    origin: parsed.origin,
    basePath,
    absorbsV1: basePath.endsWith('/v1'),
    // An IPv6 host without the brackets a URL wraps it in.
    server: { serverAddress: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), serverPort: port },
    servername,
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
 * How a provider's timeouts are carried out, worked out once per configuration: undici's own
 * headers and body timeouts go into each request's dispatch options; the connect timeout picks the
 * Agent; a short headers timeout is timed by the exchange instead of undici.
 */
export interface UpstreamTimeouts {
  readonly connectMs: number;
  /** undici's `headersTimeout`: 0 (off) when the exchange times the head itself. */
  readonly headersTimeout: number;
  /** undici's `bodyTimeout`: the longest gap between body reads. */
  readonly bodyTimeout: number;
  /** The exchange's own headers timer, or undefined when undici's is used. */
  readonly exchangeHeadersMs: number | undefined;
}

/**
 * undici checks its timeouts on a clock that ticks about twice a second, so they fire up to a
 * second late: fine for minutes, not for a `headers_ms` of a few seconds that a pool fails over on.
 * Those the exchange times itself (one timer per request, only when configured so short).
 */
export function upstreamTimeouts(timeouts: {
  connectMs: number;
  headersMs: number;
  idleMs: number;
}): UpstreamTimeouts {
  const own = timeouts.headersMs < PRECISE_HEADERS_BELOW_MS;
  return {
    connectMs: timeouts.connectMs,
    headersTimeout: own ? 0 : timeouts.headersMs,
    bodyTimeout: timeouts.idleMs,
    exchangeHeadersMs: own ? timeouts.headersMs : undefined,
  };
}

/**
 * The undici Agents of the process: each keeps a keep-alive connection pool per upstream origin, so
 * a reload that keeps a provider's URL and `connect_ms` keeps its warm connections. The connect
 * timeout is a setting of an Agent's connector, not of a request, so there is one Agent per connect
 * timeout ever configured (a handful), and per TLS server name of an `https` Service; one no longer
 * used keeps nothing but idle connections, which close after the keep-alive time. The headers and idle timeouts go with each request.
 */
export class UpstreamClient {
  readonly #agents = new Map<string, Agent>();
  #closed: Agent | undefined;

  /**
   * Starts a request (`options` carry `timeouts`' headers and body timeouts); `listener` hears of
   * its response head, `abort()` gives it up.
   */
  send(
    options: Dispatcher.DispatchOptions,
    timeouts: UpstreamTimeouts,
    listener: HeadListener,
    servername?: string,
  ): UpstreamExchange {
    const exchange = new UpstreamExchange(listener, timeouts.exchangeHeadersMs);
    this.agentFor(timeouts.connectMs, servername).dispatch(options, exchange);
    return exchange;
  }

  /**
   * The Agent of requests with this connect timeout and TLS server name (its `stats` show its
   * connections per origin).
   */
  agentFor(connectMs: number, servername?: string): Agent {
    // Once closed, every request goes to a closed Agent, which refuses it as undici does.
    if (this.#closed) return this.#closed;
    const key = servername === undefined ? String(connectMs) : `${connectMs} ${servername}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = new Agent({
        connect: servername === undefined ? { timeout: connectMs } : { timeout: connectMs, servername },
        keepAliveTimeout: KEEP_ALIVE_MS,
      });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Waits for the requests in flight, then closes every connection. */
  async close(): Promise<void> {
    await this.#shut((agent) => agent.close());
  }

  /** Closes every connection now, failing the requests in flight. */
  async destroy(): Promise<void> {
    await this.#shut((agent) => agent.destroy());
  }

  async #shut(end: (agent: Agent) => Promise<void>): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#closed ??= agents[0] ?? new Agent();
    if (!agents.includes(this.#closed)) agents.push(this.#closed);
    this.#agents.clear();
    await Promise.all(agents.map(end));
  }
}
