import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { AliasRoute, KeyLimits, RuntimeTable } from '../../src/gateway/runtime/table.js';
import type { Grant, MaybePromise, Refusal } from '../../src/gateway/limits/types.js';
import { admit } from '../../src/gateway/pipeline/admit.js';
import { RequestContext } from '../../src/gateway/pipeline/context.js';

/**
 * Admission against stand-in limiters that log each ask, answering now or later (a later answer is
 * what a limiter shared through Redis gives when its asks cannot be decided together).
 */
function limiter(name: string, log: string[], answer: 'grant' | 'refuse', later = false) {
  return {
    acquire(account?: string): MaybePromise<Grant | Refusal> {
      log.push(account === undefined ? `ask ${name}` : `ask ${name} for ${account}`);
      const result: Grant | Refusal =
        answer === 'grant'
          ? { ok: true, release: () => log.push(`release ${name}`) }
          : ({ ok: false, kind: 'rate_limit', subject: name } as unknown as Refusal);
      return later ? Promise.resolve(result) : result;
    },
  };
}

function contextFor(route: Partial<AliasRoute>, keyLimits?: KeyLimits): RequestContext {
  const table = {
    keyLimits: new Map(keyLimits ? [['key', keyLimits]] : []),
    accountTokenLimits: new Map(),
    accountBudgets: new Map(),
    sharedLimits: false,
  } as unknown as RuntimeTable;
  const ctx = new RequestContext(
    {} as IncomingMessage,
    { writableFinished: true } as ServerResponse,
    table,
    'realtime',
    '/v1/chat/completions',
  );
  ctx.route = route as AliasRoute;
  if (keyLimits) ctx.identity = { definitionName: 'key', account: 'acct' } as RequestContext['identity'];
  return ctx;
}

describe('admit', () => {
  it('asks every limiter in spec order and holds each grant until the request closes', async () => {
    const log: string[] = [];
    const ctx = contextFor(
      {
        rateLimit: limiter('target rate', log, 'grant') as never,
        concurrencyLimit: limiter('target concurrency', log, 'grant') as never,
        inflight: limiter('in-flight', log, 'grant') as never,
      },
      {
        rateLimit: limiter('key rate', log, 'grant') as never,
        concurrencyLimit: limiter('key concurrency', log, 'grant') as never,
        tokenLimit: undefined,
        budget: undefined,
      },
    );
    expect(await admit(ctx)).toBeUndefined();
    expect(log).toEqual([
      'ask key rate',
      'ask target rate',
      'ask key concurrency',
      'ask target concurrency',
      'ask in-flight for acct',
    ]);
    ctx.close();
    expect(log.slice(5)).toEqual([
      'release key rate',
      'release target rate',
      'release key concurrency',
      'release target concurrency',
      'release in-flight',
    ]);
  });

  it('goes on asking after a limiter that answers later, and stops at a refusal', async () => {
    const log: string[] = [];
    const ctx = contextFor({
      rateLimit: limiter('target rate', log, 'grant', true) as never,
      concurrencyLimit: limiter('target concurrency', log, 'refuse', true) as never,
      inflight: limiter('in-flight', log, 'grant') as never,
    });
    const refusal = await admit(ctx);
    expect(refusal).toMatchObject({ ok: false, subject: 'target concurrency' });
    expect(log).toEqual(['ask target rate', 'ask target concurrency']);
    ctx.close();
    expect(log.slice(2)).toEqual(['release target rate']);
  });

  it('asks the limiters after a later answer too when every one grants', async () => {
    const log: string[] = [];
    const ctx = contextFor({
      rateLimit: limiter('target rate', log, 'grant', true) as never,
      concurrencyLimit: limiter('target concurrency', log, 'grant') as never,
      inflight: limiter('in-flight', log, 'grant', true) as never,
    });
    expect(await admit(ctx)).toBeUndefined();
    expect(log).toEqual(['ask target rate', 'ask target concurrency', 'ask in-flight']);
  });
});
