import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RuntimeTable } from '../runtime/table.js';
import type { ConnectionTracker } from '../lifecycle/connection-tracker.js';
import type { RequestHandler } from '../http/proxy-server.js';
import { requestIdFor } from '../http/request-id.js';
import type { UpstreamClient } from '../http/upstream.js';
import type { GatewayOptions } from '../options.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import { authenticate } from './authenticate.js';
import { admit } from './admit.js';
import { isPromise, type Refusal } from '../limits/types.js';
import { RequestContext, type Traffic } from './context.js';
import { runAttempts, type AttemptLoopDeps } from './attempt-loop.js';
import {
  gatewayErrors,
  inResponseMode,
  refusalError,
  writeGatewayError,
  type GatewayError,
} from './errors.js';
import { listModels } from './models.js';
import { finalOutcome } from './outcome.js';
import { recordFinished } from './finished.js';
import type { AccessLog } from '../telemetry/access-log.js';
import { BODY_TOO_LARGE, readBody } from './read-body.js';
import { isAdminPath } from './no-alias.js';
import { resolveAlias } from './resolve.js';
import { runStrictChecks } from './strict-checks.js';
import { planRequestReasoning } from './reasoning.js';
import { planTranslation } from './translation.js';
import { endServerSpan, setRequestInfo, startServerSpan } from '../telemetry/tracing.js';
import { MODELS_PATH } from '../api/surfaces.js';
import { standardErrorBody } from '../strict/index.js';

/** Strict mode's 404 for a path it does not serve, in the standard error shape (spec 4.5, 7.2). */
function strictNotFound(path: string, adminPort: number): GatewayError {
  const { type } = standardErrorBody(404).error;
  const where = isAdminPath(path)
    ? `is served on the admin port (${adminPort}, --metrics-port)`
    : 'is not served in strict mode';
  return {
    status: 404,
    type,
    code: null,
    message: `Not found: \`${path}\` ${where}.`,
    param: null,
    outcome: 'rejected',
    strictShape: true,
  };
}

export interface HandlerDeps {
  /** Told when each response opens and closes (what a drain waits for). */
  connections: Pick<ConnectionTracker, 'opened' | 'closed'>;
  /** The serving table; undefined before the first configuration loaded (resource mode). */
  runtime: () => RuntimeTable | undefined;
  metrics: GatewayMetrics;
  logger: Logger;
  options: Pick<GatewayOptions, 'dispatchedHeader' | 'maxBodyBytes' | 'sseBufferLimit'>;
  upstream: UpstreamClient;
  /** The admin listener's port (bound, once it listens): named to clients asking this port for it. */
  adminPort: () => number;
  /** One line per finished request (`--access-log`); undefined when off. */
  accessLog: AccessLog | undefined;
}

/** Span names use the route, never the raw URL (bounded cardinality): a surface's path, or this. */
const OTHER_ROUTE = '/*';

/** Status recorded for a request whose client went away before any response started. */
const CLIENT_CLOSED = 499;

/** Status label strings by code, made once each (codes are 100 to 999). */
const STATUS_LABELS: string[] = [];

function statusLabel(code: number): string {
  return (STATUS_LABELS[code] ??= String(code));
}

/**
 * The proxy's request path (DESIGN 3): read body -> resolve alias -> authenticate -> admit ->
 * strict checks -> attempts (provider order, failover, the response). Each stage returns an error value or continues; this function
 * only sequences them and answers errors.
 */
export function createProxyHandler(deps: HandlerDeps): RequestHandler {
  // Built once: the request path passes these along without copying them per request.
  const stages: StageDeps = {
    ...deps,
    attempts: {
      upstream: deps.upstream,
      logger: deps.logger,
      metrics: deps.metrics,
      sseBufferLimit: deps.options.sseBufferLimit,
      answer: (ctx, error) => reject(ctx, error, deps),
      failUnexpectedly: (ctx, error) => failUnexpectedly(ctx, ctx.res, deps, error),
    },
  };
  return (req, res) => {
    try {
      handle(req, res, stages);
    } catch (error) {
      failUnexpectedly(undefined, res, stages, error);
    }
  };
}

