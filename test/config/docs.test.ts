import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { renderConfigReference } from '../../src/gateway/config/docs.js';
import { configFileJsonSchema, type JsonSchema } from '../../src/gateway/config/json-schema.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { resolveSecrets } from '../../src/gateway/config/secrets.js';
import { AIMD_DEFAULTS, CROSS_FIELD_RULES } from '../../src/gateway/config/schema/index.js';
import { UNSUPPORTED_PARAM_NAMES } from '../../src/gateway/strict/unsupported-params-catalog.js';

const reference = renderConfigReference();

/** The text of the `## <title>` section, up to the next second-level heading. */
function section(title: string): string {
  const start = reference.indexOf(`\n## ${title}\n`);
  expect(start, `section ${title}`).toBeGreaterThanOrEqual(0);
  const end = reference.indexOf('\n## ', start + 4);
  return reference.slice(start, end < 0 ? undefined : end);
}

describe('configuration reference', () => {
  it('is deterministic and ends with exactly one newline', () => {
    expect(renderConfigReference()).toBe(reference);
    expect(reference.endsWith('\n')).toBe(true);
    expect(reference.endsWith('\n\n')).toBe(false);
  });

  it('is what docs/configuration.md holds (run `make docs` after changing the schema)', async () => {
    expect(await readFile('docs/configuration.md', 'utf8')).toBe(reference);
  });

  it('has a section with a row for every field of every object', () => {
    const defs = configFileJsonSchema().$defs as Record<string, JsonSchema>;
    for (const def of Object.values(defs)) {
      const text = section(String(def.title));
      if (typeof def.description === 'string') expect(text).toContain(def.description);
      const required = new Set((def.required as string[] | undefined) ?? []);
      for (const [field, property] of Object.entries(def.properties as Record<string, JsonSchema>)) {
        const row = text.split('\n').find((line) => line.startsWith(`| \`${field}\` |`));
        expect(row, `${String(def.title)}.${field}`).toBeDefined();
        const cells = row!.split(' | ');
        expect(cells[2]).toBe(required.has(field) ? 'yes' : 'no');
        if ('default' in property)
          expect(cells[3]).toBe(`\`${JSON.stringify(property.default).replace(/^"|"$/g, '')}\``);
      }
    }
  });

  it('shows types, defaults and locations', () => {
    expect(section('Target')).toContain('Location: `$.targets.<alias>`');
    expect(section('Provider entry')).toContain('Location: `$.targets.<alias>.providers[]`');
    expect(section('Target')).toContain('| `upstream_auth_header_prefix` | string | no | `Bearer ` |');
    expect(section('Fallback')).toContain(
      '| `on_status` | array of integer in 1-5, 10-59 or 100-599, unique | no | `[]` |',
    );
    expect(section('Fallback')).toContain('| `aimd` | `false` or [AIMD overrides](#aimd-overrides) | no |');
    expect(section('Target')).toContain(
      '- **Pool**: has `providers`; must not have `url` or `propagate_trace_context`.',
    );
  });

  it('lists the cross-field rules, the AIMD defaults and the catalog', () => {
    for (const rule of CROSS_FIELD_RULES) expect(section('Cross-field rules')).toContain(rule.text);
    for (const [field, value] of Object.entries(AIMD_DEFAULTS))
      expect(section('AIMD defaults')).toContain(`| \`${field}\` | \`${JSON.stringify(value)}\` |`);
    for (const name of UNSUPPORTED_PARAM_NAMES)
      expect(section('Unsupported-parameter catalog')).toContain(`| \`${name}\` |`);
    expect(section('Unsupported-parameter catalog')).toContain('| `n` | null, `1` |');
  });

  it('links only to headings that exist', () => {
    const anchors = new Set(
      [...reference.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const links = [...reference.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(20);
    expect(links.filter((link) => !anchors.has(link))).toEqual([]);
  });

  it('keeps every table row well formed (pipes in text are escaped)', () => {
    const cellCount = (line: string): number => line.replace(/\\\|/g, '').split('|').length;
    let columns: number | undefined;
    let rows = 0;
    for (const line of reference.split('\n')) {
      if (!line.startsWith('|')) columns = undefined;
      else if (columns === undefined) columns = cellCount(line);
      else {
        expect([line, cellCount(line)]).toEqual([line, columns]);
        rows++;
      }
    }
    expect(rows).toBeGreaterThan(100);
  });
});

describe('configuration examples in the documentation', () => {
  /** Parses and resolves a configuration the way `gateway validate --skip-references` does. */
  async function problems(config: unknown): Promise<unknown[]> {
    const parsed = parseConfigText(JSON.stringify(config), 'example.json');
    if (!parsed.ok) return parsed.issues;
    const resolved = await resolveSecrets(parsed.config, { placeholders: true });
    return resolved.ok ? [] : resolved.issues;
  }

  it('the reference example is a valid configuration with a key reference', async () => {
    const example = /```yaml\n([\s\S]*?)```/.exec(reference)?.[1];
    const config = parseYaml(example!) as { targets: { llama: { providers: { gateway_key?: unknown }[] } } };
    expect(config.targets.llama.providers[1]?.gateway_key).toEqual({
      from_file: '/etc/gateway-keys/example-api',
    });
    expect(await problems(config)).toEqual([]);
  });

  it('the Helm values of "Keys and secrets" (docs/operations.md) hold a valid configuration', async () => {
    const operations = await readFile('docs/operations.md', 'utf8');
    const start = operations.indexOf('### Keys and secrets');
    expect(start).toBeGreaterThan(0);
    const values = /```yaml\n([\s\S]*?)```/.exec(operations.slice(start))?.[1];
    const parsed = parseYaml(values!) as {
      config: { spec: { auth: { key_definitions: Record<string, { key: unknown }> } } };
      keys: { existingSecret: string };
    };
    expect(await problems(parsed.config.spec)).toEqual([]);
    // The references point into the directory the chart mounts keys.existingSecret on.
    const chart = parseYaml(await readFile('charts/gateway/values.yaml', 'utf8')) as {
      keys: { existingSecretMountPath: string };
    };
    expect(parsed.keys.existingSecret).not.toBe('');
    const key = parsed.config.spec.auth.key_definitions['team-a']?.key as { from_file: string };
    expect(key.from_file.startsWith(`${chart.keys.existingSecretMountPath}/`)).toBe(true);
  });
});
