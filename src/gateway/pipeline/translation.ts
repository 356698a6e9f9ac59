import { estimateInputTokens } from '../anthropic/count-tokens.js';
import { messagesToChat } from '../anthropic/request.js';
import type { RequestContext } from './context.js';
import type { GatewayError } from './errors.js';
import { parseJsonBody } from './resolve.js';

/**
 * Before any attempt: a request of a surface some provider of its route does not speak (a Messages
 * request to a pool with a chat-completions provider) is translated once for those providers. What
 * cannot be translated goes only to the providers that speak the surface, or, when there are none,
 * is refused with a 400 naming the field; a token count goes to those providers too, or is answered
 * by the gateway with its estimate (`answered`). A route whose providers all speak the surface
 * skips this: its requests pass through untouched.
 */
export function planTranslation(ctx: RequestContext): GatewayError | 'answered' | undefined {
  const surface = ctx.surface;
  const native = surface?.nativeApi;
  const providers = ctx.route!.providers;
  if (native === undefined || providers.every((provider) => provider.api === native)) return undefined;
  // In a pool that mixes APIs, what the others cannot take goes to the providers that speak it.
  const someNative = providers.some((provider) => provider.api === native);
  const unparsable = parseJsonBody(ctx);
  if (unparsable) return unparsable;
  // A body that is no JSON object (sent with the alias in `model-override`) has nothing to translate.
  const request = ctx.json ?? {};
  if (surface!.localAnswer === 'token_count') {
    if (someNative) {
      ctx.nativeOnly = true;
      return undefined;
    }
    answerTokenCount(ctx, estimateInputTokens(request));
    return 'answered';
  }
  const translated = messagesToChat(request);
  if (!translated.ok && someNative) {
    ctx.nativeOnly = true;
    return undefined;
  }
  if (!translated.ok) {
    return {
      status: 400,
      type: 'invalid_request_error',
      code: 'untranslatable_request',
      message: `${translated.field === '' ? 'The request' : `\`${translated.field}\``} cannot be sent to a chat-completions provider: ${translated.message}`,
      param: translated.field === '' ? null : translated.field,
      outcome: 'rejected',
    };
  }
  const stop = request.stop_sequences;
  ctx.translation = {
    body: translated.body,
    dropped: droppedHeader(translated.dropped),
    model: typeof request.model === 'string' ? request.model : ctx.modelLabel,
    stopSequences: Array.isArray(stop) ? stop.filter((s): s is string => typeof s === 'string') : undefined,
  };
  return undefined;
}

/** At most this much of the dropped fields' names goes into the response header. */
const MAX_DROPPED_HEADER = 512;
/** A field name a header can carry: visible ASCII without the separator. */
const HEADER_SAFE_NAME = /^[\x21-\x2b\x2d-\x7e]+$/;

/**
 * The dropped fields as a header value: names the client chose (unknown fields) are kept only when
 * a header can carry them, the rest counted, and the whole bounded.
 */
function droppedHeader(names: readonly string[]): string {
  let value = '';
  let left = 0;
  for (const name of names) {
    if (!HEADER_SAFE_NAME.test(name) || value.length + name.length + 2 > MAX_DROPPED_HEADER) left++;
    else value += value === '' ? name : `, ${name}`;
  }
  if (left > 0) value += `${value === '' ? '' : ', '}(${left} more)`;
  return value;
}

/** The gateway's own answer to a token count: `{"input_tokens": N}`, its estimate. */
function answerTokenCount(ctx: RequestContext, tokens: number): void {
  const body = `{"input_tokens":${tokens}}`;
  ctx.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-request-id': ctx.requestId,
    'x-gateway-token-count': 'estimate',
    // It was admitted under the request's limits like any request, and says where it stands.
    ...ctx.limitHeaders,
  });
  ctx.res.end(body);
}
