/**
 * What a shared limiter decides when Redis cannot answer (unreachable, or slower than the per-call
 * timeout): grant (`fail_open`) or refuse with the limit's normal refusal (`fail_closed`). Chosen per
 * limit kind because the kinds protect different things (docs/operations.md, "Shared limits with
 * Redis", explains the defaults).
 */

export const SHARED_LIMIT_KINDS = ['rate', 'concurrency', 'inflight', 'batch', 'tokens', 'budget'] as const;
export type SharedLimitKind = (typeof SHARED_LIMIT_KINDS)[number];

export const FAILURE_POLICIES = ['fail_open', 'fail_closed'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

export type FailurePolicies = Readonly<Record<SharedLimitKind, FailurePolicy>>;

/**
 * Realtime limits (token budgets included) fail open: an outage of the limit store should not become
 * an outage of the API, and every such decision is counted and logged. Batch fails closed: dispatched traffic can wait,
 * and its refusal (529 `batch_capacity_exceeded`, Retry-After: 1) is made for rescheduling without
 * spending a retry, so refusing it protects realtime capacity at no lasting cost. Spend budgets fail
 * closed: they stand for money, and an outage that let every replica spend unchecked could cost
 * more than the budget itself, where a rate limit missed for a while costs only load.
 */
export const DEFAULT_FAILURE_POLICIES: FailurePolicies = Object.freeze({
  rate: 'fail_open',
  concurrency: 'fail_open',
  inflight: 'fail_open',
  batch: 'fail_closed',
  tokens: 'fail_open',
  budget: 'fail_closed',
});

export type PolicyParse = { ok: true; policies: FailurePolicies } | { ok: false; message: string };

function isPolicy(text: string): text is FailurePolicy {
  return (FAILURE_POLICIES as readonly string[]).includes(text);
}

function isKind(text: string): text is SharedLimitKind {
  return (SHARED_LIMIT_KINDS as readonly string[]).includes(text);
}

/**
 * Grammar: comma-separated items over the defaults. A bare policy (`fail_closed`) sets every kind and
 * may only come first; `kind=policy` sets one kind, at most once each. So `fail_closed,rate=fail_open`
 * means "closed except token buckets". Whitespace around items is ignored.
 */
export function parseFailurePolicies(text: string): PolicyParse {
  const items = text.split(',').map((item) => item.trim());
  const policies: Record<SharedLimitKind, FailurePolicy> = { ...DEFAULT_FAILURE_POLICIES };
  const seen = new Set<string>();
  for (const [index, item] of items.entries()) {
    const eq = item.indexOf('=');
    if (eq < 0) {
      if (!isPolicy(item)) return fail(`"${item}" is not a policy (fail_open or fail_closed)`);
      if (index > 0) return fail(`a bare policy ("${item}") may only be the first item`);
      for (const kind of SHARED_LIMIT_KINDS) policies[kind] = item;
      continue;
    }
    const kind = item.slice(0, eq).trim();
    const policy = item.slice(eq + 1).trim();
    if (!isKind(kind)) return fail(`"${kind}" is not a limit kind (${SHARED_LIMIT_KINDS.join(', ')})`);
    if (!isPolicy(policy)) return fail(`"${policy}" is not a policy (fail_open or fail_closed)`);
    if (seen.has(kind)) return fail(`${kind} is given twice`);
    seen.add(kind);
    policies[kind] = policy;
  }
  return { ok: true, policies: Object.freeze(policies) };
}

/** The canonical form (`rate=fail_open,concurrency=...`), for logs and --help. */
export function formatFailurePolicies(policies: FailurePolicies): string {
  return SHARED_LIMIT_KINDS.map((kind) => `${kind}=${policies[kind]}`).join(',');
}

function fail(message: string): PolicyParse {
  return { ok: false, message };
}
