import type { OutgoingHttpHeaders } from 'node:http';
import { durationText } from '../limits/limit-headers.js';
import type { SpendBudget, SpendHold } from '../limits/spend/types.js';
import type { BudgetRefusal, MaybePromise } from '../limits/types.js';
import type { TokenPrices } from '../runtime/table.js';
import type { RequestContext } from './context.js';
import { parseJsonBody } from './resolve.js';
import type { TokenUsage } from './usage.js';

/**
 * Spend budgets on the request path: what a request reserves at admission, and what it is charged
 * when it ends. The rules, documented in docs/operations.md ("Spend budgets"):
 *
 * - Reservation: the prompt at one token per four bytes of the request body, plus the request's
 *   completion maximum (`max_completion_tokens`, else `max_tokens`, else `max_output_tokens`; else
 *   the budget's `default_max_tokens`), at the highest prices of the target's providers.
 * - Charge: the cost of every attempt whose provider reported usage (a failed-over attempt
 *   included), at that provider's prices. A response that was served but whose usage never arrived
 *   (a cut stream, a client that left, a provider that reports none) is charged its reservation in
 *   full: the most it could have cost, never zero. A request that reached no provider, or whose
 *   providers only answered errors, is charged nothing.
 */

/** Bytes of request body per estimated prompt token. */
const BODY_BYTES_PER_TOKEN = 4;

export const BUDGET_HEADER_NAMES = [
  'x-ratelimit-limit-budget',
  'x-ratelimit-remaining-budget',
  'x-ratelimit-reset-budget',
] as const;

/** The request's budgets, in the order they are checked: its key's, its account's, its target's. */
function budgetsOf(ctx: RequestContext): SpendBudget[] | undefined {
  const identity = ctx.identity;
  const keyBudget =
    identity?.definitionName === undefined
      ? undefined
      : ctx.table.keyLimits.get(identity.definitionName)?.budget;
  const accountBudget =
    identity?.account === undefined ? undefined : ctx.table.accountBudgets.get(identity.account);
  const targetBudget = ctx.route?.budget;
  if (keyBudget === undefined && accountBudget === undefined && targetBudget === undefined) return undefined;
  const budgets: SpendBudget[] = [];
  if (keyBudget !== undefined) budgets.push(keyBudget);
  if (accountBudget !== undefined) budgets.push(accountBudget);
  if (targetBudget !== undefined) budgets.push(targetBudget);
  return budgets;
}

