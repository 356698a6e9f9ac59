import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { RuntimeTable } from '../../src/gateway/runtime/table.js';
import { RequestContext, type AbandonListener } from '../../src/gateway/pipeline/context.js';
import type { Grant } from '../../src/gateway/limits/types.js';

/** A context over stand-in request and response objects (only `writableFinished` is read). */
function contextWith(response: { writableFinished: boolean }): RequestContext {
  return new RequestContext(
    {} as IncomingMessage,
    response as ServerResponse,
    {} as RuntimeTable,
    'realtime',
    '/v1/chat/completions',
  );
}

/** A grant that records its releases in `log` under `name`. */
function grant(name: string, log: string[]): Grant {
  return { ok: true, release: () => log.push(`release ${name}`) };
}

function listener(name: string, log: string[]): AbandonListener {
  return { abandoned: () => log.push(`abandon ${name}`) };
}

describe('RequestContext', () => {
  it.each([1, 2, 3, 6])('releases all of %i grants once, in the order they were held', (count) => {
    const log: string[] = [];
    const ctx = contextWith({ writableFinished: true });
    const names = Array.from({ length: count }, (_, i) => `g${i}`);
    for (const name of names) ctx.hold(grant(name, log));
    expect(log).toEqual([]);
    ctx.close();
    ctx.close();
    expect(log).toEqual(names.map((name) => `release ${name}`));
  });

  it('releases a grant held after close at once', () => {
    const log: string[] = [];
    const ctx = contextWith({ writableFinished: true });
    ctx.close();
    ctx.hold(grant('late', log));
    expect(log).toEqual(['release late']);
  });

  it('tells abandon listeners before it releases grants, only when the response did not finish', () => {
    const log: string[] = [];
    const unfinished = contextWith({ writableFinished: false });
    unfinished.hold(grant('g0', log));
    unfinished.onAbandon(listener('a', log));
    unfinished.onAbandon(listener('b', log));
    unfinished.hold(grant('g1', log));
    unfinished.close();
    expect(log).toEqual(['abandon a', 'abandon b', 'release g0', 'release g1']);

    const finishedLog: string[] = [];
    const finished = contextWith({ writableFinished: true });
    finished.onAbandon(listener('a', finishedLog));
    finished.hold(grant('g0', finishedLog));
    finished.close();
    expect(finishedLog).toEqual(['release g0']);
  });

  it('does not tell a listener that unsubscribed, whichever slot it held', () => {
    const log: string[] = [];
    const ctx = contextWith({ writableFinished: false });
    const first = listener('first', log);
    const second = listener('second', log);
    const third = listener('third', log);
    ctx.onAbandon(first);
    ctx.onAbandon(second);
    ctx.onAbandon(third);
    ctx.offAbandon(first);
    ctx.offAbandon(third);
    ctx.close();
    expect(log).toEqual(['abandon second']);
  });

  it('tells every listener even when one unsubscribes another while being told', () => {
    const log: string[] = [];
    const ctx = contextWith({ writableFinished: false });
    const second = listener('second', log);
    ctx.onAbandon({
      abandoned: () => {
        log.push('abandon first');
        ctx.offAbandon(second);
      },
    });
    ctx.onAbandon(second);
    ctx.close();
    expect(log).toEqual(['abandon first', 'abandon second']);
  });
});
