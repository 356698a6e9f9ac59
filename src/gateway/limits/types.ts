/**
 * The seam between the request pipeline and the limiters.
 *
 * Async seam: every limiter interface returns `MaybePromise<Grant | Refusal>`. The in-memory
 * implementations answer synchronously (their concrete methods are typed without the Promise), so
 * the hot path pays one `isPromise` check and no microtask hop; a shared implementation (Redis, Lua
 * scripts, leases) returns a Promise behind the same interface and the pipeline awaits only then.
 * The alternative, a sync interface plus an async wrapper, would force either two pipeline code
 * paths or an `await` (and a tick) on every request.
 *
 * Errors are values: a refusal is a plain object carrying what the pipeline needs to answer
 * (status, code, type, Retry-After) plus the facts for the log line. Limiters never throw on the
 * request path.
 */

export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return value instanceof Promise;
}

/**
 * Permission to proceed. `release()` is idempotent: the pipeline releases on body end, on error and
 * on client disconnect, and only the first call gives the slot back.
 */
export interface Grant {
  readonly ok: true;
  release(): void;
}

/** Where a limit is configured: a client key, a target (alias), or one provider of a pool. */
export type LimitScope = 'key' | 'target' | 'provider';

export interface LimitSubject {
  readonly scope: LimitScope;
  /** Key definition name, alias or provider name: what the log line names. */
  readonly subject: string;
}

interface RefusalBase {
  readonly ok: false;
  /** HTTP status the gateway answers with (spec 7.1). */
  readonly status: 429 | 503 | 529;
  /** The `code` of the error object. */
  readonly code: string;
  /** The `type` of the error object. */
  readonly type: string;
  /** Seconds for a `Retry-After` header, or undefined when the spec sends none. */
  readonly retryAfterSeconds: number | undefined;
  readonly message: string;
}

export interface RateLimitRefusal extends RefusalBase {
  readonly kind: 'rate_limit';
  readonly scope: LimitScope;
  /** Key definition name, alias, or provider name; never a secret. */
  readonly subject: string;
}

export interface ConcurrencyRefusal extends RefusalBase {
  readonly kind: 'concurrency';
  readonly scope: LimitScope;
  readonly subject: string;
  readonly limit: number;
}

export interface InflightRefusal extends RefusalBase {
  readonly kind: 'inflight';
  readonly scope: 'account';
  readonly alias: string;
  readonly account: string;
  readonly limit: number;
}

export interface BatchRefusal extends RefusalBase {
  readonly kind: 'batch';
  readonly scope: 'alias';
  readonly alias: string;
  readonly limit: number;
}

/** A token budget below zero: `retryAfterSeconds` is the time until it is positive again. */
export interface TokenLimitRefusal extends RefusalBase {
  readonly kind: 'tokens';
  readonly scope: LimitScope | 'account';
  readonly subject: string;
}

/** Where a spend budget is configured: a key definition, an account, or a target. */
export type BudgetScope = 'key' | 'account' | 'target';

/**
 * A spend budget without room for the request's reservation (429 `budget_exceeded`, Retry-After
 * until enough of the window has passed), or one that could not be read (503 `budget_unavailable`:
 * the shared store did not answer and the `budget` failure policy refuses).
 */
export interface BudgetRefusal extends RefusalBase {
  readonly kind: 'budget';
  readonly scope: BudgetScope;
  /** Key definition name, account or target key; never a secret. */
  readonly subject: string;
}

export type Refusal =
  RateLimitRefusal | ConcurrencyRefusal | InflightRefusal | BatchRefusal | TokenLimitRefusal | BudgetRefusal;

export type Admission<R extends Refusal = Refusal> = Grant | R;

/** Token bucket (spec 8). Grants carry nothing to give back: a spent token is not refunded. */
export interface RateLimiter {
  acquire(): MaybePromise<Grant | RateLimitRefusal>;
}

/**
 * A token budget: admits while positive (taking nothing), and is charged the tokens a response
 * reported once it ended, which may take it below zero.
 */
export interface TokenLimiter {
  acquire(): MaybePromise<Grant | TokenLimitRefusal>;
  charge(tokens: number): void;
}

/** Concurrency permits (spec 8): held until the request completes. */
export interface ConcurrencyLimiter {
  acquire(): MaybePromise<Grant | ConcurrencyRefusal>;
}

/**
 * Realtime in-flight requests on one alias. `account` undefined means the key has no account label:
 * the request is counted in the alias total (the `gateway_model_inflight` gauge) but never refused.
 */
export interface InflightLimiter {
  readonly alias: string;
  acquire(account: string | undefined): MaybePromise<Grant | InflightRefusal>;
  /** Every realtime request in flight on the alias, with or without an account. */
  inFlight(): number;
}

/** Dispatched (batch) requests in flight on one alias. */
export interface BatchLimiter {
  readonly alias: string;
  acquire(): MaybePromise<Grant | BatchRefusal>;
  inFlight(): number;
}

/**
 * Floating-point slack when comparing against one whole token: without it, `rps = 3` would refill
 * 0.9999999999 tokens after exactly 1/3 s and refuse a request that is on time. The slack lets at
 * most one extra request through per ~1e9 requests, far below any observable rate. The
 * `x-ratelimit-remaining-*` headers count such a level as whole too.
 */
export const WHOLE_TOKEN_SLACK = 1e-9;

/** A grant that holds nothing, for limiters with nothing to give back (token buckets). */
export const NO_OP_GRANT: Grant = Object.freeze({ ok: true as const, release(): void {} });