/** The completion maximum the request sets itself, if any. */
function requestedMaxTokens(ctx: RequestContext): number | undefined {
  parseJsonBody(ctx);
  const json = ctx.json;
  if (json === undefined) return undefined;
  for (const field of ['max_completion_tokens', 'max_tokens', 'max_output_tokens'] as const) {
    const value = json[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  }
  return undefined;
}

/**
 * Reserves the request's largest possible cost in each of its budgets (all or none). Synchronous
 * for budgets in memory; a promise for budgets shared through Redis.
 */
export function reserveSpend(ctx: RequestContext): MaybePromise<BudgetRefusal | undefined> {
  const budgets = budgetsOf(ctx);
  if (budgets === undefined) return undefined;
  const prices = ctx.route!.reservePrices;
  const promptCost =
    prices === undefined ? 0 : Math.ceil(ctx.body.length / BODY_BYTES_PER_TOKEN) * prices.prompt;
  const completionPrice = prices?.completion ?? 0;
  const requested = requestedMaxTokens(ctx);
  const amounts: number[] = [];
  let largest = 0;
  for (const budget of budgets) {
    const amount = promptCost + (requested ?? budget.params.defaultMaxTokens) * completionPrice;
    amounts.push(amount);
    if (amount > largest) largest = amount;
  }
  const answer = budgets[0]!.book.reserve(budgets, amounts);
  if (answer instanceof Promise) return answer.then((result) => reserved(ctx, budgets, largest, result));
  return reserved(ctx, budgets, largest, answer);
}

/** Keeps the hold (settling it at once if the client already left) or reports the refusal. */
function reserved(
  ctx: RequestContext,
  budgets: readonly SpendBudget[],
  largest: number,
  result: SpendHold | BudgetRefusal,
): BudgetRefusal | undefined {
  if (!result.ok) {
    if (ctx.table.rateLimitHeaders) {
      const budget =
        budgets.find((b) => b.scope === result.scope && b.name === result.subject) ?? budgets[0]!;
      addBudgetHeaders(ctx, budget.params.amount, 0, (result.retryAfterSeconds ?? 0) * 1000);
    }
    return result;
  }
  ctx.spendHold = result;
  ctx.spendReserved = largest;
  if (ctx.isClosed) settleSpend(ctx);
  else if (ctx.table.rateLimitHeaders && result.level !== undefined)
    addBudgetHeaders(ctx, result.level.amount, result.level.remaining, result.level.resetMs);
  return undefined;
}

/**
 * What the request is charged: its attempts' reported costs, or, for a served response whose usage
 * never arrived, its reservation. Undefined when nothing is priced and nothing was reserved.
 */
export function chargedCost(ctx: RequestContext): number | undefined {
  const served = ctx.served;
  const cost = ctx.failedAttemptsCost;
  if (served === undefined) return ctx.spendHold === undefined && cost === 0 ? undefined : cost;
  if (served.usage !== undefined && served.pricing !== undefined)
    return cost + usageCost(served.usage, served.pricing);
  // A provider's error passed on to the client cost nothing; a success without usage, its reservation.
  const status = ctx.res.statusCode;
  if (ctx.spendHold !== undefined && status >= 200 && status < 300) return cost + ctx.spendReserved;
  return served.pricing === undefined && ctx.spendHold === undefined ? undefined : cost;
}

/** Replaces the request's reservations with what it is charged (once; a request without budgets has none). */
export function settleSpend(ctx: RequestContext, cost: number | undefined = chargedCost(ctx)): void {
  const hold = ctx.spendHold;
  if (hold === undefined) return;
  hold.settle(cost ?? 0);
}

/**
 * A failed-over attempt whose provider reported usage before it failed (a stream's opening usage,
 * an error inside a 200): its cost counts toward the request's charge.
 */
export function chargeFailedAttempt(
  ctx: RequestContext,
  pricing: TokenPrices | undefined,
  usage: TokenUsage | undefined,
): void {
  if (pricing === undefined || usage === undefined) return;
  ctx.failedAttemptsCost += usageCost(usage, pricing);
}

/**
 * The cost of reported usage at a provider's prices: cached prompt tokens and prompt tokens written
 * to the provider's cache at their own prices, the rest of the prompt and the completion at theirs.
 */
export function usageCost(usage: TokenUsage, price: TokenPrices): number {
  const cached = Math.min(usage.cachedPrompt, usage.prompt);
  const written = Math.min(usage.cacheWrite, usage.prompt - cached);
  return (
    ((usage.prompt - cached - written) * price.prompt +
      cached * price.cachedPrompt +
      written * price.cacheWrite +
      usage.completion * price.completion) /
    1_000_000
  );
}

/**
 * The budget headers, named like the `x-ratelimit-*` ones: the budget's amount, what is left after
 * this request's reservation (never below 0), and the time until its window holds no spend. Added to
 * the request's rate-limit headers object when it has its own one.
 */
function addBudgetHeaders(ctx: RequestContext, amount: number, remaining: number, resetMs: number): void {
  const own = ctx.limitHeaders;
  const headers: OutgoingHttpHeaders = own === undefined || Object.isFrozen(own) ? { ...own } : own;
  headers[BUDGET_HEADER_NAMES[0]] = amountText(amount);
  headers[BUDGET_HEADER_NAMES[1]] = remaining > 0 ? String(Math.round(remaining * 1e6) / 1e6) : '0';
  headers[BUDGET_HEADER_NAMES[2]] = durationText(resetMs > 0 ? Math.ceil(resetMs) : 0);
  ctx.limitHeaders = headers;
}

/** The last amount written and its text: most responses report the same budget's amount. */
let lastAmount = Number.NaN;
let lastAmountText = '';

/** An amount with at most six decimals. */
function amountText(amount: number): string {
  if (amount === lastAmount) return lastAmountText;
  lastAmount = amount;
  lastAmountText = String(Math.round(amount * 1e6) / 1e6);
  return lastAmountText;
}
