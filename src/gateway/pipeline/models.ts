import { presentedAuthorization } from '../auth/keys.js';
import type { RequestContext } from './context.js';

/**
 * Serialized model lists, one per distinct visible-alias array. The key index hands out one shared
 * array per key (and one for anonymous callers), so each list is rendered once per table.
 */
const rendered = {
  openai: new WeakMap<readonly string[], Buffer>(),
  anthropic: new WeakMap<readonly string[], Buffer>(),
};

function render(aliases: readonly string[], created: number, shape: 'openai' | 'anthropic'): Buffer {
  const cache = rendered[shape];
  let body = cache.get(aliases);
  if (body === undefined) {
    body = Buffer.from(
      JSON.stringify(shape === 'anthropic' ? anthropicList(aliases, created) : openAiList(aliases, created)),
    );
    cache.set(aliases, body);
  }
  return body;
}

function openAiList(aliases: readonly string[], created: number): unknown {
  return {
    object: 'list',
    data: aliases.map((id) => ({ id, object: 'model', created, owned_by: 'gateway' })),
  };
}

/** Anthropic's model list: one page holding every alias. */
function anthropicList(aliases: readonly string[], created: number): unknown {
  const createdAt = new Date(created * 1000).toISOString();
  return {
    data: aliases.map((id) => ({ type: 'model', id, display_name: id, created_at: createdAt })),
    has_more: false,
    first_id: aliases[0] ?? null,
    last_id: aliases.at(-1) ?? null,
  };
}

/**
 * `GET /v1/models` (spec 4.1): the configured aliases in the reference list format, limited to
 * those the caller's key may use when keys are involved. A request carrying `anthropic-version`
 * (an Anthropic client) gets Anthropic's list format. Capabilities (reasoning and others) are not
 * advertised (spec 2.6 rule 8).
 */
export function listModels(ctx: RequestContext): void {
  const aliases = ctx.table.keys.visibleAliases(presentedAuthorization(ctx.req.headers));
  const shape = ctx.req.headers['anthropic-version'] === undefined ? 'openai' : 'anthropic';
  const body = render(aliases, ctx.table.createdAt, shape);
  ctx.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': body.length,
    'x-request-id': ctx.requestId,
  });
  ctx.res.end(ctx.req.method === 'HEAD' ? undefined : body);
}
