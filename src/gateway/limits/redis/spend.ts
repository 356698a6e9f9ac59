import type { Logger } from '../../telemetry/logger.js';
import { budgetRefusal, budgetUnavailableRefusal } from '../refusals.js';
import type { BudgetRefusal, BudgetScope, MaybePromise } from '../types.js';
import type {
  BudgetLevel,
  BudgetParams,
  BudgetSnapshot,
  SpendBook,
  SpendBudget,
  SpendHold,
} from '../spend/types.js';
import { tighterThan } from '../spend/types.js';
import { calendarBounds, type Bounds } from '../spend/window.js';
import type { SharedStateClient, SpendReply, Unavailable } from './client.js';
import type { DegradedDecisions } from './degraded.js';
import { HeldLeases } from './leases.js';

/** Settlements waiting for Redis to come back; beyond this the oldest is dropped, and said so. */
const MAX_PENDING_SETTLEMENTS = 100_000;
/** How often waiting settlements are sent again. */
const RETRY_INTERVAL_MS = 1000;
/**
 * How long a settlement is sent again: as long as Redis remembers a settled id (`done_ms` in
 * spend-scripts.ts), so that sending one again can never charge it twice.
 */
const RETRY_HORIZON_MS = 15 * 60_000;

/** A spend budget whose state lives in Redis (keys in spend-scripts.ts). */
export class SharedSpendBudget implements SpendBudget {
  readonly scope: BudgetScope;
  readonly name: string;
  readonly params: BudgetParams;
  readonly book: SharedSpendBook;
  /** state, :exp, :amt, :done */
  readonly keys: readonly [string, string, string, string];
  /** The calendar window the last call fell in, with the end of the one after it. */
  #bounds: (Bounds & { readonly nextEnd: number }) | undefined;

  constructor(book: SharedSpendBook, key: string, scope: BudgetScope, name: string, params: BudgetParams) {
    this.book = book;
    this.scope = scope;
    this.name = name;
    this.params = params;
    this.keys = [key, `${key}:exp`, `${key}:amt`, `${key}:done`];
  }

  /** The four window arguments of the scripts, for the gateway's now. */
  windowArgs(now: number): (string | number)[] {
    const window = this.params.window;
    if (window.kind === 'rolling') return ['r', window.slotMs, 0, 0];
    let bounds = this.#bounds;
    if (bounds === undefined || now >= bounds.end || now < bounds.start) {
      const current = calendarBounds(window.unit, window.timeZone, now);
      const next = calendarBounds(window.unit, window.timeZone, current.end);
      bounds = this.#bounds = { start: current.start, end: current.end, nextEnd: next.end };
    }
    return ['c', bounds.start, bounds.end, bounds.nextEnd];
  }
}

interface Settlement {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /** When it was first sent (`performance.now()`). */
  readonly at: number;
}

/**
 * Spend budgets shared by every replica on one Redis: a reservation and a settlement are one script
 * each, and the state survives a restart of the gateway. A reservation is a lease, renewed while its
 * request runs, so a replica that dies gives its reservations back when the leases lapse.
 *
 * When Redis does not answer, the `budget` failure policy decides admission (closed by default: 503
 * `budget_unavailable`). A settlement that cannot be sent waits in this process and is sent again
 * every second until Redis takes it; settling is idempotent (by reservation id), so one that timed
 * out but ran after all is not charged twice.
 */
export class SharedSpendBook implements SpendBook {
  readonly #client: SharedStateClient;
  readonly #policy: DegradedDecisions;
  readonly #logger: Logger;
  readonly #leaseMs: number;
  readonly #leases = new HeldLeases();
  #pending: Settlement[] = [];
  #dropped = 0;
  #retrying = false;
  readonly #timers: NodeJS.Timeout[];

