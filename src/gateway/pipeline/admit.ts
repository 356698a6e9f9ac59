import type { OutgoingHttpHeaders } from 'node:http';
import type { KeyLimits } from '../runtime/table.js';
import { decideTogether, type Ask, type Decision } from '../limits/redis/limiters.js';
import { isPromise, type Grant, type MaybePromise, type Refusal } from '../limits/types.js';
import { LimitLevels } from '../limits/limit-headers.js';
import type { RequestContext } from './context.js';
import { reserveSpend } from './spend.js';

/**
 * A limiter as admission asks it (the in-flight limiter takes the account). An in-memory bucket or
 * budget reports its level for the rate-limit headers; a shared one reports through the decision.
 */
interface Limiter {
  acquire(account?: string): MaybePromise<Grant | Refusal>;
  reportTo?(levels: LimitLevels): void;
}

/**
 * The steps of admission: token budgets first (key, target, account: they take nothing, so a request
 * they refuse spends no other limit), then in spec order rate limits (key first, then target),
 * concurrency permits (key, then target), then the per-account in-flight slot for realtime traffic
 * or the alias batch slot for dispatched traffic. A request has a limiter at some of them.
 */
const STEPS = 8;
const LAST_STEP = STEPS - 1;
/** The steps before this one hold the limits the `x-ratelimit-*` headers report: budgets and buckets. */
const LEVEL_STEPS = 5;
/**
 * The headers of a limited request whose levels are unknown (Redis gave no answer): none of the
 * gateway's, and still none of the provider's, whose limits are not the client's.
 */
const NO_LIMIT_HEADERS: OutgoingHttpHeaders = Object.freeze({});

/** The limiter of one step for this request, if it has one there. */
function limiterAt(ctx: RequestContext, keyLimits: KeyLimits | undefined, step: number): Limiter | undefined {
  const route = ctx.route!;
  switch (step) {
    case 0:
      return keyLimits?.tokenLimit;
    case 1:
      return route.tokenLimit;
    case 2: {
      const account = ctx.identity?.account;
      return account === undefined ? undefined : ctx.table.accountTokenLimits.get(account);
    }
    case 3:
      return keyLimits?.rateLimit;
    case 4:
      return route.rateLimit;
    case 5:
      return keyLimits?.concurrencyLimit;
    case 6:
      return route.concurrencyLimit;
    default:
      return ctx.traffic === 'realtime' ? route.inflight : route.batch;
  }
}

/** What a step's limiter is asked with: the in-flight slot is per account, the others take nothing. */
function accountAt(ctx: RequestContext, step: number): string | undefined {
  return step === LAST_STEP && ctx.traffic === 'realtime' ? ctx.identity?.account : undefined;
}

