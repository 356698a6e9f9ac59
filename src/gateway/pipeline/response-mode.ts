import type { ProviderRoute } from '../runtime/table.js';
import type { StrictEndpoint } from '../strict/index.js';
import type { RequestContext } from './context.js';

/**
 * How a provider's response reaches the client. Decided per attempt, because trust and
 * sanitization follow the provider that finally serves (spec 2.2 rule 1, 4.4 rule 2).
 * - raw: passed through unchanged (non-strict).
 * - strict: deserialized, sanitized, errors standardized (spec 4.5).
 * - standalone: `sanitize_response` on chat completions (spec 4.6).
 * - translated: a request of a surface the provider does not speak (a Messages request to a
 *   chat-completions provider) was sent translated; the answer is translated back. In strict mode
 *   an untrusted provider's error messages are not forwarded.
 * A request to a provider that speaks its surface natively is passed through (raw), in strict mode
 * too: strict mode validates a Messages request, and ends a broken stream with its error event.
 */
export type ResponseMode =
  | { readonly kind: 'raw' }
  | { readonly kind: 'strict'; readonly endpoint: StrictEndpoint; readonly trusted: boolean }
  | { readonly kind: 'standalone' }
  | { readonly kind: 'translated'; readonly strict: boolean; readonly trusted: boolean };

const RAW: ResponseMode = Object.freeze({ kind: 'raw' });
const STANDALONE: ResponseMode = Object.freeze({ kind: 'standalone' });

export function responseModeFor(ctx: RequestContext, provider: ProviderRoute): ResponseMode {
  const native = ctx.surface?.nativeApi;
  if (native !== undefined) {
    if (provider.api === native) return RAW;
    return { kind: 'translated', strict: ctx.strictEndpoint !== undefined, trusted: provider.trusted };
  }
  if (ctx.strictEndpoint !== undefined) {
    return { kind: 'strict', endpoint: ctx.strictEndpoint, trusted: provider.trusted };
  }
  if (provider.sanitizeResponse && ctx.surface?.sanitizable === true) return STANDALONE;
  return RAW;
}
