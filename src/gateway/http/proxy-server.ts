import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Server-side timeouts: a slow or idle client cannot hold a socket forever. */
export const SERVER_TIMEOUTS = {
  /** All request headers must arrive within this time. */
  headersTimeoutMs: 30_000,
  /** The whole request (headers and body) must arrive within this time; responses are not limited. */
  requestTimeoutMs: 120_000,
  /** Above the 60 s idle timeout of common load balancers, so they never reuse a socket we closed. */
  keepAliveTimeoutMs: 65_000,
  maxHeadersCount: 200,
  maxHeaderSize: 32 * 1024,
} as const;

export interface ProxyServer {
  server: Server;
  /** Observers called first for every request (connection tracking). */
  onRequest(observer: RequestHandler): void;
}

export function createProxyServer(handler: RequestHandler): ProxyServer {
  const observers: RequestHandler[] = [];
  const server = createServer(
    { maxHeaderSize: SERVER_TIMEOUTS.maxHeaderSize, requestTimeout: SERVER_TIMEOUTS.requestTimeoutMs },
    (req, res) => {
      for (const observe of observers) observe(req, res);
      handler(req, res);
    },
  );
  server.headersTimeout = SERVER_TIMEOUTS.headersTimeoutMs;
  server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeoutMs;
  server.maxHeadersCount = SERVER_TIMEOUTS.maxHeadersCount;
  return { server, onRequest: (observer) => observers.push(observer) };
}
