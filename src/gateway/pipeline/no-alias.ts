import { standardErrorBody } from '../strict/index.js';
import type { RequestContext } from './context.js';
import { gatewayErrors, type GatewayError } from './errors.js';

/** The admin listener's paths: a client that asks the proxy port for them has the wrong port. */
const ADMIN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

export function isAdminPath(path: string): boolean {
  return ADMIN_PATHS.has(path);
}

/**
 * Whether a content type says JSON: `application/json` with or without parameters, and the `+json`
 * and other JSON types clients send.
 */
export function declaresJson(contentType: string): boolean {
  return contentType.includes('json');
}

/** `number`, `array`, `null`: what a JSON value is, for a message. */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/**
 * Strict mode's 400 for a `model` the schema refuses, in the shape of its other schema errors
 * (message `Invalid request: ...`, body code null, `schema_mismatch` in the rejections metric).
 */
function strictModelError(problem: string): GatewayError {
  const { type } = standardErrorBody(400).error;
  return {
    status: 400,
    type,
    code: null,
    message: `Invalid request: \`model\`: ${problem}.`,
    param: 'model',
    outcome: 'rejected',
    label: 'schema_mismatch',
    strictShape: true,
  };
}

/**
 * Why a request names no alias, as precisely as the request allows: the wrong port, the wrong
 * content type, a body that is no JSON object, a `model` that is no string, or no `model` at all.
 * Runs only for requests refused here, so a request that names its alias pays nothing for it.
 */
export function noAliasError(ctx: RequestContext, adminPort: number): GatewayError {
  if (isAdminPath(ctx.path)) return gatewayErrors.servedOnAdminPort(ctx.path, adminPort);
  const model = ctx.json?.model;
  if (ctx.strictEndpoint !== undefined) {
    // Strict mode parsed the body as a JSON object already, or refused it in its own words.
    if (model === undefined) return strictModelError('required field is missing');
    if (typeof model !== 'string') return strictModelError(`expected string, received ${jsonType(model)}`);
    return strictModelError('must name an alias, received an empty string');
  }
  if (ctx.json === undefined && ctx.body.length > 0) {
    const contentType = ctx.req.headers['content-type'];
    // A JSON content type whose body parsed (else it was refused as invalid JSON) but is no object.
    if (contentType !== undefined && declaresJson(contentType)) return gatewayErrors.bodyNotObject();
    return gatewayErrors.unsupportedContentType(contentType);
  }
  if (model !== undefined && typeof model !== 'string') return gatewayErrors.modelNotString(jsonType(model));
  return gatewayErrors.missingModel();
}