interface StageDeps extends HandlerDeps {
  attempts: AttemptLoopDeps;
}

/** A bug on the request path: logged, and the client gets a 500 (or a cut response). */
function failUnexpectedly(
  ctx: RequestContext | undefined,
  res: ServerResponse,
  deps: HandlerDeps,
  error: unknown,
): void {
  deps.logger.error({ err: error }, 'unexpected error on the request path');
  ctx?.endedAs('internal_error');
  if (!res.headersSent) {
    // The serving table's mode: a bug may strike before the request has a context of its own.
    writeGatewayError(
      res,
      inResponseMode(gatewayErrors.internal(), deps.runtime()?.strictMode ?? false),
      ctx?.requestId,
      ctx?.limitHeaders,
      ctx?.surface?.errorShape,
    );
  } else {
    res.destroy();
  }
}

/** Up to the body: the request's context, its span and close hook, the paths answered without a body. */
function handle(req: IncomingMessage, res: ServerResponse, deps: StageDeps): void {
  const table = deps.runtime();
  if (table === undefined) {
    // Not ready, so no Service sends traffic here; a client that calls the pod directly learns why.
    res.shouldKeepAlive = false;
    writeGatewayError(res, gatewayErrors.notConfigured(), requestIdFor(req.headers['x-request-id']));
    return;
  }
  deps.connections.opened(req, res);
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  const traffic: Traffic =
    req.headers[deps.options.dispatchedHeader] === undefined ? 'realtime' : 'dispatched';
  const ctx = new RequestContext(req, res, table, traffic, path);
  ctx.requestId = requestIdFor(req.headers['x-request-id']);
  if (deps.accessLog !== undefined) ctx.clientAddress = req.socket.remoteAddress;
  // The response's only 'close' listener (the connection tracker hears of it from `finish`).
  // 'close' is emitted once per response: `on` spares the wrapper `once` builds.
  res.on('close', () => finish(ctx, deps));
  ctx.span = startServerSpan(
    req.headers,
    req.method ?? 'GET',
    ctx.surface !== undefined || path === MODELS_PATH ? path : OTHER_ROUTE,
  );

  if (path === MODELS_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
    listModels(ctx);
    return;
  }
  if (table.strictMode) {
    // Strict mode serves only the endpoints it can validate (spec 4.5).
    const endpoint = ctx.surface?.strict;
    if (endpoint === undefined || req.method !== 'POST')
      return reject(ctx, strictNotFound(path, deps.adminPort()), deps);
    ctx.strictEndpoint = endpoint;
  }

  // A client gone mid-body never gets here: its response's close (`finish`) ends the request.
  readBody(req, deps.options.maxBodyBytes, (body) => {
    if (body === BODY_TOO_LARGE) {
      // The rest of the upload is not read: close the connection after answering.
      res.shouldKeepAlive = false;
      reject(ctx, gatewayErrors.requestTooLarge(deps.options.maxBodyBytes), deps);
      return;
    }
    ctx.body = body;
    proceed(ctx, deps);
  });
}

/**
 * From the body on: resolve, authenticate, admit. Synchronous unless a limiter answers later
 * (limits shared through Redis); nothing waits for the request past this point, since the attempt
 * loop answers its own failures.
 */
function proceed(ctx: RequestContext, deps: StageDeps): void {
  try {
    const unresolved = resolveAlias(ctx, deps.adminPort);
    if (unresolved) return reject(ctx, unresolved, deps);

    setRequestInfo(ctx.span, ctx.modelLabel, ctx.traffic);
    if (!authenticate(ctx)) return reject(ctx, gatewayErrors.unauthorized(), deps);

    const admitted = admit(ctx);
    if (isPromise(admitted)) {
      admitted.then(
        (refusal) => afterAdmission(ctx, deps, refusal),
        (error: unknown) => failUnexpectedly(ctx, ctx.res, deps, error),
      );
      return;
    }
    afterAdmission(ctx, deps, admitted);
  } catch (error) {
    failUnexpectedly(ctx, ctx.res, deps, error);
  }
}

