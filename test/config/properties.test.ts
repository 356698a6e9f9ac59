import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import type { z } from 'zod';
import { formatPath, schemasAt, type PathSegment } from '../../src/gateway/config/issues.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { GatewayConfigSchema } from '../../src/gateway/config/schema/index.js';
import { validConfig } from './helpers/arbitraries.js';

const RUNS = 200;

/** Paths of every strict object (not map) in a config value, found by walking it with the schema. */
function strictObjectPaths(value: unknown, path: PathSegment[] = []): PathSegment[][] {
  if (Array.isArray(value)) return value.flatMap((item, i) => strictObjectPaths(item, [...path, i]));
  if (typeof value !== 'object' || value === null) return [];
  const schemas: z.core.$ZodType[] = schemasAt(GatewayConfigSchema, path);
  const isStrictObject = schemas.some((s) => s._zod.def.type === 'object');
  const here = isStrictObject ? [path] : [];
  return [
    ...here,
    ...Object.entries(value).flatMap(([key, child]) => strictObjectPaths(child, [...path, key])),
  ];
}

function insertAt(config: unknown, path: readonly PathSegment[], key: string, value: unknown): unknown {
  const copy = structuredClone(config) as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = copy;
  for (const segment of path) node = node[segment] as Record<string | number, unknown>;
  node[key] = value;
  return copy;
}

/** Objects shaped like configs (keys drawn from real field names) reach the deeper checks. */
const FIELD_NAMES = [
  'targets',
  'auth',
  'strict_mode',
  'url',
  'providers',
  'strategy',
  'fallback',
  'aimd',
  'first_token_timeout_ms',
  'latency_budget_ms',
  'reasoning_translation',
  'chat_completions',
  'writes',
  'values',
  'target_path',
  'unsupported_efforts',
  'keys',
  'key_definitions',
  'rate_limit',
  'weight',
  'name',
  'inflight_limit',
  'a',
  'a:b',
];
const configLike = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 1 }),
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...FIELD_NAMES), tie('node'), { maxKeys: 4 }),
  ),
})).node;

describe('config loading properties', () => {
  it('(a) a valid config loads to the same object from JSON and from YAML', () => {
    fc.assert(
      fc.property(validConfig, (config) => {
        const expected = GatewayConfigSchema.parse(config);
        const fromJson = parseConfigText(JSON.stringify(config, null, 2), 'config.json');
        const fromYaml = parseConfigText(toYaml(config), 'config.yaml');
        expect(fromJson.ok ? fromJson.config : fromJson.issues).toEqual(expected);
        expect(fromYaml.ok ? fromYaml.config : fromYaml.issues).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it('(b) arbitrary JSON values never make the loader throw', () => {
    const expectResult = (text: string, source: string): void => {
      const result = parseConfigText(text, source);
      if (result.ok) expect(result.hash).toMatch(/^[0-9a-f]{64}$/);
      else {
        expect(result.issues.length).toBeGreaterThan(0);
        for (const issue of result.issues) {
          expect(issue.path.startsWith('$')).toBe(true);
          expect(issue.message.length).toBeGreaterThan(0);
        }
      }
    };
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), configLike), (value) => {
        const text = JSON.stringify(value) ?? 'null';
        expectResult(text, 'config.json');
        expectResult(toYaml(value), 'config.yaml');
        expectResult(text, 'config');
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        expectResult(text, 'config.yaml');
        expectResult(text, 'config.json');
      }),
      { numRuns: RUNS },
    );
  });

  it('(c) an unknown key inserted into any object of a valid config is exactly one issue at that path', () => {
    const unknownKey = fc.stringMatching(/^x_[a-z]{1,10}$/);
    fc.assert(
      fc.property(
        validConfig.chain((config) =>
          fc.tuple(
            fc.constant(config),
            fc.constantFrom(...strictObjectPaths(config)),
            unknownKey,
            fc.jsonValue(),
          ),
        ),
        ([config, path, key, value]) => {
          const result = parseConfigText(JSON.stringify(insertAt(config, path, key, value)), 'config.json');
          expect(result.ok).toBe(false);
          if (result.ok) return;
          expect(result.issues).toHaveLength(1);
          expect(result.issues[0]!.path).toBe(formatPath([...path, key]));
          expect(result.issues[0]!.message).toContain(`unknown field \`${key}\``);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
