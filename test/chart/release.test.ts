/**
 * Release plumbing that can be checked offline: one version everywhere, the changelog section the
 * release workflow needs, the workflows' essential steps, the docs' arithmetic matching the chart,
 * and the kind e2e announcing its skip instead of passing silently.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART, ROOT, findObject, render } from './helm.ts';
import { validateObject } from './k8s-validate.ts';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const version = (JSON.parse(read('package.json')) as { version: string }).version;

interface Workflow {
  on: Record<string, unknown>;
  jobs: Record<
    string,
    { steps: { name?: string; uses?: string; run?: string; with?: Record<string, unknown> }[] }
  >;
}
const workflow = (name: string): Workflow => parseYaml(read(`.github/workflows/${name}`)) as Workflow;
const steps = (w: Workflow) => Object.values(w.jobs).flatMap((j) => j.steps);
const scripts = (w: Workflow): string =>
  steps(w)
    .map((s) => s.run ?? '')
    .join('\n');

describe('versions', () => {
  it('package.json is semver and the chart follows it', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
      version: string;
      appVersion: string;
    };
    expect(chart.version).toBe(version);
    expect(chart.appVersion).toBe(version);
  });

  it('both programs print it', () => {
    for (const bin of ['bin/gateway.js', 'bin/sim.js']) {
      const result = spawnSync(process.execPath, [join(ROOT, bin), '--version'], { encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout.trim(), bin).toBe(version);
    }
  });

  it('CHANGELOG.md has an Unreleased section and one for the current version', () => {
    const changelog = read('CHANGELOG.md');
    expect(changelog).toMatch(/^## \[Unreleased\]$/m);
    expect(changelog).toMatch(new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\]`, 'm'));
  });
});

describe('release workflow', () => {
  const release = workflow('release.yaml');

  it('runs on version tags', () => {
    expect(release.on).toEqual({ push: { tags: ['v[0-9]+.[0-9]+.[0-9]+*'] } });
  });

  it('tests, checks the base-image pins and lints the Dockerfile before building', () => {
    const names = steps(release).map((s) => s.name ?? s.uses ?? '');
    const index = (needle: string): number => names.findIndex((n) => n.includes(needle));
    const build = index('Build and push');
    expect(build).toBeGreaterThan(0);
    for (const before of ['Tests', 'Base images are pinned', 'hadolint']) {
      expect(index(before), before).toBeGreaterThanOrEqual(0);
      expect(index(before), before).toBeLessThan(build);
    }
    expect(scripts(release)).toContain('bash .ci/run');
    expect(scripts(release)).toContain('.github/scripts/pin-base-images.sh --check');
  });

  it('builds for linux/amd64 and linux/arm64 and pushes', () => {
    const build = steps(release).find((s) => s.uses?.startsWith('docker/build-push-action'))!;
    expect(build.with?.platforms).toBe('linux/amd64,linux/arm64');
    expect(build.with?.push).toBe(true);
  });

  it('pins the published chart to the pushed digest and puts the digest in the notes', () => {
    const run = scripts(release);
    expect(run).toContain('set-chart-release.mjs');
    expect(run).toContain('steps.build.outputs.digest');
    expect(run).toMatch(/helm package charts\/gateway/);
    expect(run).toMatch(/echo "Digest: .*\$digest/);
    expect(run).toContain('gh release create');
  });
});

describe('e2e workflow', () => {
  it('runs the kind e2e with skipping turned into failure', () => {
    const e2e = workflow('e2e.yaml');
    const kind = steps(e2e).find((s) => s.run?.includes('make e2e-kind'));
    expect(kind).toBeDefined();
    expect((kind as { env?: Record<string, string> }).env?.E2E_KIND_REQUIRED).toBe('1');
    expect(scripts(e2e)).toContain('go install sigs.k8s.io/kind@');
  });

  it('the kind e2e values render into valid objects with the sidecar and its models', () => {
    const objects = render({ valuesFiles: [join(ROOT, 'e2e/kind/values.yaml')] });
    for (const o of objects) expect(validateObject(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    const models = findObject(objects, 'ConfigMap', 'gateway-sim-models')!.data as Record<string, string>;
    expect(Object.keys(models).sort()).toEqual(['fast.toml', 'long.toml', 'medium.toml']);
    const deployment = findObject(objects, 'Deployment')!;
    expect(JSON.stringify(deployment.spec)).toContain('"image":"llm-gateway:e2e"');
  });

  it('make e2e-kind says SKIPPED where there is no Docker engine or kind, and fails if required', (ctx) => {
    const docker = spawnSync('docker', ['info'], { encoding: 'utf8' });
    const kind = spawnSync('kind', ['version'], { encoding: 'utf8' });
    if (docker.status === 0 && kind.status === 0)
      return ctx.skip('Docker and kind are available: run make e2e-kind');
    const skipped = spawnSync('bash', [join(ROOT, 'e2e/kind/run.sh')], {
      encoding: 'utf8',
      env: { ...process.env, E2E_KIND_REQUIRED: '' },
    });
    expect(skipped.status).toBe(0);
    expect(skipped.stdout).toMatch(
      /^SKIPPED: kind e2e needs a Docker engine and kind; it runs in \.github\/workflows\/e2e\.yaml \(.+\)$/m,
    );
    const required = spawnSync('bash', [join(ROOT, 'e2e/kind/run.sh')], {
      encoding: 'utf8',
      env: { ...process.env, E2E_KIND_REQUIRED: '1' },
    });
    expect(required.status).toBe(1);
  });
});

describe('docs/operations.md', () => {
  const ops = read('docs/operations.md');

  it('gives the grace-period arithmetic with the chart defaults', () => {
    const values = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
      preStopSleepSeconds: number;
      terminationGraceMarginSeconds: number;
      gateway: { shutdownDelaySecs: number; shutdownTimeoutSecs: number };
    };
    const { preStopSleepSeconds: pre, terminationGraceMarginSeconds: margin } = values;
    const { shutdownDelaySecs: delay, shutdownTimeoutSecs: drain } = values.gateway;
    const total = pre + delay + drain + 5 + margin;
    expect(total).toBe(330);
    expect(ops).toMatch(
      new RegExp(`${total} =\\s+${pre} \\+\\s+${delay} \\+\\s+${drain} \\+ 5 \\+\\s+${margin}`),
    );
  });

  it('covers pinning by digest, refreshing base images and replacing a gateway without draining', () => {
    expect(ops).toContain('## Kubernetes');
    expect(ops).toContain('### Images: pin by digest');
    expect(ops).toContain('crane digest');
    expect(ops).toContain('docker buildx imagetools inspect');
    expect(ops).toContain('must not be replaced by a plain rolling update while streams');
  });
});
