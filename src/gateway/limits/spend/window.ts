/**
 * The windows of spend budgets: when the spend of a budget starts again from zero.
 *
 * - A calendar window (`hour`, `day`, `week`, `month`) is the hour, day, ISO week (Monday to Monday)
 *   or month of the configured time zone that holds the instant. Its boundaries are local
 *   midnights (or hours), so a day of a time zone with daylight saving time may last 23 or 25 hours.
 * - A rolling window of duration D is the spend of the last D, counted in `ROLLING_SLOTS` slots of
 *   D/60 each (slot n covers [n * slot, (n + 1) * slot) since the Unix epoch): a charge leaves the
 *   window between 59/60 D and D after it was made. Slots keep the state bounded whatever the
 *   traffic, where a log of every charge would grow with it.
 *
 * Everything here is a pure function of an instant (Unix milliseconds), so replicas that share a
 * budget through Redis compute the same boundaries, and the tests can cross a month at will.
 */

export const CALENDAR_UNITS = ['hour', 'day', 'week', 'month'] as const;
export type CalendarUnit = (typeof CALENDAR_UNITS)[number];

export const ROLLING_SLOTS = 60;

/** A rolling duration as written in the configuration: an integer and s, m, h or d. */
export const ROLLING_PATTERN = /^([1-9][0-9]{0,5})(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export type BudgetWindow =
  | { readonly kind: 'calendar'; readonly unit: CalendarUnit; readonly timeZone: string }
  | {
      readonly kind: 'rolling';
      /** The duration as configured (`24h`), for labels. */
      readonly text: string;
      readonly ms: number;
      /** One slot: `ms / ROLLING_SLOTS`, rounded up to a whole millisecond. */
      readonly slotMs: number;
    };

/** The window a configuration names; `window` was validated by the schema. */
export function budgetWindow(window: string, timeZone: string | undefined): BudgetWindow {
  if ((CALENDAR_UNITS as readonly string[]).includes(window))
    return { kind: 'calendar', unit: window as CalendarUnit, timeZone: timeZone ?? 'UTC' };
  const match = ROLLING_PATTERN.exec(window);
  if (match === null) throw new Error(`not a budget window: ${window}`);
  const ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  return { kind: 'rolling', text: window, ms, slotMs: Math.ceil(ms / ROLLING_SLOTS) };
}

/** What identifies a window: a budget whose window changes starts again from zero. */
export function windowIdentity(window: BudgetWindow): string {
  return window.kind === 'calendar' ? `${window.unit}@${window.timeZone}` : `rolling@${window.ms}`;
}

/** The window's label in metrics: the unit or the rolling duration. */
export function windowLabel(window: BudgetWindow): string {
  return window.kind === 'calendar' ? window.unit : window.text;
}

/** Whether `timeZone` is an IANA time zone this runtime knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

export interface Bounds {
  /** Unix ms of the window's first instant. */
  readonly start: number;
  /** Unix ms of the next window's first instant. */
  readonly end: number;
}

/** The calendar window of `unit` in `timeZone` that holds `now`. */
export function calendarBounds(unit: CalendarUnit, timeZone: string, now: number): Bounds {
  const local = localParts(timeZone, now);
  let start: number;
  let end: number;
  if (unit === 'hour') {
    // An hour of a zone whose offset is not whole hours starts at that offset's minutes.
    const offset = local.utcMs - Math.floor(now / 1000) * 1000;
    start = Math.floor((now + offset) / 3_600_000) * 3_600_000 - offset;
    end = start + 3_600_000;
  } else {
    const day = unit === 'week' ? local.day - ((local.weekday + 6) % 7) : unit === 'month' ? 1 : local.day;
    start = zonedMidnight(timeZone, local.year, local.month, day);
    const next = unit === 'week' ? day + 7 : unit === 'month' ? 1 : day + 1;
    end = zonedMidnight(timeZone, local.year, unit === 'month' ? local.month + 1 : local.month, next);
  }
  return { start, end };
}

/** The slot index of `now` in a rolling window. */
export function slotOf(window: { readonly slotMs: number }, now: number): number {
  return Math.floor(now / window.slotMs);
}

interface LocalParts {
  readonly year: number;
  /** 1 to 12. */
  readonly month: number;
  readonly day: number;
  /** 0 = Sunday. */
  readonly weekday: number;
  /** The local wall-clock time of the instant (to the second) read as if it were UTC. */
  readonly utcMs: number;
}

const WEEKDAYS: Readonly<Record<string, number>> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

function localParts(timeZone: string, instant: number): LocalParts {
  const parts: Record<string, string> = {};
  for (const part of formatterOf(timeZone).formatToParts(instant)) parts[part.type] = part.value;
  const year = Number(parts.year);
  const month = Number(parts.month);
  const day = Number(parts.day);
  const utcMs = Date.UTC(
    year,
    month - 1,
    day,
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  return { year, month, day, weekday: WEEKDAYS[parts.weekday!] ?? 0, utcMs };
}

/** The zone's offset from UTC at `instant`, in ms (positive east of Greenwich). */
function offsetAt(timeZone: string, instant: number): number {
  return localParts(timeZone, instant).utcMs - Math.floor(instant / 1000) * 1000;
}

/**
 * The first instant of the local date `year-month-day` in `timeZone` (month and day may overflow:
 * month 13 is January of the next year). Midnight read with the offset in force a day before and a
 * day after: the earlier reading that is that midnight (a midnight repeated by a clock going back
 * counts from its first time); when neither is (a clock change skipped midnight, as in Santiago or
 * Beirut), the day starts at the change, which is midnight by the offset before it.
 */
function zonedMidnight(timeZone: string, year: number, month: number, day: number): number {
  const wall = Date.UTC(year, month - 1, day);
  const before = wall - offsetAt(timeZone, wall - 86_400_000);
  const after = wall - offsetAt(timeZone, wall + 86_400_000);
  const first = Math.min(before, after);
  const second = Math.max(before, after);
  if (localParts(timeZone, first).utcMs === wall) return first;
  if (localParts(timeZone, second).utcMs === wall) return second;
  return before;
}
