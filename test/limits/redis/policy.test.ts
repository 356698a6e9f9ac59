import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FAILURE_POLICIES,
  formatFailurePolicies,
  parseFailurePolicies,
} from '../../../src/gateway/limits/redis/policy.js';

describe('failure policy grammar', () => {
  it('defaults: realtime kinds fail open, batch and spend budgets fail closed', () => {
    expect(formatFailurePolicies(DEFAULT_FAILURE_POLICIES)).toBe(
      'rate=fail_open,concurrency=fail_open,inflight=fail_open,batch=fail_closed,tokens=fail_open,budget=fail_closed',
    );
  });

  it.each([
    [
      'fail_open',
      'rate=fail_open,concurrency=fail_open,inflight=fail_open,batch=fail_open,tokens=fail_open,budget=fail_open',
    ],
    [
      'fail_closed',
      'rate=fail_closed,concurrency=fail_closed,inflight=fail_closed,batch=fail_closed,tokens=fail_closed,budget=fail_closed',
    ],
    [
      'inflight=fail_closed',
      'rate=fail_open,concurrency=fail_open,inflight=fail_closed,batch=fail_closed,tokens=fail_open,budget=fail_closed',
    ],
    [
      'fail_closed, rate=fail_open',
      'rate=fail_open,concurrency=fail_closed,inflight=fail_closed,batch=fail_closed,tokens=fail_closed,budget=fail_closed',
    ],
    [
      'rate=fail_open,concurrency=fail_closed,inflight=fail_closed,batch=fail_open,tokens=fail_closed,budget=fail_open',
      'rate=fail_open,concurrency=fail_closed,inflight=fail_closed,batch=fail_open,tokens=fail_closed,budget=fail_open',
    ],
  ])('%s', (text, expected) => {
    const parsed = parseFailurePolicies(text);
    expect(parsed.ok && formatFailurePolicies(parsed.policies)).toBe(expected);
  });

  it.each([
    ['', '"" is not a policy (fail_open or fail_closed)'],
    ['open', '"open" is not a policy (fail_open or fail_closed)'],
    ['rate=open', '"open" is not a policy (fail_open or fail_closed)'],
    ['words=fail_open', '"words" is not a limit kind (rate, concurrency, inflight, batch, tokens, budget)'],
    ['rate=fail_open,fail_closed', 'a bare policy ("fail_closed") may only be the first item'],
    ['rate=fail_open,rate=fail_closed', 'rate is given twice'],
    ['rate=fail_open,', '"" is not a policy (fail_open or fail_closed)'],
  ])('refuses %j', (text, message) => {
    const parsed = parseFailurePolicies(text);
    expect(parsed.ok ? 'accepted' : parsed.message).toBe(message);
  });
});
