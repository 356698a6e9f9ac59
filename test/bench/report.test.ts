import { describe, expect, it } from 'vitest';
import { fmt, signed } from '../../bench/support/report.ts';

describe('the report numbers', () => {
  it('writes a difference with one sign, whichever way it goes', () => {
    expect(signed(0.25)).toBe('+0.25');
    expect(signed(0)).toBe('+0.00');
    expect(signed(-0.49)).toBe('-0.49');
    expect(signed(-1234.5, 1)).toBe('-1,234.5');
    expect(signed(undefined)).toBe('–');
    expect(signed(Number.NaN)).toBe('–');
  });

  it('writes plain numbers with grouping and fixed digits', () => {
    expect(fmt(32332, 0)).toBe('32,332');
    expect(fmt(0.186, 3)).toBe('0.186');
    expect(fmt(undefined)).toBe('–');
  });
});
