import { presentedAuthorization } from '../auth/keys.js';
import type { RequestContext } from './context.js';

/**
 * Spec 5: a keyed target needs `Authorization: Bearer <key>` (or `x-api-key: <key>`) with one of its keys (or a global key);
 * an open target accepts anyone. On success the caller's identity (never the key) is attached.
 */
export function authenticate(ctx: RequestContext): boolean {
  const result = ctx.route!.auth.authenticate(presentedAuthorization(ctx.req.headers));
  if (!result.ok) return false;
  ctx.identity = result.identity ?? undefined;
  return true;
}
