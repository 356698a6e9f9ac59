import { isPromise, type Grant, type MaybePromise, type Refusal } from '../limits/types.js';
import type { RequestContext } from './context.js';

type Answer = MaybePromise<Grant | Refusal>;

/** Holds a grant on the request (released when it closes) or returns the refusal. */
function settle(ctx: RequestContext, answer: Grant | Refusal): Refusal | undefined {
  if (answer.ok) {
    ctx.hold(answer);
    return undefined;
  }
  return answer;
}

/**
 * The limiter answers of one request, in spec order: rate limits (key first, then target),
 * concurrency permits (key, then target), then the per-account in-flight slot for realtime traffic
 * or the alias batch slot for dispatched traffic. Each limiter is asked only after the previous one
 * granted, so a refusal spends nothing further.
 */
function* answers(ctx: RequestContext): Generator<Answer, undefined, undefined> {
  const route = ctx.route!;
  const definition = ctx.identity?.definitionName;
  const keyLimits = definition === undefined ? undefined : ctx.table.keyLimits.get(definition);
  if (keyLimits?.rateLimit) yield keyLimits.rateLimit.acquire();
  if (route.rateLimit) yield route.rateLimit.acquire();
  if (keyLimits?.concurrencyLimit) yield keyLimits.concurrencyLimit.acquire();
  if (route.concurrencyLimit) yield route.concurrencyLimit.acquire();
  if (ctx.traffic === 'realtime') yield route.inflight.acquire(ctx.identity?.account);
  else if (route.batch) yield route.batch.acquire();
  return undefined;
}

async function continueAsync(
  ctx: RequestContext,
  pending: Promise<Grant | Refusal>,
  rest: Generator<Answer, undefined, undefined>,
): Promise<Refusal | undefined> {
  let refusal = settle(ctx, await pending);
  for (let next = rest.next(); !refusal && !next.done; next = rest.next()) {
    refusal = settle(ctx, await next.value);
  }
  return refusal;
}

/**
 * Admission (spec 7.1, 8). Every grant is held by the request and released when it closes, also when
 * a later check refuses. In-memory limiters answer synchronously and admission then costs no
 * microtask; a shared (async) limiter switches to awaiting from that point on.
 */
export function admit(ctx: RequestContext): MaybePromise<Refusal | undefined> {
  const steps = answers(ctx);
  for (let next = steps.next(); !next.done; next = steps.next()) {
    const answer = next.value;
    if (isPromise(answer)) return continueAsync(ctx, answer, steps);
    const refusal = settle(ctx, answer);
    if (refusal) return refusal;
  }
  return undefined;
}
