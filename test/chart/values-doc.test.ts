/**
 * charts/gateway/README.md: its values table is the one values-doc.ts generates from values.yaml
 * and values.schema.json, so a value added, removed, re-defaulted or re-described shows up there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  BEGIN_MARKER,
  CHART_DIR,
  END_MARKER,
  README_FILE,
  valueRows,
  valuesTable,
  withTable,
} from './values-doc.ts';

describe('charts/gateway/README.md values table', () => {
  const readme = readFileSync(README_FILE, 'utf8');

  it('is current (node test/chart/values-doc.ts --write regenerates it)', () => {
    expect(readme, 'charts/gateway/README.md is stale: run `node test/chart/values-doc.ts --write`').toBe(
      withTable(readme),
    );
  });

  it('sits between one pair of markers', () => {
    expect(readme.split(BEGIN_MARKER)).toHaveLength(2);
    expect(readme.split(END_MARKER)).toHaveLength(2);
  });

  it('covers every top-level value and gives each row its default from values.yaml', () => {
    const values = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    const rows = valueRows();
    for (const key of Object.keys(values)) {
      expect(
        rows.some((row) => row.key === key || row.key.startsWith(`${key}.`)),
        key,
      ).toBe(true);
    }
    const at = (path: string): unknown =>
      path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], values);
    for (const row of rows) expect(row.default, row.key).toEqual(at(row.key));
  });

  it('takes descriptions from `# --` comments, types from the schema', () => {
    const rows = new Map(valueRows().map((row) => [row.key, row]));
    expect(rows.get('image.digest')?.description).toMatch(/^Immutable digest/);
    expect(rows.get('config.spec')?.type).toBe('ChartGatewayConfig');
    expect(rows.get('resources')?.type).toBe('ResourceRequirements');
    expect(rows.get('terminationGracePeriodSeconds')?.type).toBe('integer or null');
    // A documented map is one row; an undocumented one is described through its keys.
    expect(rows.has('strategy')).toBe(true);
    expect(rows.has('strategy.type')).toBe(false);
    expect(rows.has('gateway')).toBe(false);
    expect(rows.has('gateway.port')).toBe(true);
  });

  it('escapes what would break a Markdown table', () => {
    const table = valuesTable([
      { key: 'a', type: 'string', default: 'x|y', description: 'default: <release>-<chart> | more' },
    ]);
    expect(table).toContain('| `a` | string | `"x\\|y"` | default: &lt;release&gt;-&lt;chart&gt; \\| more |');
  });
});
