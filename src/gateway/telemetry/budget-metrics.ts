import type { SpendBudget } from '../limits/spend/types.js';
import { windowLabel } from '../limits/spend/window.js';
import type { BudgetScope } from '../limits/types.js';
import { Counter, Gauge, type Registry } from './prom-client.js';

/**
 * The gauges of spend budgets, read when `/metrics` is collected from wherever the budgets live
 * (this process, or Redis: one script for all of them, so every replica reports the shared figures).
 * Labels are bounded by configuration: `scope` (key, account, target) and `budget` (the key
 * definition's, account's or target's name; never a key). A budget a reload removed disappears; one
 * whose state could not be read (Redis down) keeps only its limit.
 */
export class BudgetMetrics {
  readonly limit: Gauge<'scope' | 'budget' | 'window'>;
  readonly spent: Gauge<'scope' | 'budget'>;
  readonly reserved: Gauge<'scope' | 'budget'>;
  readonly remaining: Gauge<'scope' | 'budget'>;
  readonly refusals: Counter<'scope' | 'budget'>;
  #budgets: () => readonly SpendBudget[] = () => [];
  /**
   * The read of one collection: the registry collects its metrics concurrently, so the four gauges
   * wait for the same read instead of each making one (or reading before it is done).
   */
  #reading: Promise<void> | undefined;

  constructor(registry: Registry, prefix: string) {
    const registers = [registry];
    this.limit = new Gauge({
      name: `${prefix}_budget_limit`,
      help: 'The amount a spend budget allows per window, in the currency of the configured prices, by scope (key, account, target), budget name and window.',
      labelNames: ['scope', 'budget', 'window'],
      registers,
      collect: () => this.#refresh(),
    });
    this.spent = new Gauge({
      name: `${prefix}_budget_spent`,
      help: "What a spend budget's current window has been charged.",
      labelNames: ['scope', 'budget'],
      registers,
      collect: () => this.#refresh(),
    });
    this.reserved = new Gauge({
      name: `${prefix}_budget_reserved`,
      help: 'What requests in flight have reserved in a spend budget (their largest possible cost).',
      labelNames: ['scope', 'budget'],
      registers,
      collect: () => this.#refresh(),
    });
    this.remaining = new Gauge({
      name: `${prefix}_budget_remaining`,
      help: 'What a spend budget can still reserve in its current window: limit - spent - reserved.',
      labelNames: ['scope', 'budget'],
      registers,
      collect: () => this.#refresh(),
    });
    this.refusals = new Counter({
      name: `${prefix}_budget_refusals_total`,
      help: 'Requests refused because a spend budget had no room for their reservation (429 budget_exceeded) or could not be read (503 budget_unavailable).',
      labelNames: ['scope', 'budget'],
      registers,
    });
  }

  /** Where the budgets come from: the serving table's, read at each collection. */
  source(budgets: () => readonly SpendBudget[]): void {
    this.#budgets = budgets;
  }

  refused(scope: BudgetScope, budget: string): void {
    this.refusals.inc({ scope, budget });
  }

  #refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    const budgets = this.#budgets();
    for (const gauge of [this.limit, this.spent, this.reserved, this.remaining]) gauge.reset();
    if (budgets.length === 0) return;
    const states = await budgets[0]!.book.snapshot(budgets);
    budgets.forEach((budget, i) => {
      const labels = { scope: budget.scope, budget: budget.name };
      const amount = budget.params.amount;
      this.limit.set({ ...labels, window: windowLabel(budget.params.window) }, amount);
      const state = states[i];
      if (state === undefined) return;
      this.spent.set(labels, state.spent);
      this.reserved.set(labels, state.reserved);
      this.remaining.set(labels, amount - state.spent - state.reserved);
    });
  }
}