/** After admission: refuse, or check and run the attempts (which answer for themselves from there on). */
function afterAdmission(ctx: RequestContext, deps: StageDeps, refusal: Refusal | undefined): void {
  try {
    if (refusal) {
      if (refusal.kind === 'batch') deps.metrics.batchInflightRefusals.inc({ model: ctx.modelLabel });
      else if (refusal.kind === 'budget')
        deps.metrics.budgets.refused(refusal.scope, refusal.subject, refusal.code);
      return reject(ctx, refusalError(refusal), deps);
    }
    if (ctx.isClosed) return;

    if (ctx.strictEndpoint !== undefined) {
      const invalid = runStrictChecks(ctx, deps);
      if (invalid) return reject(ctx, invalid, deps);
    }
    const unreasonable = planRequestReasoning(ctx);
    if (unreasonable) return reject(ctx, unreasonable, deps);
    const translated = planTranslation(ctx);
    if (translated === 'answered') return;
    if (translated) return reject(ctx, translated, deps);

    if (ctx.countInflight()) deps.metrics.inflightOf.get(ctx.modelLabel).inc();
    runAttempts(ctx, deps.attempts);
  } catch (error) {
    failUnexpectedly(ctx, ctx.res, deps, error);
  }
}

/**
 * Answers a gateway error in the request's mode (the only way the request path answers one); counts
 * and logs it when it is a rejection (spec 6).
 */
function reject(ctx: RequestContext, made: GatewayError, deps: HandlerDeps): void {
  if (ctx.isClosed) return;
  const error = inResponseMode(made, ctx.table.strictMode);
  ctx.endedAs(error.outcome);
  writeGatewayError(ctx.res, error, ctx.requestId, ctx.limitHeaders, ctx.surface?.errorShape);
  if (error.outcome !== 'rejected') return;
  deps.metrics.rejections.inc({
    model: ctx.modelLabel,
    status: String(error.status),
    code: error.label ?? error.code ?? '',
    traffic: ctx.traffic,
  });
  deps.logger.info(
    {
      status: error.status,
      code: error.label ?? error.code,
      param: error.param,
      model: ctx.modelLabel,
      account: ctx.identity?.account ?? null,
      keyId: ctx.identity?.keyId ?? null,
      traffic: ctx.traffic,
      path: ctx.path,
    },
    'request rejected',
  );
}

/**
 * Runs once per request when its response closes: releases every slot, records the outcome, and
 * tells the connection tracker (whatever else fails here, so a drain never waits for it in vain).
 */
function finish(ctx: RequestContext, deps: HandlerDeps): void {
  try {
    ctx.close();
    const res = ctx.res;
    const outcome = finalOutcome(ctx.outcome, res);
    endServerSpan(ctx.span, res.headersSent ? res.statusCode : undefined, outcome);
    const metrics = deps.metrics;
    if (ctx.countedInflight) metrics.inflightOf.get(ctx.modelLabel).dec();
    // Label order follows each metric's labelNames: requests (model, status, traffic, outcome,
    // provider), duration (model, traffic).
    const status = res.headersSent ? res.statusCode : CLIENT_CLOSED;
    const durationMs = performance.now() - ctx.startedAt;
    metrics.requestsOf
      .get(ctx.modelLabel, statusLabel(status), ctx.traffic, outcome, ctx.served?.provider ?? '')
      .inc();
    metrics.durationOf.get(ctx.modelLabel, ctx.traffic).observe(durationMs / 1000);
    recordFinished(ctx, outcome, status, durationMs, deps);
  } finally {
    deps.connections.closed(ctx.req, ctx.res);
  }
}
