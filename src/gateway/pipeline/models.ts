import type { RequestContext } from './context.js';

/**
 * Serialized model lists, one per distinct visible-alias array. The key index hands out one shared
 * array per key (and one for anonymous callers), so each list is rendered once per table.
 */
const rendered = new WeakMap<readonly string[], Buffer>();

function render(aliases: readonly string[], created: number): Buffer {
  let body = rendered.get(aliases);
  if (body === undefined) {
    body = Buffer.from(
      JSON.stringify({
        object: 'list',
        data: aliases.map((id) => ({ id, object: 'model', created, owned_by: 'gateway' })),
      }),
    );
    rendered.set(aliases, body);
  }
  return body;
}

/**
 * `GET /v1/models` (spec 4.1): the configured aliases in the reference list format, limited to
 * those the caller's key may use when keys are involved. Capabilities (reasoning and others) are
 * not advertised (spec 2.6 rule 8).
 */
export function listModels(ctx: RequestContext): void {
  const aliases = ctx.table.keys.visibleAliases(ctx.req.headers.authorization);
  const body = render(aliases, ctx.table.createdAt);
  ctx.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': body.length,
    'x-request-id': ctx.requestId,
  });
  ctx.res.end(ctx.req.method === 'HEAD' ? undefined : body);
}