function keyLimitsOf(ctx: RequestContext): KeyLimits | undefined {
  const definition = ctx.identity?.definitionName;
  return definition === undefined ? undefined : ctx.table.keyLimits.get(definition);
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

/** Asks the limiters from `step` on, one at a time, until one refuses. */
function askInTurn(
  ctx: RequestContext,
  keyLimits: KeyLimits | undefined,
  step: number,
): MaybePromise<Refusal | undefined> {
  for (; step < STEPS; step++) {
    const limiter = limiterAt(ctx, keyLimits, step);
    if (limiter === undefined) continue;
    const answer = limiter.acquire(accountAt(ctx, step));
    if (isPromise(answer)) return continueAsync(ctx, keyLimits, answer, step + 1);
    const refusal = settle(ctx, answer);
    if (refusal) return refusal;
  }
  return undefined;
}

/** Waits for a limiter that answers later, then goes on asking from `step`. */
async function continueAsync(
  ctx: RequestContext,
  keyLimits: KeyLimits | undefined,
  pending: Promise<Grant | Refusal>,
  step: number,
): Promise<Refusal | undefined> {
  return settle(ctx, await pending) ?? askInTurn(ctx, keyLimits, step);
}

/** Every limiter of the request with what it is asked with (for a decision in one round trip). */
function asks(ctx: RequestContext, keyLimits: KeyLimits | undefined): Ask[] {
  const list: Ask[] = [];
  for (let step = 0; step < STEPS; step++) {
    const limiter = limiterAt(ctx, keyLimits, step);
    if (limiter !== undefined) list.push({ limiter, account: accountAt(ctx, step) });
  }
  return list;
}

/**
 * Admission (spec 7.1, 8). Each limiter is asked only after the previous one granted, so a refusal
 * spends nothing further; every grant is held by the request and released when it closes, also when
 * a later check refuses. In-memory limiters answer synchronously and admission then costs no
 * microtask, and no allocation of its own beyond the levels of a request's buckets and budgets for
 * its rate-limit headers; an asynchronous limiter switches to awaiting from that point on. Limiters shared through Redis (`--shared-state`) are decided together in one round trip
 * with the same outcome (`decideTogether`): one network hop per request instead of one per limit.
 */
export function admit(ctx: RequestContext): MaybePromise<Refusal | undefined> {
  const limited = admitLimits(ctx);
  // Spend is reserved last, once every other limit granted: a request another limit refuses
  // reserves nothing.
  if (isPromise(limited)) return limited.then((refusal) => refusal ?? reserveSpend(ctx));
  return limited ?? reserveSpend(ctx);
}

function admitLimits(ctx: RequestContext): MaybePromise<Refusal | undefined> {
  const keyLimits = keyLimitsOf(ctx);
  if (ctx.table.sharedLimits) {
    const levels = levelsFor(ctx, keyLimits);
    const together = decideTogether(asks(ctx, keyLimits), levels);
    if (together !== undefined) {
      const settled = (decision: Decision): Refusal | undefined => {
        if (levels !== undefined) ctx.limitHeaders = levels.headers() ?? NO_LIMIT_HEADERS;
        return settleAll(ctx, decision);
      };
      return isPromise(together) ? together.then(settled) : settled(together);
    }
  }
  const refusal = askInTurn(ctx, keyLimits, 0);
  if (!ctx.table.rateLimitHeaders) return refusal;
  if (!isPromise(refusal)) {
    noteLevels(ctx, keyLimits);
    return refusal;
  }
  return refusal.then((answer) => {
    noteLevels(ctx, keyLimits);
    return answer;
  });
}

/** Where the shared limits report their levels, when the request has a bucket or budget and headers are on. */
function levelsFor(ctx: RequestContext, keyLimits: KeyLimits | undefined): LimitLevels | undefined {
  if (!ctx.table.rateLimitHeaders) return undefined;
  for (let step = 0; step < LEVEL_STEPS; step++)
    if (limiterAt(ctx, keyLimits, step) !== undefined) return new LimitLevels();
  return undefined;
}

/**
 * Reads the in-memory buckets' and budgets' levels after admission, for the response's headers. A
 * request with none of them has no headers of its own (the provider's pass through).
 */
function noteLevels(ctx: RequestContext, keyLimits: KeyLimits | undefined): void {
  let levels: LimitLevels | undefined;
  for (let step = 0; step < LEVEL_STEPS; step++) {
    const limiter = limiterAt(ctx, keyLimits, step);
    if (limiter === undefined) continue;
    levels ??= new LimitLevels();
    limiter.reportTo?.(levels);
  }
  if (levels !== undefined) ctx.limitHeaders = levels.headers() ?? NO_LIMIT_HEADERS;
}

/**
 * Charges a finished request's tokens (prompt + completion, as its provider reported them) to every
 * token budget it was admitted under: its key's, its target's and its account's.
 */
export function chargeTokens(ctx: RequestContext, tokens: number): void {
  const route = ctx.route;
  if (route === undefined) return;
  keyLimitsOf(ctx)?.tokenLimit?.charge(tokens);
  route.tokenLimit?.charge(tokens);
  const account = ctx.identity?.account;
  if (account !== undefined) ctx.table.accountTokenLimits.get(account)?.charge(tokens);
}
