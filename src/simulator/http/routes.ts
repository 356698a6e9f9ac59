import type { IncomingMessage, ServerResponse } from 'node:http';
import { applyCapacity, capacityRecords } from '../control/capacity.js';
import { applyEngineState, engineStates } from '../control/engine-state.js';
import type { SimContext } from '../runtime.js';
import { packageVersion } from '../version.js';
import { handleCompletion } from './completions.js';
import { handleCountTokens, handleMessages } from './messages.js';
import { readJsonBody, sendError, sendJson } from './respond.js';

type Handler = (req: IncomingMessage, res: ServerResponse, ctx: SimContext) => Promise<void> | void;

/** path -> method -> handler. */
const ROUTES: Record<string, Record<string, Handler>> = {
  '/v1/chat/completions': { POST: (req, res, ctx) => handleCompletion('chat', req, res, ctx) },
  '/v1/completions': { POST: (req, res, ctx) => handleCompletion('completions', req, res, ctx) },
  '/v1/messages': { POST: handleMessages },
  '/v1/messages/count_tokens': { POST: handleCountTokens },
  '/v1/models': { GET: listModels },
  '/metrics': { GET: metrics },
  '/health': { GET: health },
  '/version': { GET: (_req, res) => sendJson(res, 200, { version: VERSION }) },
  '/control/capacity': {
    GET: (_req, res, ctx) => sendJson(res, 200, capacityRecords(ctx)),
    POST: async (req, res, ctx) => {
      const body = await readJsonBody(req);
      if (!body.ok) return sendError(res, body.status, body.message, 'invalid_request_error', body.code);
      const result = applyCapacity(ctx, body.value);
      if (result.ok) sendJson(res, 200, result.value);
      else sendError(res, result.status, result.message, 'invalid_request_error', result.code, result.param);
    },
  },
  '/control/engine': {
    GET: (_req, res, ctx) => sendJson(res, 200, engineStates(ctx)),
    POST: async (req, res, ctx) => {
      const body = await readJsonBody(req);
      if (!body.ok) return sendError(res, body.status, body.message, 'invalid_request_error', body.code);
      const result = applyEngineState(ctx, body.value);
      if (result.ok) sendJson(res, 200, result.value);
      else sendError(res, result.status, result.message, 'invalid_request_error', result.code, result.param);
    },
  },
};

const VERSION = packageVersion();

export async function route(req: IncomingMessage, res: ServerResponse, ctx: SimContext): Promise<void> {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  const methods = ROUTES[path];
  if (!methods) return sendError(res, 404, `no route for ${path}`, 'NotFoundError', 'not_found');
  const handler = methods[req.method ?? 'GET'];
  if (!handler) {
    res.setHeader('allow', Object.keys(methods).join(', '));
    return sendError(
      res,
      405,
      `${req.method} is not allowed on ${path}`,
      'invalid_request_error',
      'method_not_allowed',
    );
  }
  await handler(req, res, ctx);
}

function listModels(_req: IncomingMessage, res: ServerResponse, ctx: SimContext): void {
  sendJson(res, 200, {
    object: 'list',
    data: [...ctx.models.values()].map((runtime) => ({
      id: runtime.config.name,
      object: 'model',
      created: ctx.startedAt,
      owned_by: 'sim',
      root: runtime.config.name,
      parent: null,
    })),
  });
}

async function metrics(_req: IncomingMessage, res: ServerResponse, ctx: SimContext): Promise<void> {
  const text = await ctx.metrics.registry.metrics();
  res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType });
  res.end(text);
}

/** vLLM's liveness endpoint: 200 while every engine runs, 503 otherwise. */
function health(_req: IncomingMessage, res: ServerResponse, ctx: SimContext): void {
  const stopped = engineStates(ctx).filter((record) => record.state === 'stopped');
  if (stopped.length === 0) {
    res.writeHead(200, { 'content-length': 0 });
    res.end();
    return;
  }
  sendError(
    res,
    503,
    `engine not running for: ${stopped.map((record) => record.model).join(', ')}`,
    'service_unavailable_error',
    'engine_unavailable',
  );
}
