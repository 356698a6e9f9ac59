import * as stable from '@opentelemetry/semantic-conventions';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import * as written from '../../src/gateway/telemetry/trace-attributes.js';

/** The attribute names written out in trace-attributes.ts are the package's, letter for letter. */
describe('trace attribute names', () => {
  it.each(Object.entries(written))('%s is the semantic conventions’ value', (name, value) => {
    const fromPackage =
      (stable as Record<string, unknown>)[name] ?? (incubating as Record<string, unknown>)[name];
    expect(fromPackage).toBeDefined();
    expect(value).toBe(fromPackage);
  });
});
