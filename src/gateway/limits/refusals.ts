import type {
  BatchRefusal,
  BudgetRefusal,
  BudgetScope,
  ConcurrencyRefusal,
  InflightRefusal,
  LimitSubject,
  RateLimitRefusal,
  TokenLimitRefusal,
} from './types.js';

/**
 * The refusals of spec 7.1, built in one place for the in-memory and the shared (Redis) limiters,
 * so a client cannot tell a shared limit from a local one. A fail_closed decision answers with the
 * same refusal: the client sees the limit, the operator sees the degraded metric.
 */

export function rateLimitRefusal(subject: LimitSubject): RateLimitRefusal {
  return Object.freeze({
    ok: false as const,
    kind: 'rate_limit' as const,
    scope: subject.scope,
    subject: subject.subject,
    status: 429 as const,
    code: 'rate_limit',
    type: 'rate_limit_error',
    retryAfterSeconds: undefined,
    message: 'Rate limit exceeded',
  });
}

export function concurrencyRefusal(subject: LimitSubject, limit: number): ConcurrencyRefusal {
  return Object.freeze({
    ok: false as const,
    kind: 'concurrency' as const,
    scope: subject.scope,
    subject: subject.subject,
    limit,
    status: 429 as const,
    code: 'concurrency_limit_exceeded',
    type: 'rate_limit_error',
    retryAfterSeconds: undefined,
    message: 'Concurrency limit exceeded',
  });
}

export function inflightRefusal(alias: string, account: string, limit: number): InflightRefusal {
  return {
    ok: false,
    kind: 'inflight',
    scope: 'account',
    alias,
    account,
    limit,
    status: 429,
    code: 'inflight_limit_exceeded',
    type: 'rate_limit_error',
    retryAfterSeconds: 1,
    message: 'Too many requests in flight for this account',
  };
}

export function batchRefusal(alias: string, limit: number): BatchRefusal {
  return Object.freeze({
    ok: false as const,
    kind: 'batch' as const,
    scope: 'alias' as const,
    alias,
    limit,
    status: 529 as const,
    code: 'batch_capacity_exceeded',
    type: 'overloaded_error',
    retryAfterSeconds: 1,
    message: 'Batch capacity exceeded',
  });
}

/** Made per refusal: the Retry-After depends on how far below zero the budget is. */
export function tokenLimitRefusal(
  scope: TokenLimitRefusal['scope'],
  subject: string,
  retryAfterSeconds: number,
): TokenLimitRefusal {
  return {
    ok: false,
    kind: 'tokens',
    scope,
    subject,
    status: 429,
    code: 'token_rate_limit',
    type: 'rate_limit_error',
    retryAfterSeconds,
    message: 'Token rate limit exceeded',
  };
}

/**
 * A spend budget without room for the request: 429, like OpenAI's own `insufficient_quota`, which
 * clients already treat as "stop", with the seconds until it may have room (see
 * docs/operations.md, "Spend budgets", for why 429 rather than 402). The message names the budget
 * and never its figures, which may be another tenant's (an account's, a target's).
 */
export function budgetRefusal(scope: BudgetScope, subject: string, retryAfterSeconds: number): BudgetRefusal {
  return {
    ok: false,
    kind: 'budget',
    scope,
    subject,
    status: 429,
    code: 'budget_exceeded',
    type: 'insufficient_quota',
    retryAfterSeconds,
    message: `Spend budget exceeded: the ${scope} budget \`${subject}\` has no room for this request`,
  };
}

/** The budget could not be read (the shared store did not answer) and the failure policy refuses. */
export function budgetUnavailableRefusal(scope: BudgetScope, subject: string): BudgetRefusal {
  return {
    ok: false,
    kind: 'budget',
    scope,
    subject,
    status: 503,
    code: 'budget_unavailable',
    type: 'api_error',
    retryAfterSeconds: 1,
    message: `Spend budget unavailable: the ${scope} budget \`${subject}\` cannot be checked right now`,
  };
}
