import { gatewayErrors, type GatewayError } from './errors.js';
import { parseRequestBody, type StrictEndpoint } from '../strict/index.js';
import type { RequestContext } from './context.js';
import { strictRejection } from './strict-checks.js';
import { declaresJson, noAliasError } from './no-alias.js';

function looksLikeJson(ctx: RequestContext): boolean {
  const type = ctx.req.headers['content-type'];
  if (type === undefined) return ctx.body[0] === 0x7b; // '{'
  return declaresJson(type);
}

/**
 * Parses the body into `ctx.json` once per request (the one place the request body is parsed);
 * `ctx.json` stays undefined when the body is empty or not a JSON object. Returns a GatewayError
 * only when the body claims to be JSON and is not.
 */
export function parseJsonBody(ctx: RequestContext): GatewayError | undefined {
  // A body that failed to parse was refused by the first call; one that is not an object stays so.
  if (ctx.bodyParsed) return undefined;
  ctx.bodyParsed = true;
  if (ctx.strictEndpoint !== undefined) return parseStrictBody(ctx, ctx.strictEndpoint);
  if (ctx.body.length === 0 || !looksLikeJson(ctx)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(ctx.body.toString('utf8'));
  } catch {
    return gatewayErrors.invalidJson();
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    ctx.json = value as Record<string, unknown>;
  }
  return undefined;
}

/** Strict mode parses with the body-error labels of spec 6 (the body must be a JSON object). */
function parseStrictBody(ctx: RequestContext, endpoint: StrictEndpoint): GatewayError | undefined {
  const parsed = parseRequestBody(endpoint, ctx.req.headers['content-type'], ctx.body);
  if (!parsed.ok) return strictRejection(parsed);
  ctx.json = parsed.value;
  return undefined;
}

/**
 * Spec 4.4 rule 1: the alias comes from the `model-override` header when present, else from the
 * JSON body's `model`. The body is parsed here only when the header does not decide. `adminPort`
 * is named to a client that asks this port for a health or metrics path.
 */
export function resolveAlias(ctx: RequestContext, adminPort: () => number): GatewayError | undefined {
  const override = ctx.req.headers['model-override'];
  if (typeof override === 'string' && override.length > 0) {
    const unknown = selectRoute(ctx, override);
    if (unknown) return unknown;
    // Strict mode validates every body, whichever way the alias is named.
    return ctx.strictEndpoint === undefined ? undefined : parseJsonBody(ctx);
  }
  const invalid = parseJsonBody(ctx);
  if (invalid) return invalid;
  const model = ctx.json?.model;
  if (typeof model !== 'string' || model.length === 0) return noAliasError(ctx, adminPort());
  return selectRoute(ctx, model);
}

function selectRoute(ctx: RequestContext, alias: string): GatewayError | undefined {
  const route = ctx.table.routes.get(alias);
  if (!route) return gatewayErrors.modelNotFound(alias);
  ctx.route = route;
  ctx.modelLabel = route.model;
  return undefined;
}
