import type { BudgetRefusal, BudgetScope, MaybePromise } from '../types.js';
import type { BudgetWindow } from './window.js';

/**
 * The seam between the request path and spend budgets. A budget is asked at admission to reserve
 * the most a request may cost; the reservation is replaced by the request's actual cost when it
 * ends (`SpendHold.settle`). In-memory budgets answer synchronously; budgets shared through Redis
 * answer with a promise, as the limiters of `types.ts` do.
 */

export interface BudgetParams {
  /** What the window may spend, in the currency of the configured prices. */
  readonly amount: number;
  readonly window: BudgetWindow;
  /** Completion tokens reserved for a request that sets no maximum of its own. */
  readonly defaultMaxTokens: number;
}

/** One configured budget (of a key definition, an account or a target). */
export interface SpendBudget {
  readonly scope: BudgetScope;
  /** Key definition name, account or target key. */
  readonly name: string;
  /** Its parameters now (a reload may change the amount of the same budget). */
  readonly params: BudgetParams;
  /** Where it lives: every budget of one table has the same book. */
  readonly book: SpendBook;
}

/** A budget's room as a response's `x-ratelimit-*-budget` headers report it. */
export interface BudgetLevel {
  readonly amount: number;
  /** What is left after this request's reservation (may be below zero after a reload lowered it). */
  readonly remaining: number;
  /** Milliseconds until the window starts again: a calendar window's end, or the newest charge leaving a rolling one. */
  readonly resetMs: number;
}

/**
 * What a request holds after its budgets granted: its reservations, settled once when it ends, and
 * the level of its tightest key or account budget (the one with the least left; between equals, the
 * one that resets last) for the response's headers. A target's budget is shared by every tenant of
 * the target, so its figures are never reported.
 */
export interface SpendHold {
  readonly ok: true;
  /** Undefined when the request has no key or account budget, or the shared store did not answer. */
  readonly level: BudgetLevel | undefined;
  /** Replaces every reservation with `cost`, charged to each budget; only the first call counts. */
  settle(cost: number): void;
}

/** Whether a budget with `remaining` left, resetting in `resetMs`, is tighter than `best`. */
export function tighterThan(remaining: number, resetMs: number, best: BudgetLevel): boolean {
  return remaining < best.remaining || (remaining === best.remaining && resetMs > best.resetMs);
}

/** Spent and reserved in a budget's current window, for its gauges. */
export interface BudgetSnapshot {
  readonly spent: number;
  readonly reserved: number;
}

/** Where budgets live: this process's memory, or Redis shared by every replica. */
export interface SpendBook {
  /**
   * Reserves `amounts[i]` in `budgets[i]`, all or nothing: the first budget without room refuses and
   * nothing is reserved anywhere.
   */
  reserve(
    budgets: readonly SpendBudget[],
    amounts: readonly number[],
  ): MaybePromise<SpendHold | BudgetRefusal>;
  /** Each budget's state now, or undefined for one that could not be read. */
  snapshot(budgets: readonly SpendBudget[]): MaybePromise<readonly (BudgetSnapshot | undefined)[]>;
}
