import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonErrorOffset } from '../../src/gateway/config/json-error.js';

/** The offset V8 names in its message, when it names one. */
function v8Offset(text: string): number | 'valid' | undefined {
  try {
    JSON.parse(text);
    return 'valid';
  } catch (error) {
    const match = /at position (\d+)/.exec((error as Error).message);
    return match ? Number(match[1]) : undefined;
  }
}

describe('jsonErrorOffset', () => {
  it.each([
    ['{"a": 1}', undefined],
    ['  [1, 2.5e-3, "x\\u00e9", true, false, null, {}]  ', undefined],
    ['', 0],
    ['{', 1],
    ['{"a": 1,}', 8],
    ['{"a" 1}', 5],
    ['[1 2]', 3],
    ['{"a": 1} x', 9],
    ['{"a": tru}', 9],
    ['-', 1],
    ['1.', 2],
    ['1e+', 3],
    ['"abc', 4],
    ['"a\\qb"', 3],
    ['"\\u12G4"', 5],
    ['"a\nb"', 2],
    ["{'a': 1}", 1],
  ])('%j -> %s', (text, offset) => {
    expect(jsonErrorOffset(text)).toBe(offset);
  });

  it('survives nesting far deeper than the call stack', () => {
    const depth = 200_000;
    expect(jsonErrorOffset('['.repeat(depth) + ']'.repeat(depth))).toBeUndefined();
    expect(jsonErrorOffset('['.repeat(depth))).toBe(depth);
  });

  it('agrees with JSON.parse on validity and with the position V8 reports', () => {
    const corrupted = fc
      .tuple(
        fc.json(),
        fc.nat(),
        fc.constantFrom('insert', 'delete', 'replace'),
        fc.constantFrom(...'{}[]:,"\\x1 -.e\n'),
      )
      .map(([text, at, edit, char]) => {
        const i = text.length === 0 ? 0 : at % text.length;
        if (edit === 'insert') return text.slice(0, i) + char + text.slice(i);
        if (edit === 'delete') return text.slice(0, i) + text.slice(i + 1);
        return text.slice(0, i) + char + text.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(fc.json(), corrupted), (text) => {
        const expected = v8Offset(text);
        const offset = jsonErrorOffset(text);
        if (expected === 'valid') expect(offset).toBeUndefined();
        else if (expected === undefined) expect(offset).toBeGreaterThanOrEqual(0);
        else expect(offset).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
