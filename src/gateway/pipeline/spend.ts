import type { OutgoingHttpHeaders } from 'node:http';
import { durationText } from '../limits/limit-headers.js';
import type { SpendBudget, SpendHold } from '../limits/spend/types.js';
import type { BudgetRefusal, MaybePromise } from '../limits/types.js';
import type { TokenPrices } from '../runtime/table.js';
import type { RequestContext } from './context.js';
import type { RequestOutcome } from './outcome.js';
import { parseJsonBody } from './resolve.js';
import type { TokenUsage } from './usage.js';

/**
 * Spend budgets on the request path: what a request reserves at admission, and what it is charged
 * when it ends. The rules, documented in docs/operations.md ("Spend budgets"):
 *
 * - Reservation: the prompt at one token per four bytes of the request body, plus the request's
 *   completion maximum (`max_completion_tokens`, else `max_tokens`, else `max_output_tokens`; else
 *   the budget's `default_max_tokens`) times its choices (`n`, `best_of`), at the highest prices of
 *   the target's providers. Token counts (a surface that reports no usage) are neither reserved
 *   nor charged: providers do not bill them.
 * - Charge (`chargedCost`): failed-over attempts whose providers reported usage, at their prices,
 *   plus what was served:
 *   - a success that completed: the usage it reported, else its reservation;
 *   - a success that did not complete (cut, an error inside it, its client gone): the larger of the
 *     usage it reported (a Messages stream reports its prompt at its start) and its reservation;
 *   - a provider's error status passed on: the usage it reported, else nothing;
 *   - nothing served, the client gone while a provider had the request: its reservation;
 *   - nothing served otherwise (refused, timed out, every provider failed): nothing more.
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

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** The completion maximum the request sets itself, if any, times the choices it asks for. */
function requestedMaxTokens(json: Record<string, unknown> | undefined): number | undefined {
  if (json === undefined) return undefined;
  const max =
    positiveInteger(json.max_completion_tokens) ??
    positiveInteger(json.max_tokens) ??
    positiveInteger(json.max_output_tokens);
  return max === undefined ? undefined : max * choicesOf(json);
}

/** How many completions the request asks for (`n`, and `best_of` of text completions, generated whole). */
function choicesOf(json: Record<string, unknown> | undefined): number {
  if (json === undefined) return 1;
  return Math.max(1, positiveInteger(json.n) ?? 1, positiveInteger(json.best_of) ?? 1);
}

/**
 * Reserves the request's largest possible cost in each of its budgets (all or none). Synchronous
 * for budgets in memory; a promise for budgets shared through Redis.
 */
export function reserveSpend(ctx: RequestContext): MaybePromise<BudgetRefusal | undefined> {
  if (ctx.surface?.reportsUsage === false || ctx.isClosed) return undefined;
  const budgets = budgetsOf(ctx);
  if (budgets === undefined) return undefined;
  parseJsonBody(ctx);
  const prices = ctx.route!.reservePrices;
  const promptCost =
    prices === undefined ? 0 : Math.ceil(ctx.body.length / BODY_BYTES_PER_TOKEN) * prices.prompt;
  const completionPrice = prices?.completion ?? 0;
  const requested = requestedMaxTokens(ctx.json);
  const choices = requested === undefined ? choicesOf(ctx.json) : 1;
  const amounts: number[] = [];
  let largest = 0;
  for (const budget of budgets) {
    const amount = promptCost + (requested ?? budget.params.defaultMaxTokens * choices) * completionPrice;
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
    // A target's budget is every tenant's: its figures are not the client's to read.
    if (ctx.table.rateLimitHeaders && result.status === 429 && result.scope !== 'target') {
      const budget =
        budgets.find((b) => b.scope === result.scope && b.name === result.subject) ?? budgets[0]!;
      addBudgetHeaders(ctx, budget.params.amount, 0, (result.retryAfterSeconds ?? 0) * 1000);
    }
    return result;
  }
  ctx.spendHold = result;
  ctx.spendReserved = largest;
  // The client left while the reservation was being made: nothing reached a provider.
  if (ctx.isClosed) settleSpend(ctx, 0);
  else if (ctx.table.rateLimitHeaders && result.level !== undefined)
    addBudgetHeaders(ctx, result.level.amount, result.level.remaining, result.level.resetMs);
  return undefined;
}

/**
 * What the request is charged, by the rule above; undefined when nothing is priced and nothing was
 * reserved (the access log's `cost` is then null).
 */
export function chargedCost(ctx: RequestContext, outcome: RequestOutcome): number | undefined {
  const served = ctx.served;
  const failed = ctx.failedAttemptsCost;
  const reported =
    served?.usage !== undefined && served.pricing !== undefined
      ? usageCost(served.usage, served.pricing)
      : undefined;
  if (ctx.spendHold === undefined) {
    if (reported !== undefined) return failed + reported;
    return served?.pricing === undefined && failed === 0 ? undefined : failed;
  }
  const reservation = ctx.spendReserved;
  if (served === undefined)
    return outcome === 'client_cancelled' && ctx.attempts > 0 ? failed + reservation : failed;
  const status = ctx.res.statusCode;
  if (status < 200 || status >= 300) return failed + (reported ?? 0);
  if (outcome === 'completed') return failed + (reported ?? reservation);
  return failed + Math.max(reported ?? 0, reservation);
}

/** Replaces the request's reservations with what it is charged (once; a request without budgets has none). */
export function settleSpend(ctx: RequestContext, cost: number | undefined): void {
  ctx.spendHold?.settle(cost ?? 0);
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
 * The budget headers, named like the `x-ratelimit-*` ones, for the tightest of the request's key and
 * account budgets (a target's budget is shared by every tenant, so its figures are never sent): the
 * budget's amount, what is left after this request's reservation (never below 0), and the time
 * until its window starts again. Added to the request's rate-limit headers object when it has its
 * own one.
 */
function addBudgetHeaders(ctx: RequestContext, amount: number, remaining: number, resetMs: number): void {
  const own = ctx.limitHeaders;
  const headers: OutgoingHttpHeaders = own === undefined || Object.isFrozen(own) ? { ...own } : own;
  headers[BUDGET_HEADER_NAMES[0]] = amountText(amount);
  headers[BUDGET_HEADER_NAMES[1]] = remaining > 0 ? amountText(remaining) : '0';
  headers[BUDGET_HEADER_NAMES[2]] = durationText(resetMs > 0 ? Math.ceil(resetMs) : 0);
  ctx.limitHeaders = headers;
}

/** An amount with at most six decimals. */
function amountText(amount: number): string {
  return String(Math.round(amount * 1e6) / 1e6);
}
