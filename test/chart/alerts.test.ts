/**
 * The PrometheusRule alerts and the Grafana dashboard: promtool checks the rendered rule files and
 * runs the unit tests in charts/gateway/tests/promtool/ (every alert fires in one case and stays
 * silent in another), and every metric they query is one the gateway exports.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { AimdMetrics } from '../../src/gateway/balance/aimd-metrics.js';
import { GatewayMetrics } from '../../src/gateway/telemetry/metrics.js';
import { CHART, ROOT, ciCases, findObject, render, type K8sObject } from './helm.ts';

const PROMTOOL_TESTS = join(CHART, 'tests/promtool/alerts-test.yaml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
}
interface RuleGroups {
  groups: { name: string; rules: Rule[] }[];
}

const renders = new Map<string, K8sObject[]>();
/** Each scenario is rendered once for the whole file. */
const objectsOf = (name: string): K8sObject[] => {
  let objects = renders.get(name);
  if (!objects) {
    objects = render({ valuesFiles: [ciCases().find((c) => c.name === name)!.file] });
    renders.set(name, objects);
  }
  return objects;
};
const rulesOf = (name: string): RuleGroups => {
  const rule = findObject(objectsOf(name), 'PrometheusRule');
  if (!rule) throw new Error(`${name}: no PrometheusRule rendered`);
  return rule.spec as RuleGroups;
};
const dashboardOf = (name: string): string => {
  const cm = objectsOf(name).find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboards'))!;
  return (cm.data as Record<string, string>)['gateway.json']!;
};

/** The names the gateway's registries export with a prefix, histogram series included. */
function exportedNames(prefix: string): Set<string> {
  const metrics = new GatewayMetrics(prefix);
  new AimdMetrics(metrics.registry, prefix);
  const names = new Set<string>();
  for (const metric of metrics.registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  return names;
}
const referencedNames = (text: string, prefix: string): string[] => [
  ...new Set(text.match(new RegExp(`\\b${prefix}_[a-z_]+`, 'g')) ?? []),
];

let promtool: string | undefined;
let promtoolProblem = '';
let scratch = '';

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'gateway-alerts-'));
  const result = spawnSync('bash', [join(ROOT, 'test/chart/ensure-promtool.sh')], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (result.status === 0) promtool = result.stdout.trim().split('\n').pop();
  else {
    promtoolProblem = result.stderr.trim() || `ensure-promtool.sh exited ${result.status}`;
    console.warn(`SKIPPED: promtool checks of the chart's alerts: ${promtoolProblem}`);
  }
}, 600_000);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const runPromtool = (args: string[], cwd: string) => {
  const result = spawnSync(promtool!, args, { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
};

describe('alert rules', () => {
  it('ship the alerts the gateway needs', () => {
    const alerts = rulesOf('production').groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual([
      'GatewayConfigReloadFailing',
      'GatewayConfigDivergent',
      'GatewayHighErrorRatio',
      'GatewayHighRejectionRatio',
      'GatewayAimdShareAtFloor',
      'GatewayShutdownForcedConnections',
      'GatewayBudgetNearlySpent',
      'GatewayBudgetExhausted',
    ]);
  });

  it('query only metrics the gateway exports (default and custom prefix)', () => {
    for (const [name, prefix] of [
      ['production', 'gateway'],
      ['customized', 'edge_gw'],
    ] as const) {
      const exprs = rulesOf(name)
        .groups.flatMap((g) => g.rules.map((r) => r.expr))
        .join('\n');
      const used = referencedNames(exprs, prefix);
      expect(used.length, name).toBeGreaterThanOrEqual(6);
      const exported = exportedNames(prefix);
      expect(
        used.filter((m) => !exported.has(m)),
        name,
      ).toEqual([]);
      if (prefix !== 'gateway') expect(exprs).not.toMatch(/\bgateway_/);
    }
  });

  it('follow the configured thresholds and keep the extra rules', () => {
    const rules = rulesOf('customized').groups[0]!.rules;
    expect(rules.find((r) => r.alert === 'GatewayHighErrorRatio')?.expr).toContain('> 0.02');
    expect(rules.find((r) => r.alert === 'GatewayBudgetNearlySpent')?.expr).toMatch(/\) >= 0\.9\n$/);
    expect(rules.at(-1)).toMatchObject({ alert: 'EdgeGatewayDown', labels: { severity: 'critical' } });
  });

  it('pass promtool check rules', (ctx) => {
    if (!promtool) return ctx.skip(`promtool unavailable: ${promtoolProblem}`);
    for (const name of ['production', 'customized']) {
      const file = join(scratch, `${name}-rules.yaml`);
      writeFileSync(file, toYaml(rulesOf(name)));
      const result = runPromtool(['check', 'rules', file], scratch);
      expect(result.output, name).toContain('SUCCESS');
      expect(result.status, result.output).toBe(0);
    }
  });

  it('pass their promtool unit tests (charts/gateway/tests/promtool)', (ctx) => {
    if (!promtool) return ctx.skip(`promtool unavailable: ${promtoolProblem}`);
    writeFileSync(join(scratch, 'rules.yaml'), toYaml(rulesOf('production')));
    copyFileSync(PROMTOOL_TESTS, join(scratch, 'alerts-test.yaml'));
    const result = runPromtool(['test', 'rules', 'alerts-test.yaml'], scratch);
    expect(result.status, result.output).toBe(0);
    expect(result.output).toContain('SUCCESS');
  });

  it('each alert has a promtool case where it fires and one where it stays silent', () => {
    const tests = parseYaml(readFileSync(PROMTOOL_TESTS, 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const alert of rulesOf('production').groups.flatMap((g) => g.rules.map((r) => r.alert!))) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires somewhere`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays silent somewhere`,
      ).toBe(true);
    }
  });
});

describe('Grafana dashboard', () => {
  it('queries only metrics the gateway exports', () => {
    const json = dashboardOf('production');
    const used = referencedNames(json, 'gateway');
    expect(used.length).toBeGreaterThanOrEqual(10);
    const exported = exportedNames('gateway');
    expect(used.filter((m) => !exported.has(m))).toEqual([]);
  });

  it('follows a custom metric prefix', () => {
    const json = dashboardOf('customized');
    expect(json).not.toMatch(/\bgateway_/);
    const exported = exportedNames('edge_gw');
    const used = referencedNames(json, 'edge_gw');
    expect(used.length).toBeGreaterThanOrEqual(10);
    expect(used.filter((m) => !exported.has(m))).toEqual([]);
    expect((JSON.parse(json) as { uid: string }).uid).toBe('llm-gateway-overview');
  });
});
