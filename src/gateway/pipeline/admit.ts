import { decideTogether, type Decision } from '../limits/redis/limiters.js';
import { isPromise, type Grant, type MaybePromise, type Refusal } from '../limits/types.js';
import type { RequestContext } from './context.js';

/** A limiter of the request and what it is asked with (the account, for the in-flight limiter). */
interface Ask {
  readonly limiter: { acquire(account?: string): MaybePromise<Grant | Refusal> };
  readonly account: string | undefined;
}

/** Holds a grant on the request (released when it closes) or returns the refusal. */
function settle(ctx: RequestContext, answer: Grant | Refusal): Refusal | undefined {
  if (answer.ok) {
    ctx.hold(answer);
    return undefined;
  }
  return answer;
}

function settleAll(ctx: RequestContext, decision: Decision): Refusal | undefined {
  for (const grant of decision.grants) ctx.hold(grant);
  return decision.refusal;
}

/**
 * The limiters of one request, in spec order: rate limits (key first, then target), concurrency
 * permits (key, then target), then the per-account in-flight slot for realtime traffic or the alias
 * batch slot for dispatched traffic.
 */
function asks(ctx: RequestContext): Ask[] {
  const route = ctx.route!;
  const definition = ctx.identity?.definitionName;
  const keyLimits = definition === undefined ? undefined : ctx.table.keyLimits.get(definition);
  const list: Ask[] = [];
  if (keyLimits?.rateLimit) list.push({ limiter: keyLimits.rateLimit, account: undefined });
  if (route.rateLimit) list.push({ limiter: route.rateLimit, account: undefined });
  if (keyLimits?.concurrencyLimit) list.push({ limiter: keyLimits.concurrencyLimit, account: undefined });
  if (route.concurrencyLimit) list.push({ limiter: route.concurrencyLimit, account: undefined });
  if (ctx.traffic === 'realtime') list.push({ limiter: route.inflight, account: ctx.identity?.account });
  else if (route.batch) list.push({ limiter: route.batch, account: undefined });
  return list;
}

async function continueAsync(
  ctx: RequestContext,
  pending: Promise<Grant | Refusal>,
  list: readonly Ask[],
  next: number,
): Promise<Refusal | undefined> {
  let refusal = settle(ctx, await pending);
  for (let i = next; !refusal && i < list.length; i++) {
    refusal = settle(ctx, await list[i]!.limiter.acquire(list[i]!.account));
  }
  return refusal;
}

/**
 * Admission (spec 7.1, 8). Each limiter is asked only after the previous one granted, so a refusal
 * spends nothing further; every grant is held by the request and released when it closes, also when
 * a later check refuses. In-memory limiters answer synchronously and admission then costs no
 * microtask; an asynchronous limiter switches to awaiting from that point on. Limiters shared through
 * Redis (`--shared-state`) are decided together in one round trip with the same outcome
 * (`decideTogether`): one network hop per request instead of one per limit.
 */
export function admit(ctx: RequestContext): MaybePromise<Refusal | undefined> {
  const list = asks(ctx);
  const together = decideTogether(list);
  if (together !== undefined) {
    return isPromise(together) ? together.then((d) => settleAll(ctx, d)) : settleAll(ctx, together);
  }
  for (let i = 0; i < list.length; i++) {
    const answer = list[i]!.limiter.acquire(list[i]!.account);
    if (isPromise(answer)) return continueAsync(ctx, answer, list, i + 1);
    const refusal = settle(ctx, answer);
    if (refusal) return refusal;
  }
  return undefined;
}