  constructor(client: SharedStateClient, policy: DegradedDecisions, logger: Logger, leaseMs: number) {
    this.#client = client;
    this.#policy = policy;
    this.#logger = logger;
    this.#leaseMs = leaseMs;
    const renew = setInterval(() => this.#renew(), Math.max(1, Math.floor(leaseMs / 3)));
    const retry = setInterval(() => void this.#retry(), RETRY_INTERVAL_MS);
    renew.unref();
    retry.unref();
    this.#timers = [renew, retry];
  }

  /** Settlements not yet taken by Redis. */
  get pendingSettlements(): number {
    return this.#pending.length;
  }

  reserve(
    budgets: readonly SpendBudget[],
    amounts: readonly number[],
  ): MaybePromise<SpendHold | BudgetRefusal> {
    const shared = budgets as readonly SharedSpendBudget[];
    const id = this.#leases.nextId();
    const now = Date.now();
    const keys: string[] = [];
    const args: (string | number)[] = [this.#leaseMs, id];
    for (let i = 0; i < shared.length; i++) {
      const budget = shared[i]!;
      keys.push(...budget.keys);
      args.push(budget.params.amount, amounts[i]!, ...budget.windowArgs(now));
    }
    const answer = this.#client.reserveSpend(keys, args);
    if (!(answer instanceof Promise)) return this.#byPolicy(shared, id, answer);
    return answer.then((reply) =>
      reply.ok ? this.#decided(shared, id, reply) : this.#byPolicy(shared, id, reply),
    );
  }

  snapshot(budgets: readonly SpendBudget[]): Promise<readonly (BudgetSnapshot | undefined)[]> {
    const shared = budgets as readonly SharedSpendBudget[];
    if (shared.length === 0) return Promise.resolve([]);
    const now = Date.now();
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const budget of shared) {
      keys.push(...budget.keys);
      args.push(...budget.windowArgs(now));
    }
    return this.#client
      .readSpend(keys, args)
      .then((answer) =>
        shared.map((_, i) =>
          answer.ok
            ? { spent: Number(answer.reply[2 * i]), reserved: Number(answer.reply[2 * i + 1]) }
            : undefined,
        ),
      );
  }

  /** Stops renewing and retrying; waiting settlements are lost (logged), held leases lapse. */
  close(): void {
    for (const timer of this.#timers) clearInterval(timer);
    if (this.#pending.length > 0)
      this.#logger.warn(
        { settlements: this.#pending.length },
        'spend settlements Redis never took are lost at shutdown',
      );
  }

  /** Replaces a reservation with its cost (see SETTLE_SPEND); sent again later if Redis cannot take it now. */
  settle(budgets: readonly SharedSpendBudget[], id: string, cost: number): void {
    for (const budget of budgets) this.#leases.delete(budget.keys[0], id);
    const now = Date.now();
    const keys: string[] = [];
    const args: (string | number)[] = [this.#leaseMs, id, cost];
    for (const budget of budgets) {
      keys.push(...budget.keys);
      args.push(...budget.windowArgs(now));
    }
    const settlement = { keys, args, at: performance.now() };
    void this.#client.settleSpend(keys, args).then((taken) => {
      if (taken === true) return;
      if (taken.reason === 'error') this.#lost('Redis refused a spend settlement');
      else this.#wait(settlement);
    });
  }

  #decided(budgets: readonly SharedSpendBudget[], id: string, answer: SpendReply): SpendHold | BudgetRefusal {
    const reply = answer.reply;
    const refused = Number(reply[0]);
    if (refused > 0) {
      const budget = budgets[refused - 1]!;
      return budgetRefusal(budget.scope, budget.name, Math.max(1, Math.ceil(Number(reply[1]) / 1000)));
    }
    let level: BudgetLevel | undefined;
    for (let i = 0; i < budgets.length; i++) {
      const budget = budgets[i]!;
      this.#leases.add(budget.keys[0], id);
      const remaining = Number(reply[2 + 2 * i]);
      const resetMs = Number(reply[3 + 2 * i]);
      // A target's budget is every tenant's: never reported.
      if (budget.scope === 'target') continue;
      if (level === undefined || tighterThan(remaining, resetMs, level))
        level = { amount: budget.params.amount, remaining, resetMs };
    }
    return new SharedHold(this, budgets, id, level);
  }

  /**
   * No answer: the failure policy decides. A reservation that timed out may still run on the server,
   * so its id is settled (at zero when refused, at the cost when granted) either way.
   */
  #byPolicy(
    budgets: readonly SharedSpendBudget[],
    id: string,
    unavailable: Unavailable,
  ): SpendHold | BudgetRefusal {
    const first = budgets[0]!;
    if (this.#policy.decide('budget', unavailable.reason) === 'fail_closed') {
      if (unavailable.reason !== 'disconnected') this.settle(budgets, id, 0);
      return budgetUnavailableRefusal(first.scope, first.name);
    }
    return new SharedHold(this, budgets, id, undefined);
  }

  #wait(settlement: Settlement): void {
    if (this.#pending.length >= MAX_PENDING_SETTLEMENTS) {
      this.#pending.shift();
      this.#lost('spend settlements dropped: too many waiting for Redis');
    }
    this.#pending.push(settlement);
  }

  /** A settlement that will never be recorded: counted, and logged for the first and every thousandth. */
  #lost(why: string): void {
    if (this.#dropped++ % 1000 === 0)
      this.#logger.warn({ dropped: this.#dropped, waiting: this.#pending.length }, why);
  }

  /**
   * Sends the waiting settlements again, in order, while Redis takes them. One that Redis refuses (a
   * script error) is dropped rather than block the ones behind it; one older than the retry horizon
   * too, since Redis may no longer know whether it was recorded.
   */
  async #retry(): Promise<void> {
    if (this.#retrying || this.#pending.length === 0 || !this.#client.up) return;
    this.#retrying = true;
    try {
      while (this.#pending.length > 0) {
        const next = this.#pending[0]!;
        if (performance.now() - next.at > RETRY_HORIZON_MS) {
          this.#pending.shift();
          this.#lost('spend settlements dropped: Redis did not take them within 15 minutes');
          continue;
        }
        const taken = await this.#client.settleSpend(next.keys, next.args);
        if (taken !== true && taken.reason !== 'error') return;
        this.#pending.shift();
        if (taken !== true) this.#lost('Redis refused a spend settlement');
        else if (this.#pending.length === 0)
          this.#logger.info({}, 'spend settlements that waited for Redis are recorded');
      }
    } finally {
      this.#retrying = false;
    }
  }

  #renew(): void {
    if (!this.#client.up) return;
    for (const [key, ids] of this.#leases.snapshot()) {
      void this.#client.renewSpend([`${key}:exp`, `${key}:amt`, key], this.#leaseMs, ids).then((renewed) => {
        if (!renewed) this.#logger.debug({ reservations: ids.length }, 'spend reservation renewal failed');
      });
    }
  }
}

/** The reservations of one request in Redis (or, granted by policy, none: its cost is still charged). */
class SharedHold implements SpendHold {
  readonly ok = true as const;
  readonly level: BudgetLevel | undefined;
  #book: SharedSpendBook | undefined;
  readonly #budgets: readonly SharedSpendBudget[];
  readonly #id: string;

  constructor(
    book: SharedSpendBook,
    budgets: readonly SharedSpendBudget[],
    id: string,
    level: BudgetLevel | undefined,
  ) {
    this.#book = book;
    this.#budgets = budgets;
    this.#id = id;
    this.level = level;
  }

  settle(cost: number): void {
    const book = this.#book;
    if (book === undefined) return;
    this.#book = undefined;
    book.settle(this.#budgets, this.#id, cost);
  }
}
