import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFaultHeader } from '../../src/simulator/faults/directive.js';
import { U32_MAX, formatFault, type FaultSpec } from '../../src/simulator/faults/modes.js';
import { FAULT_MODES } from '../fixtures/fault-modes.js';

const ws = fc.constantFrom('', ' ', '  ', '\t', ' \t ');
const mode = fc.constantFrom(...FAULT_MODES);

/** A valid header: the mode, then any subset of keys in any order, with optional whitespace. */
const validHeader = fc
  .record({
    mode,
    after_chunks: fc.option(fc.integer({ min: 0, max: U32_MAX }), { nil: undefined }),
    delay_ms: fc.option(fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }), { nil: undefined }),
    utf8: fc.option(fc.boolean(), { nil: undefined }),
    order: fc.shuffledSubarray(['after_chunks', 'delay_ms', 'utf8'] as const, { minLength: 3, maxLength: 3 }),
    pads: fc.array(ws, { minLength: 16, maxLength: 16 }),
  })
  .map((r) => {
    let pad = 0;
    const p = (): string => r.pads[pad++ % r.pads.length]!;
    let text = `${p()}${r.mode}${p()}`;
    for (const key of r.order) {
      const value = r[key];
      if (value === undefined) continue;
      text += `;${p()}${key}${p()}=${p()}${String(value)}${p()}`;
    }
    const expected: FaultSpec = {
      mode: r.mode,
      afterChunks: r.after_chunks ?? 3,
      delayMs: r.delay_ms === undefined ? 10 : Number(r.delay_ms),
      utf8: r.utf8 ?? false,
    };
    return { text, expected };
  });

describe('x-sim-fault parser', () => {
  it('parses every valid header, any key order and whitespace, with the defaults filled in', () => {
    fc.assert(
      fc.property(validHeader, ({ text, expected }) => {
        expect(parseFaultHeader(text)).toEqual({ ok: true, fault: expected });
      }),
    );
  });

  it('round-trips the canonical form', () => {
    fc.assert(
      fc.property(validHeader, ({ expected }) => {
        expect(parseFaultHeader(formatFault(expected))).toEqual({ ok: true, fault: expected });
      }),
    );
  });

  it('never throws, and anything it accepts names a valid mode', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        const result = parseFaultHeader(text);
        if (result.ok) expect(FAULT_MODES).toContain(result.fault.mode);
        else expect(result.message).toContain('valid modes: cut_between_frames');
      }),
    );
  });

  it('refuses unknown keys', () => {
    const key = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => {
      const t = k.trim();
      return t !== '' && !['after_chunks', 'delay_ms', 'utf8'].includes(t) && !/[;=]/.test(k);
    });
    fc.assert(
      fc.property(mode, key, (m, k) => {
        const result = parseFaultHeader(`${m};${k}=1`);
        expect(result.ok).toBe(false);
      }),
    );
  });

  it('refuses after_chunks outside u32 and any non-decimal value', () => {
    fc.assert(
      fc.property(mode, fc.bigInt({ min: BigInt(U32_MAX) + 1n, max: 2n ** 70n }), (m, n) => {
        expect(parseFaultHeader(`${m};after_chunks=${n}`).ok).toBe(false);
      }),
    );
    for (const bad of ['-1', '+1', '1.5', '0x10', '1e3', '', 'ten', '1 2']) {
      expect(parseFaultHeader(`reset;after_chunks=${bad}`).ok, bad).toBe(false);
      expect(parseFaultHeader(`reset;delay_ms=${bad}`).ok, bad).toBe(false);
    }
  });

  it('accepts the u32 and u64 maxima and refuses one more', () => {
    expect(parseFaultHeader('stall;after_chunks=4294967295')).toMatchObject({
      ok: true,
      fault: { afterChunks: U32_MAX },
    });
    expect(parseFaultHeader('stall;delay_ms=18446744073709551615').ok).toBe(true);
    expect(parseFaultHeader('stall;delay_ms=18446744073709551616').ok).toBe(false);
  });

  it('refuses malformed structure', () => {
    for (const bad of [
      '',
      ' ',
      'RESET',
      'reset;',
      'reset;;after_chunks=1',
      'reset;after_chunks',
      'reset;after_chunks=1;after_chunks=2',
      'reset;utf8=TRUE',
      'reset;utf8=1',
      'reset,after_chunks=1',
      'after_chunks=1;reset',
    ]) {
      const result = parseFaultHeader(bad);
      expect(result.ok, JSON.stringify(bad)).toBe(false);
    }
  });
});
