/**
 * Chart.yaml's metadata for chart repositories (Artifact Hub): the license matches package.json,
 * the image annotation names the image the chart deploys by default, the changes annotation is
 * well formed, no icon helm would refuse, and the release's package carries the pushed digest.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART, HELM, ROOT } from './helm.ts';

interface ChartYaml {
  version: string;
  appVersion: string;
  icon?: string;
  home?: string;
  sources?: string[];
  annotations: Record<string, string>;
}

const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as ChartYaml;
const values = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
  image: { repository: string };
};
const images = (annotation: string | undefined) =>
  parseYaml(annotation ?? '[]') as { name: string; image: string }[];

describe('Chart.yaml metadata', () => {
  it('declares the license of package.json', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
    expect(chart.annotations['artifacthub.io/license']).toBe(pkg.license);
  });

  it('lists the default image: values.yaml image.repository at the appVersion', () => {
    expect(images(chart.annotations['artifacthub.io/images'])).toEqual([
      { name: 'gateway', image: `${values.image.repository}:${chart.appVersion}` },
    ]);
  });

  it('describes its changes in the form Artifact Hub reads', () => {
    const changes = parseYaml(chart.annotations['artifacthub.io/changes'] ?? '') as {
      kind: string;
      description: string;
    }[];
    expect(changes.length).toBeGreaterThan(0);
    for (const change of changes) {
      expect(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security']).toContain(change.kind);
      expect(change.description.trim().length).toBeGreaterThan(0);
    }
  });

  it('points only at absolute URLs (helm refuses a relative icon)', () => {
    for (const url of [chart.icon, chart.home, ...(chart.sources ?? [])].filter(Boolean))
      expect(url).toMatch(/^https:\/\//);
  });
});

describe('the release package', () => {
  const out = mkdtempSync(join(tmpdir(), 'chart-metadata-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('lists the pushed image by version and digest', () => {
    const digest = `sha256:${'b'.repeat(64)}`;
    const release = spawnSync(
      process.execPath,
      [join(ROOT, '.github/scripts/release-chart.ts'), '9.8.7', digest, out],
      { encoding: 'utf8', timeout: 120_000, env: { ...process.env, HELM_BIN: HELM } },
    );
    expect(release.status, release.stderr).toBe(0);
    const packaged = spawnSync('tar', ['-xzf', join(out, 'gateway-9.8.7.tgz'), '-O', 'gateway/Chart.yaml'], {
      encoding: 'utf8',
    });
    const released = parseYaml(packaged.stdout) as ChartYaml;
    expect(images(released.annotations['artifacthub.io/images'])).toEqual([
      { name: 'gateway', image: `${values.image.repository}:9.8.7@${digest}` },
    ]);
    expect(released.annotations['artifacthub.io/changes']).toBe(chart.annotations['artifacthub.io/changes']);
  });
});
