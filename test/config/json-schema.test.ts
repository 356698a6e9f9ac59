import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  bareConfigJsonSchema,
  configFileJsonSchema,
  type JsonSchema,
} from '../../src/gateway/config/json-schema.js';
import { validConfig } from './helpers/arbitraries.js';
import { check, keywordsOf, SUPPORTED_KEYWORDS } from './helpers/mini-json-schema.js';
import { EXAMPLE_FILES } from './helpers/examples.js';

const schema = configFileJsonSchema();
const defs = schema.$defs as Record<string, JsonSchema>;

describe('configuration JSON Schema', () => {
  it('is a draft 2020-12 document offering the bare config or the envelope', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.oneOf).toEqual([
      { $ref: '#/$defs/GatewayConfig' },
      { $ref: '#/$defs/GatewayConfigEnvelope' },
    ]);
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
  });

  it('closes every object except the envelope metadata', () => {
    const objects = Object.entries(defs).filter(([, def]) => def.type === 'object');
    expect(objects.length).toBeGreaterThanOrEqual(12);
    for (const [name, def] of objects)
      expect([name, def.additionalProperties]).toEqual([name, name === 'EnvelopeMetadata' ? {} : false]);
  });

  it('describes the input: fields with defaults are not required', () => {
    expect(defs.GatewayConfig!.required).toEqual(['targets']);
    // A provider entry needs exactly one of url and service, said by its anyOf.
    expect(defs.Provider!.required).toBeUndefined();
    expect((defs.Provider!.anyOf as JsonSchema[]).map((branch) => branch.required)).toEqual([
      ['url'],
      ['service'],
    ]);
    expect(defs.Fallback!.required).toBeUndefined();
    expect((defs.Fallback!.properties as JsonSchema).enabled).toMatchObject({
      type: 'boolean',
      default: true,
    });
    expect((defs.AimdOverrides!.properties as JsonSchema).latency_budget_ms).toMatchObject({ default: 2000 });
  });

  it('does not carry the safe-integer range on every integer', () => {
    expect(JSON.stringify(schema)).not.toContain(String(Number.MAX_SAFE_INTEGER));
  });

  it('uses only keywords the structural check understands', () => {
    expect([...keywordsOf(schema)].filter((k) => !SUPPORTED_KEYWORDS.has(k))).toEqual([]);
  });

  it.each(EXAMPLE_FILES)('accepts %s', async (file) => {
    const value: unknown = parseYaml(await readFile(file, 'utf8'));
    expect(check(schema, value)).toEqual([]);
  });

  it('accepts every generated valid configuration, bare and wrapped', () => {
    fc.assert(
      fc.property(validConfig, (config) => {
        expect(check(schema, config)).toEqual([]);
        expect(check(bareConfigJsonSchema(), config)).toEqual([]);
        expect(
          check(schema, { apiVersion: 'llm-gateway.dev/v1alpha1', kind: 'GatewayConfig', spec: config }),
        ).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  const url = 'http://a';
  it.each([
    ['an unknown root field', { targets: { a: { url } }, extra: 1 }],
    ['an unknown target field', { targets: { a: { url, stratgy: 'priority' } } }],
    ['a target with url and providers', { targets: { a: { url, providers: [{ url }] } } }],
    ['a target with neither', { targets: { a: {} } }],
    ['strategy on a single-provider target', { targets: { a: { url, strategy: 'priority' } } }],
    [
      'propagate_trace_context on a pool',
      { targets: { a: { providers: [{ url }], propagate_trace_context: true } } },
    ],
    ['strict_mode in a target', { targets: { a: { url, strict_mode: true } } }],
    ['an out-of-range status', { targets: { a: { providers: [{ url }], fallback: { on_status: [600] } } } }],
    ['aimd: true', { targets: { a: { providers: [{ url }], fallback: { aimd: true } } } }],
    [
      'an unknown effort',
      {
        targets: {
          a: {
            url,
            reasoning_translation: {
              chat_completions: {
                writes: [{ target_path: '/x', values: { mega: 1 } }],
                unsupported_efforts: [],
              },
            },
          },
        },
      },
    ],
    ['a name outside the catalog', { targets: { a: { url } }, reject_unsupported_params: ['temperature'] }],
    [
      'a wrong envelope kind',
      { apiVersion: 'llm-gateway.dev/v1alpha1', kind: 'Config', spec: { targets: { a: { url } } } },
    ],
    [
      'a bare config mixed with envelope fields',
      { apiVersion: 'llm-gateway.dev/v1alpha1', targets: { a: { url } } },
    ],
  ])('rejects %s', (_name, value) => {
    expect(check(schema, value)).not.toEqual([]);
  });

  it('gives the bare schema with the same definitions', () => {
    const bare = bareConfigJsonSchema();
    expect(bare.$ref).toBe('#/$defs/GatewayConfig');
    expect((bare.$defs as Record<string, unknown>).Target).toEqual(defs.Target);
    expect(
      check(bare, { apiVersion: 'llm-gateway.dev/v1alpha1', kind: 'GatewayConfig', spec: {} }),
    ).not.toEqual([]);
  });
});
