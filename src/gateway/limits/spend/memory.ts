import { budgetRefusal } from '../refusals.js';
import type { BudgetRefusal, BudgetScope } from '../types.js';
import type {
  BudgetLevel,
  BudgetParams,
  BudgetSnapshot,
  SpendBook,
  SpendBudget,
  SpendHold,
} from './types.js';
import { tighterThan } from './types.js';
import { ROLLING_SLOTS, calendarBounds, slotOf, type BudgetWindow } from './window.js';

/**
 * What a budget has spent and reserved in this process's memory (without `--shared-state`): lost
 * when the process stops, which the gateway says at start-up. One ledger per budget identity and
 * window, kept across reloads by the limiter registry; each table's `MemorySpendBudget` reads it
 * with that table's amount, so a reload changes the amount without touching what was spent. Time is
 * the wall clock (`now`), since windows are calendar hours, days and months.
 *
 * State: what the current window spent (one sum for a calendar window; a ring of `ROLLING_SLOTS`
 * sums, plus their total, for a rolling one) and what requests in flight have reserved. Reservations
 * do not belong to a window: a request that started before a boundary is charged in the window in
 * which it ends, so a window never loses a cost it was still waiting for.
 */
/** Retry-After when only reservations in flight stand in the way. */
const RESERVATIONS_RETRY_MS = 1000;

export class SpendLedger {
  readonly window: BudgetWindow;
  readonly now: () => number;
  #reserved = 0;
  /** Calendar: spent in [#start, #end). Rolling: the total of the slots. */
  #spent = 0;
  #start = 0;
  #end = -Infinity;
  /** Rolling only: slot n's spend at n % ROLLING_SLOTS, and the newest slot index written. */
  readonly #slots: Float64Array | undefined;
  #newest = 0;

  constructor(window: BudgetWindow, now: () => number = Date.now) {
    this.window = window;
    this.now = now;
    this.#slots = window.kind === 'rolling' ? new Float64Array(ROLLING_SLOTS) : undefined;
  }

