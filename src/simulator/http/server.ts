import { createServer, type Server } from 'node:http';
import type { SimContext } from '../runtime.js';
import { sendError } from './respond.js';
import { route } from './routes.js';

/** The simulator's HTTP server. node:http directly: fault modes need the raw socket. */
export function createSimServer(ctx: SimContext): Server {
  const server = createServer({ noDelay: true }, (req, res) => {
    route(req, res, ctx).catch((err: unknown) => {
      ctx.log.error({ err: err instanceof Error ? err.stack : String(err), path: req.url }, 'handler failed');
      if (!res.headersSent)
        sendError(res, 500, 'internal simulator error', 'internal_error', 'internal_error');
      else res.destroy();
    });
  });
  // Streams may legitimately stay open for a long time (stall mode, slow models).
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}
