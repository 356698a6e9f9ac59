import { describe, expect, it } from 'vitest';
import { ReasoningSurfaceSchema, type ReasoningSurface } from '../../src/gateway/config/schema/index.js';
import {
  compileReasoningTranslation,
  compileSurface,
  parseTargetPath,
} from '../../src/gateway/reasoning/index.js';
import { CopyOnWriteBody } from '../../src/gateway/reasoning/pointer.js';
import { budgeted, deepFreeze, responsesBudgeted, switchOnly } from './fixtures.js';

describe('compileReasoningTranslation', () => {
  it('no translation compiles to undefined (the provider receives requests unchanged)', () => {
    expect(compileReasoningTranslation(undefined)).toBeUndefined();
  });

  it('keeps only the configured surfaces', () => {
    expect(Object.keys(switchOnly)).toEqual(['chat_completions']);
    expect(Object.keys(responsesBudgeted)).toEqual(['responses']);
  });

  it('maps each effort to its writes in configuration order, with decoded segments', () => {
    const chat = budgeted.chat_completions!;
    expect(chat.writes.get('medium')).toEqual([
      { path: '/thinking_token_budget', segments: ['thinking_token_budget'], value: 4096 },
      {
        path: '/chat_template_kwargs/enable_thinking',
        segments: ['chat_template_kwargs', 'enable_thinking'],
        value: true,
      },
    ]);
    expect([...chat.writes.keys()]).toEqual(['low', 'medium', 'high']);
    expect([...chat.unsupported].sort()).toEqual(['max', 'minimal', 'none', 'xhigh']);
  });

  it('a numeric write value is a token budget; booleans and strings are not', () => {
    expect([...budgeted.chat_completions!.budgets]).toEqual([
      ['low', 1024],
      ['medium', 4096],
      ['high', 8192],
    ]);
    expect(switchOnly.chat_completions!.budgets.size).toBe(0);
  });

  it('the budget of an effort is the largest number any of its writes emits', () => {
    const surface = compileSurface(
      ReasoningSurfaceSchema.parse({
        writes: [
          { target_path: '/a', values: { low: 10, high: 300 } },
          { target_path: '/b', values: { low: 20, high: 'x' } },
        ],
        unsupported_efforts: ['none', 'minimal', 'medium', 'xhigh', 'max'],
      }),
    );
    expect(surface.budgets.get('low')).toBe(20);
    expect(surface.budgets.get('high')).toBe(300);
  });

  it('zero and negative numbers are budgets too', () => {
    const surface = compileSurface(
      ReasoningSurfaceSchema.parse({
        writes: [{ target_path: '/budget', values: { none: 0, low: -1 } }],
        unsupported_efforts: ['minimal', 'medium', 'high', 'xhigh', 'max'],
      }),
    );
    expect(surface.budgets.get('none')).toBe(0);
    expect(surface.budgets.get('low')).toBe(-1);
  });

  it('an empty writes list (every effort unsupported) maps nothing', () => {
    const surface = compileSurface(
      ReasoningSurfaceSchema.parse({
        writes: [],
        unsupported_efforts: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'],
      }),
    );
    expect(surface.writes.size).toBe(0);
    expect(surface.unsupported.size).toBe(7);
  });

  it('refuses a prototype segment even when the schema was bypassed', () => {
    const unchecked: ReasoningSurface = {
      writes: [{ target_path: '/__proto__/polluted', values: { low: true } }],
      unsupported_efforts: [],
    };
    expect(() => compileSurface(unchecked)).toThrow(/forbidden segment/);
  });

  it('the compiled form is frozen', () => {
    expect(Object.isFrozen(budgeted)).toBe(true);
    expect(Object.isFrozen(budgeted.chat_completions!.writes.get('low'))).toBe(true);
  });
});

describe('parseTargetPath', () => {
  it('splits and decodes the RFC 6901 escapes (~1 before ~0)', () => {
    expect(parseTargetPath('/reasoning_effort')).toEqual(['reasoning_effort']);
    expect(parseTargetPath('/a/b/c')).toEqual(['a', 'b', 'c']);
    expect(parseTargetPath('/a~1b/c~0d')).toEqual(['a/b', 'c~d']);
    expect(parseTargetPath('/x~01')).toEqual(['x~1']);
  });

  it.each(['', '/', 'name', '/a//b', '/constructor', '/a/prototype'])('refuses %j', (path) => {
    expect(() => parseTargetPath(path)).toThrow();
  });
});

describe('CopyOnWriteBody', () => {
  it('returns the source object itself while nothing changes', () => {
    const source = deepFreeze({ a: 1 });
    const body = new CopyOnWriteBody(source);
    body.remove(['missing']);
    body.remove(['a', 'deeper']);
    expect(body.value).toBe(source);
  });

  it('creates missing intermediates and shares untouched subtrees', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const source = deepFreeze({ messages, kwargs: { keep: 1 } });
    const body = new CopyOnWriteBody(source);
    body.set(['kwargs', 'enable_thinking'], true);
    body.set(['deep', 'er', 'x'], 3);
    expect(body.value).toEqual({
      messages,
      kwargs: { keep: 1, enable_thinking: true },
      deep: { er: { x: 3 } },
    });
    expect(body.value.messages).toBe(messages);
    expect(source).toEqual({ messages, kwargs: { keep: 1 } });
  });

  it('replaces an intermediate that is not an object', () => {
    for (const existing of ['text', 3, null, [1, 2]]) {
      const body = new CopyOnWriteBody(deepFreeze({ kwargs: existing }));
      body.set(['kwargs', 'flag'], false);
      expect(body.value).toEqual({ kwargs: { flag: false } });
    }
  });

  it('copies a shared parent once for several writes under it', () => {
    const source = deepFreeze({ reasoning: { summary: 'auto' } });
    const body = new CopyOnWriteBody(source);
    body.set(['reasoning', 'effort'], 'high');
    const first = body.value.reasoning;
    body.set(['reasoning', 'max_tokens'], 10);
    expect(body.value.reasoning).toBe(first);
    expect(body.value).toEqual({ reasoning: { summary: 'auto', effort: 'high', max_tokens: 10 } });
  });

  it('remove drops a parent left empty, and keeps one that still has fields', () => {
    const emptied = new CopyOnWriteBody(deepFreeze({ model: 'm', reasoning: { effort: 'low' } }));
    emptied.remove(['reasoning', 'effort']);
    expect(emptied.value).toEqual({ model: 'm' });

    const kept = new CopyOnWriteBody(deepFreeze({ reasoning: { effort: 'low', summary: 'auto' } }));
    kept.remove(['reasoning', 'effort']);
    expect(kept.value).toEqual({ reasoning: { summary: 'auto' } });
  });

  it('a client key named __proto__ is copied as data, never as the prototype', () => {
    const source = deepFreeze(
      JSON.parse('{"__proto__": {"polluted": true}, "a": {}}') as Record<string, unknown>,
    );
    const body = new CopyOnWriteBody(source);
    body.set(['a', 'b'], 1);
    expect(Object.getPrototypeOf(body.value)).toBe(Object.prototype);
    expect(Object.hasOwn(body.value, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