  /** Spent in the window that holds `now`. */
  spent(now: number): number {
    const window = this.window;
    if (window.kind === 'calendar') {
      if (now >= this.#end) {
        const bounds = calendarBounds(window.unit, window.timeZone, now);
        if (bounds.start !== this.#start) this.#spent = 0;
        this.#start = bounds.start;
        this.#end = bounds.end;
      }
    } else {
      this.#advance(slotOf(window, now));
    }
    return this.#spent;
  }

  /** What a new reservation may take now under `limit`. */
  room(limit: number, now: number): number {
    return limit - this.spent(now) - this.#reserved;
  }

  reserve(amount: number): void {
    this.#reserved += amount;
  }

  /** Gives a reservation back and charges the cost to the window that holds `now`. */
  settle(reserved: number, cost: number, now: number): void {
    this.#reserved = Math.max(0, this.#reserved - reserved);
    if (!(cost > 0)) return;
    const window = this.window;
    this.spent(now);
    this.#spent += cost;
    if (window.kind === 'rolling') this.#slots![slotOf(window, now) % ROLLING_SLOTS]! += cost;
  }

  snapshotAt(now: number): BudgetSnapshot {
    return { spent: this.spent(now), reserved: this.#reserved };
  }

  /**
   * Milliseconds until the window starts again: a calendar window's end; for a rolling one, until
   * its newest charge has left it (after `spent(now)` brought it up to date).
   */
  resetMs(now: number): number {
    const window = this.window;
    if (window.kind === 'calendar') return this.#end - now;
    for (let slot = this.#newest; slot > this.#newest - ROLLING_SLOTS; slot--)
      if (this.#slots![slot % ROLLING_SLOTS]! > 0) return (slot + ROLLING_SLOTS) * window.slotMs - now;
    return 0;
  }

  /**
   * Milliseconds until `amount` may fit under `limit`: a second when only other requests'
   * reservations stand in the way (they settle within their requests' time, most for less than
   * they reserved); else until the window frees enough (a calendar window's end, a rolling window's
   * oldest charges leaving it).
   */
  retryMs(amount: number, limit: number, now: number): number {
    const window = this.window;
    if (this.spent(now) + amount <= limit) return RESERVATIONS_RETRY_MS;
    if (window.kind === 'calendar') return this.#end - now;
    const needed = this.#spent + this.#reserved + amount - limit;
    let freed = 0;
    for (let slot = this.#newest - ROLLING_SLOTS + 1; slot <= this.#newest; slot++) {
      freed += this.#slots![slot % ROLLING_SLOTS]!;
      if (freed >= needed) return (slot + ROLLING_SLOTS) * window.slotMs - now;
    }
    // Reservations in flight, or a request larger than the budget: time alone does not free it.
    return window.ms;
  }

  /** Moves the ring to `slot`, dropping the slots that left the window. */
  #advance(slot: number): void {
    if (slot <= this.#newest) return;
    const slots = this.#slots!;
    const from = Math.max(this.#newest + 1, slot - ROLLING_SLOTS + 1);
    for (let s = from; s <= slot; s++) {
      const at = s % ROLLING_SLOTS;
      this.#spent -= slots[at]!;
      slots[at] = 0;
    }
    // Subtraction leaves rounding residue: an emptied ring spends exactly nothing.
    if (slot - this.#newest >= ROLLING_SLOTS || this.#spent < 1e-12) this.#spent = 0;
    this.#newest = slot;
  }
}

/** A budget of one table: its configuration, and the ledger it shares with the tables before it. */
export class MemorySpendBudget implements SpendBudget {
  readonly scope: BudgetScope;
  readonly name: string;
  readonly params: BudgetParams;
  readonly ledger: SpendLedger;
  readonly book: SpendBook = MEMORY_BOOK;

  constructor(scope: BudgetScope, name: string, params: BudgetParams, ledger: SpendLedger) {
    this.scope = scope;
    this.name = name;
    this.params = params;
    this.ledger = ledger;
  }
}

/**
 * The reservations of one request in memory; it is its own level (no object more per request): the
 * tightest of its key and account budgets (a target's is every tenant's, never reported).
 */
class MemoryHold implements SpendHold, BudgetLevel {
  readonly ok = true as const;
  #budgets: readonly MemorySpendBudget[] | undefined;
  readonly #amounts: readonly number[];
  amount = 0;
  remaining = Infinity;
  resetMs = 0;

  constructor(budgets: readonly MemorySpendBudget[], amounts: readonly number[]) {
    this.#budgets = budgets;
    this.#amounts = amounts;
  }

  get level(): BudgetLevel | undefined {
    return this.remaining === Infinity ? undefined : this;
  }

  /** Keeps the budget's level when it is the tightest so far. */
  consider(amount: number, remaining: number, resetMs: number): void {
    if (tighterThan(remaining, resetMs, this)) {
      this.amount = amount;
      this.remaining = remaining;
      this.resetMs = resetMs;
    }
  }

  settle(cost: number): void {
    const budgets = this.#budgets;
    if (budgets === undefined) return;
    this.#budgets = undefined;
    const now = budgets[0]!.ledger.now();
    for (let i = 0; i < budgets.length; i++) budgets[i]!.ledger.settle(this.#amounts[i]!, cost, now);
  }
}

/** Whole seconds for Retry-After, at least one. */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

const MEMORY_BOOK: SpendBook = {
  reserve(budgets: readonly SpendBudget[], amounts: readonly number[]): SpendHold | BudgetRefusal {
    const held = budgets as readonly MemorySpendBudget[];
    const now = held[0]!.ledger.now();
    for (let i = 0; i < held.length; i++) {
      const { ledger, params, scope, name } = held[i]!;
      if (amounts[i]! > ledger.room(params.amount, now))
        return budgetRefusal(scope, name, seconds(ledger.retryMs(amounts[i]!, params.amount, now)));
    }
    const hold = new MemoryHold(held, amounts);
    for (let i = 0; i < held.length; i++) {
      const { ledger, params, scope } = held[i]!;
      ledger.reserve(amounts[i]!);
      if (scope !== 'target')
        hold.consider(params.amount, ledger.room(params.amount, now), ledger.resetMs(now));
    }
    return hold;
  },

  snapshot(budgets: readonly SpendBudget[]): readonly BudgetSnapshot[] {
    return (budgets as readonly MemorySpendBudget[]).map(({ ledger }) => ledger.snapshotAt(ledger.now()));
  },
};
