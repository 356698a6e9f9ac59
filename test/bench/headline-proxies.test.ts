import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HEADLINE_PROXIES,
  isMeasured,
  selectHeadlineProxies,
} from '../../bench/support/headline-proxies.ts';

describe('the proxies of the headline run', () => {
  it('measures every row by default, the Messages rows included', () => {
    const selected = selectHeadlineProxies(undefined);
    expect([...selected]).toEqual([...DEFAULT_HEADLINE_PROXIES]);
    expect(selected.has('plain')).toBe(true);
    expect(selected.has('messages')).toBe(true);
    expect(selected.has('messages-translated')).toBe(true);
    expect(isMeasured(selected, 'floor', 'messages')).toBe(true);
  });

  it('takes the names given, and refuses one it does not know, listing those it does', () => {
    expect([...selectHeadlineProxies(['floor', 'messages-translated'])]).toEqual([
      'floor',
      'messages-translated',
    ]);
    expect(() => selectHeadlineProxies(['floor', 'messages-stream'])).toThrow(
      /unknown proxy messages-stream \(floor, nginx, portkey, plain, strict, messages, messages-translated\)/,
    );
  });

  it('measures the floor on the Messages API only beside a Messages row', () => {
    const chatOnly = selectHeadlineProxies(['floor', 'plain']);
    expect(isMeasured(chatOnly, 'floor', 'chat')).toBe(true);
    expect(isMeasured(chatOnly, 'floor', 'messages')).toBe(false);
    for (const row of ['messages', 'messages-translated']) {
      const withMessages = selectHeadlineProxies(['floor', row]);
      expect(isMeasured(withMessages, 'floor', 'messages')).toBe(true);
      expect(isMeasured(withMessages, 'floor', 'chat')).toBe(true);
    }
  });

  it('measures no floor when the floor is not selected', () => {
    const selected = selectHeadlineProxies(['messages']);
    expect(isMeasured(selected, 'floor', 'messages')).toBe(false);
    expect(isMeasured(selected, 'messages', 'messages')).toBe(true);
    expect(isMeasured(selected, 'plain', 'chat')).toBe(false);
  });
});
