import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { findDuplicateKeys } from '../../src/gateway/config/json-duplicates.js';

const keysOf = (text: string): string[] => findDuplicateKeys(text).map((d) => d.key);

describe('findDuplicateKeys', () => {
  it('finds a repeated key with the offsets of both occurrences', () => {
    const text = '{"a": 1, "b": 2, "a": 3}';
    expect(findDuplicateKeys(text)).toEqual([{ key: 'a', offset: 17, firstOffset: 1 }]);
  });

  it('scopes keys to their own object: siblings, nesting and array elements do not collide', () => {
    expect(keysOf('{"a": {"a": 1}, "b": {"a": 2}}')).toEqual([]);
    expect(keysOf('[{"a": 1}, {"a": 2}]')).toEqual([]);
    expect(keysOf('{"x": [{"a": 1, "b": [1, {"a": 2}]}], "a": 3}')).toEqual([]);
    expect(keysOf('{"x": {"y": {"z": 1, "z": 2}}}')).toEqual(['z']);
    expect(keysOf('[{"a": 1, "a": 2}, {"b": 1, "b": 2}]')).toEqual(['a', 'b']);
  });

  it('compares decoded keys and ignores values that look like keys', () => {
    expect(keysOf('{"a": 1, "\\u0061": 2}')).toEqual(['a']);
    expect(keysOf('{"a\\"b": 1, "a\\u0022b": 2}')).toEqual(['a"b']);
    expect(keysOf('{"a": "a", "b": "a"}')).toEqual([]);
    expect(keysOf('{"a": "}, {\\"a\\": [", "b": "\\\\", "c": "\\\\\\""}')).toEqual([]);
    expect(keysOf('{"k\\\\": 1, "k\\\\": 2}')).toEqual(['k\\']);
  });

  it('accepts scalars, empty containers and whitespace', () => {
    for (const text of ['1', '"a"', 'null', '{}', '[]', ' \n{ } ', '{"a": {}, "b": []}'])
      expect(findDuplicateKeys(text)).toEqual([]);
  });

  it('agrees with the YAML parser, which reads JSON as YAML 1.2, on generated documents', () => {
    // Objects as entry lists over a small key alphabet (with escaped spellings of the same key), so
    // repeats are common.
    const key = fc.constantFrom('"a"', '"\\u0061"', '"b"', '"a b"', '"\\"q"', '"\\\\"');
    const scalar = fc.constantFrom('1', '-2.5e3', 'true', 'null', '"a"', '"{\\"a\\": ["', '"\\\\"');
    const { value } = fc.letrec<{ value: string }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        scalar,
        fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(', ')}]`),
        fc
          .array(fc.tuple(key, tie('value')), { maxLength: 5 })
          .map((entries) => `{${entries.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
      ),
    }));
    fc.assert(
      fc.property(value, (text) => {
        JSON.parse(text); // generated text is valid JSON
        const yamlDuplicates = parseDocument(text, { uniqueKeys: true })
          .errors.filter((e) => e.code === 'DUPLICATE_KEY')
          .map((e) => e.pos[0]);
        const found = findDuplicateKeys(text);
        expect(found.length).toBe(yamlDuplicates.length);
        for (const duplicate of found) expect(text[duplicate.offset]).toBe('"');
      }),
    );
  });

  it('finds one repeated alias among 5,000', () => {
    const targets: Record<string, unknown> = {};
    for (let i = 0; i < 5_000; i++)
      targets[`alias-${i}`] = { url: `http://127.0.0.1:${8000 + (i % 100)}/v1`, headers: { 'x-n': `${i}` } };
    const text = JSON.stringify({ targets }, null, 2);
    expect(findDuplicateKeys(text)).toEqual([]);
    const repeated = text.replace('"alias-4999"', '"alias-0"');
    expect(findDuplicateKeys(repeated)).toMatchObject([{ key: 'alias-0' }]);
  });
});
