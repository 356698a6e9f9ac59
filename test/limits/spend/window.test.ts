import { describe, expect, it } from 'vitest';
import { budgetWindow, calendarBounds, slotOf } from '../../../src/gateway/limits/spend/window.js';
import { SpendLedger } from '../../../src/gateway/limits/spend/memory.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const at = (text: string): number => Date.parse(text);

describe('calendar windows', () => {
  it('a month of a time zone runs from its local first of the month to the next, across the year end', () => {
    const november = calendarBounds('month', 'Europe/Berlin', at('2026-11-30T22:59:59.999Z'));
    expect(iso(november.start)).toBe('2026-10-31T23:00:00.000Z');
    expect(iso(november.end)).toBe('2026-11-30T23:00:00.000Z');
    // One millisecond later it is December 1st in Berlin.
    expect(iso(calendarBounds('month', 'Europe/Berlin', at('2026-11-30T23:00:00.000Z')).start)).toBe(
      '2026-11-30T23:00:00.000Z',
    );
    const december = calendarBounds('month', 'UTC', at('2026-12-31T12:00:00Z'));
    expect(iso(december.end)).toBe('2027-01-01T00:00:00.000Z');
  });

  it('a day across a daylight saving change lasts 25 or 23 hours', () => {
    // Europe/Berlin leaves summer time on 2026-10-25 and enters it on 2026-03-29.
    const long = calendarBounds('day', 'Europe/Berlin', at('2026-10-25T12:00:00Z'));
    expect(iso(long.start)).toBe('2026-10-24T22:00:00.000Z');
    expect((long.end - long.start) / 3_600_000).toBe(25);
    const short = calendarBounds('day', 'Europe/Berlin', at('2026-03-29T12:00:00Z'));
    expect((short.end - short.start) / 3_600_000).toBe(23);
  });

  it('a day whose midnight a clock change skips starts at the change; one that repeats it, at its first', () => {
    // America/Santiago moves from -04:00 to -03:00 at midnight on 2026-09-06 (00:00 becomes 01:00),
    // and back at midnight on 2026-04-05 (00:00 becomes 23:00 of the day before).
    const late = calendarBounds('day', 'America/Santiago', at('2026-09-06T03:30:00Z'));
    expect([iso(late.start), iso(late.end)]).toEqual([
      '2026-09-05T04:00:00.000Z',
      '2026-09-06T04:00:00.000Z',
    ]);
    const skipped = calendarBounds('day', 'America/Santiago', at('2026-09-06T12:00:00Z'));
    expect([iso(skipped.start), iso(skipped.end)]).toEqual([
      '2026-09-06T04:00:00.000Z',
      '2026-09-07T03:00:00.000Z',
    ]);
    const repeated = calendarBounds('day', 'America/Santiago', at('2026-04-04T12:00:00Z'));
    expect([iso(repeated.start), iso(repeated.end)]).toEqual([
      '2026-04-04T03:00:00.000Z',
      '2026-04-05T04:00:00.000Z',
    ]);
    // Every instant is in its own window, and one window ends where the next starts.
    for (let t = at('2026-09-05T20:00:00Z'); t < at('2026-09-06T08:00:00Z'); t += 15 * 60_000) {
      const bounds = calendarBounds('day', 'America/Santiago', t);
      expect(bounds.start).toBeLessThanOrEqual(t);
      expect(bounds.end).toBeGreaterThan(t);
      expect(calendarBounds('day', 'America/Santiago', bounds.end).start).toBe(bounds.end);
    }
  });

  it('a week starts on Monday; an hour follows an offset that is not whole hours', () => {
    // 2026-11-28 is a Saturday.
    const week = calendarBounds('week', 'UTC', at('2026-11-28T10:00:00Z'));
    expect(iso(week.start)).toBe('2026-11-23T00:00:00.000Z');
    expect(iso(week.end)).toBe('2026-11-30T00:00:00.000Z');
    const hour = calendarBounds('hour', 'Asia/Kolkata', at('2026-11-28T10:10:00Z'));
    expect(iso(hour.start)).toBe('2026-11-28T09:30:00.000Z');
    expect(iso(hour.end)).toBe('2026-11-28T10:30:00.000Z');
  });
});

describe('a budget in memory across its window', () => {
  it('a month window: spend of November is gone on December 1st, local time, and not a moment before', () => {
    let now = at('2026-11-30T22:00:00Z');
    const ledger = new SpendLedger(budgetWindow('month', 'Europe/Berlin'), () => now);
    ledger.reserve(4);
    ledger.settle(4, 6, now);
    expect(ledger.room(10, now)).toBe(4);
    // A reservation made in November and still running at midnight belongs to no window...
    ledger.reserve(3);
    now = at('2026-11-30T22:59:00Z');
    expect(ledger.room(10, now)).toBe(1);
    // 2 would fit once the reservation in flight settles: a second; 5 only in the next window.
    expect(ledger.retryMs(2, 10, now)).toBe(1000);
    expect(ledger.retryMs(5, 10, now)).toBe(60_000);
    expect(ledger.resetMs(now)).toBe(60_000);
    now = at('2026-11-30T23:00:00Z');
    expect(ledger.room(10, now)).toBe(7);
    // ...and its cost is charged to the window in which it ends.
    ledger.settle(3, 2.5, now);
    expect(ledger.snapshotAt(now)).toEqual({ spent: 2.5, reserved: 0 });
  });

  it('a rolling window: a charge leaves it once the window has passed, slot by slot', () => {
    const window = budgetWindow('60s', undefined);
    expect(window).toMatchObject({ kind: 'rolling', ms: 60_000, slotMs: 1000 });
    let now = 1_000_000_000;
    const ledger = new SpendLedger(window, () => now);
    ledger.settle(0, 3, now);
    now += 30_000;
    ledger.settle(0, 5, now);
    expect(ledger.room(10, now)).toBe(2);
    // Room for 4 comes when the first charge leaves, 60 s after its slot began.
    const wait = ledger.retryMs(4, 10, now);
    expect(wait).toBe((slotOf({ slotMs: 1000 }, 1_000_000_000) + 60) * 1000 - now);
    now += wait;
    expect(ledger.room(10, now)).toBe(5);
    now += 30_000;
    expect(ledger.room(10, now)).toBe(10);
    expect(ledger.resetMs(now)).toBe(0);
  });
});
