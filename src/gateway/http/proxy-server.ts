import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from './node-http.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Server-side limits: a slow or idle client cannot hold a socket forever. */
export interface ClientTimeouts {
  headerTimeoutMs: number;
  /** Covers receiving the request only: streamed responses are not limited by it. */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

const MAX_HEADERS_COUNT = 200;
const MAX_HEADER_BYTES = 32 * 1024;

export function createProxyServer(handler: RequestHandler, timeouts: ClientTimeouts): Server {
  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      requestTimeout: timeouts.requestTimeoutMs,
      headersTimeout: timeouts.headerTimeoutMs,
      // How often expired header/request timers are enforced (Node's default is 30 s).
      connectionsCheckingInterval: 1_000,
    },
    handler,
  );
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  server.maxHeadersCount = MAX_HEADERS_COUNT;
  return server;
}
