import { isPromise, type Grant, type MaybePromise, type Refusal } from '../limits/types.js';
import type { RequestContext } from './context.js';

type Acquire = () => MaybePromise<Grant | Refusal>;

/**
 * Takes one limiter's answer: a grant is held by the request (released when it closes), a refusal is
 * returned. Synchronous limiters cost no microtask; a shared (async) one is awaited.
 */
function take(ctx: RequestContext, acquire: Acquire): MaybePromise<Refusal | undefined> {
  const answer = acquire();
  if (isPromise(answer)) {
    return answer.then((settled) => {
      if (settled.ok) {
        ctx.hold(settled);
        return undefined;
      }
      return settled;
    });
  }
  if (answer.ok) {
    ctx.hold(answer);
    return undefined;
  }
  return answer;
}

/**
 * Admission (spec 7.1, 8), in order: rate limits (key first, then target), concurrency permits
 * (key, then target), then the per-account in-flight slot for realtime traffic or the alias batch
 * slot for dispatched traffic. Every grant taken is held by the request and released when it
 * closes, also when a later check refuses.
 */
export async function admit(ctx: RequestContext): Promise<Refusal | undefined> {
  const route = ctx.route!;
  const definition = ctx.identity?.definitionName;
  const keyLimits = definition === undefined ? undefined : ctx.table.keyLimits.get(definition);

  const steps: Acquire[] = [];
  if (keyLimits?.rateLimit) steps.push(() => keyLimits.rateLimit!.acquire());
  if (route.rateLimit) steps.push(() => route.rateLimit!.acquire());
  if (keyLimits?.concurrencyLimit) steps.push(() => keyLimits.concurrencyLimit!.acquire());
  if (route.concurrencyLimit) steps.push(() => route.concurrencyLimit!.acquire());
  if (ctx.traffic === 'realtime') {
    const account = ctx.identity?.account;
    steps.push(() => route.inflight.acquire(account));
  } else if (route.batch) {
    const batch = route.batch;
    steps.push(() => batch.acquire());
  }

  for (const step of steps) {
    const taken = take(ctx, step);
    const refusal = isPromise(taken) ? await taken : taken;
    if (refusal) return refusal;
  }
  return undefined;
}
