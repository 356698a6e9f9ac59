import { Counter, Gauge, type Registry } from './prom-client.js';

/** One budget as its gauges report it; spent and reserved undefined when they could not be read. */
export interface BudgetReading {
  readonly scope: string;
  readonly budget: string;
  readonly window: string;
  readonly limit: number;
  readonly spent: number | undefined;
  readonly reserved: number | undefined;
}

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
  readonly refusals: Counter<'scope' | 'budget' | 'code'>;
  #read: () => Promise<readonly BudgetReading[]> = () => Promise.resolve([]);
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
      help: 'Requests refused because a spend budget had no room for their reservation (code budget_exceeded, 429) or could not be read (code budget_unavailable, 503: the first budget of the request is named).',
      labelNames: ['scope', 'budget', 'code'],
      registers,
    });
  }

  /** Where the readings come from: the serving table's budgets, read at each collection. */
  source(read: () => Promise<readonly BudgetReading[]>): void {
    this.#read = read;
  }

  refused(scope: string, budget: string, code: string): void {
    this.refusals.inc({ scope, budget, code });
  }

  #refresh(): Promise<void> {
    this.#reading ??= this.#collect().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #collect(): Promise<void> {
    const readings = await this.#read();
    for (const gauge of [this.limit, this.spent, this.reserved, this.remaining]) gauge.reset();
    for (const reading of readings) {
      const labels = { scope: reading.scope, budget: reading.budget };
      this.limit.set({ ...labels, window: reading.window }, reading.limit);
      if (reading.spent === undefined || reading.reserved === undefined) continue;
      this.spent.set(labels, reading.spent);
      this.reserved.set(labels, reading.reserved);
      this.remaining.set(labels, reading.limit - reading.spent - reading.reserved);
    }
  }
}
