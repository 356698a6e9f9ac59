/**
 * Release plumbing that can be checked offline: one version everywhere, the changelog section the
 * release workflow needs, the workflows' essential steps, where the release pushes, the release's
 * chart packaging and manifest rendering run dry (a made-up digest, nothing pushed), the docs'
 * arithmetic matching the chart, and the kind e2e announcing its skip instead of passing silently.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  CHART,
  CI_DIR,
  KUBE_VERSION,
  ROOT,
  findObject,
  helm,
  parseObjects,
  render,
  type K8sObject,
} from './helm.ts';
import { validateObject } from './k8s-validate.ts';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const version = (JSON.parse(read('package.json')) as { version: string }).version;

interface Workflow {
  on: Record<string, unknown>;
  jobs: Record<
    string,
    { steps: { name?: string; id?: string; uses?: string; run?: string; with?: Record<string, unknown> }[] }
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

  it('reads where to push from the chart and checks it can push there before building', () => {
    const names = steps(release).map((s) => s.name ?? s.uses ?? '');
    const target = steps(release).findIndex((s) =>
      s.run?.includes('release-target.ts "$GITHUB_REPOSITORY_OWNER"'),
    );
    const build = names.findIndex((n) => n.includes('Build and push'));
    expect(target).toBeGreaterThanOrEqual(0);
    expect(target).toBeLessThan(build);
    expect(steps(release)[target]!.id).toBe('version');
    const push = steps(release)[build]!;
    expect(String(push.with?.tags)).toContain(
      '${{ steps.version.outputs.image }}:${{ steps.version.outputs.version }}',
    );
    expect(scripts(release)).not.toMatch(/ghcr\.io\/\$owner|GITHUB_REPOSITORY_OWNER.*gateway/);
  });

  it('renders the chart and manifests only through release-chart.ts: dry before pushing, then by the digest', () => {
    const all = steps(release);
    const names = all.map((s) => s.name ?? s.uses ?? '');
    const build = names.findIndex((n) => n.includes('Build and push'));
    const calls = all
      .map((s, i) => ({ i, run: s.run ?? '' }))
      .filter(({ run }) => run.includes('node .github/scripts/release-chart.ts'));
    expect(calls).toHaveLength(2);
    expect(calls[0]!.i).toBeLessThan(build);
    expect(calls[0]!.run).toMatch(/"sha256:\$\(.*sha256sum/);
    expect(calls[1]!.i).toBeGreaterThan(build);
    expect(calls[1]!.run).toContain('"${{ steps.build.outputs.digest }}" dist/release');
    // No second definition of the render options: no helm template, package or lint here.
    expect(scripts(release)).not.toMatch(/helm (template|package|lint)/);
    expect(scripts(release)).toContain(
      'helm push "dist/release/gateway-${{ steps.version.outputs.version }}.tgz" "${{ steps.version.outputs.charts }}"',
    );
  });

  it('puts the digest in the notes and attaches the chart and the manifests', () => {
    const run = scripts(release);
    expect(run).toMatch(/echo "Digest: .*\$digest/);
    expect(run).toContain('gh release create');
    for (const asset of ['gateway-*.tgz', 'gateway.yaml', 'gateway-simulator.yaml', 'monitoring.yaml'])
      expect(run).toContain(`dist/release/${asset}`);
  });
});

describe('release-target.ts <owner>', () => {
  const target = (owner: string) =>
    spawnSync(process.execPath, [join(ROOT, '.github/scripts/release-target.ts'), owner], {
      encoding: 'utf8',
    });
  const repository = (
    parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { image: { repository: string } }
  ).image.repository;
  const owner = /^ghcr\.io\/([^/]+)\//.exec(repository)?.[1];

  it('takes the image repository from the chart and puts the chart next to it', () => {
    expect(owner).toBeDefined();
    const result = target(owner!.toUpperCase());
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe(`image=${repository}\ncharts=oci://ghcr.io/${owner}/charts\n`);
  });

  it('fails when the workflow could not push to that repository', () => {
    const result = target('a-fork');
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`image.repository in charts/gateway/values.yaml is "${repository}"`);
    expect(result.stderr).toContain('Set image.repository to ghcr.io/a-fork/gateway');
  });
});

describe('release-chart.ts, dry run (made-up digest, nothing pushed)', () => {
  const script = join(ROOT, '.github/scripts/release-chart.ts');
  const out = mkdtempSync(join(tmpdir(), 'gateway-release-test-'));
  const digest = `sha256:${createHash('sha256').update('dry run').digest('hex')}`;
  const repository = (
    parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { image: { repository: string } }
  ).image.repository;
  const image = `${repository}@${digest}`;
  const tgz = join(out, `gateway-${version}.tgz`);
  let result: SpawnSyncReturns<string>;
  const manifest = (name: string): K8sObject[] =>
    parseObjects(readFileSync(join(out, `${name}.yaml`), 'utf8'));
  const images = (objects: K8sObject[]): string[] =>
    objects.flatMap((o) => {
      const spec = o.spec as { template?: { spec?: PodSpec } } & PodSpec;
      const pod = o.kind === 'Pod' ? spec : spec?.template?.spec;
      return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].map((c) => c.image);
    });
  interface PodSpec {
    containers?: { name: string; image: string }[];
    initContainers?: { name: string; image: string }[];
  }

  beforeAll(() => {
    result = spawnSync(process.execPath, [script, version, digest, out], { cwd: ROOT, encoding: 'utf8' });
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('succeeds and writes the package and the three manifests', () => {
    expect(result.status, result.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(
      [`gateway-${version}.tgz`, 'gateway-simulator.yaml', 'gateway.yaml', 'monitoring.yaml'].sort(),
    );
  });

  it('packages the chart with the version, the appVersion and the digest as its default', () => {
    const chart = parseYaml(helm(['show', 'chart', tgz]).stdout) as { version: string; appVersion: string };
    expect(chart).toMatchObject({ version, appVersion: version });
    const values = parseYaml(helm(['show', 'values', tgz]).stdout) as {
      image: { repository: string; digest: string; tag: string };
    };
    expect(values.image).toMatchObject({ repository, digest, tag: '' });
    // The repository's own files keep an empty digest.
    expect(readFileSync(join(CHART, 'values.yaml'), 'utf8')).toMatch(/^ {2}digest: ''$/m);
  });

  it('the package passes helm lint --strict and carries no test data', () => {
    const lint = helm([
      'lint',
      '--strict',
      tgz,
      '--values',
      join(CI_DIR, 'default-values.yaml'),
      '--kube-version',
      KUBE_VERSION,
    ]);
    expect(lint.stderr + lint.stdout).toContain('0 chart(s) failed');
    expect(lint.status).toBe(0);
    const files = spawnSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).stdout.split('\n');
    expect(files).toContain('gateway/values.schema.json');
    expect(files).toContain('gateway/templates/tests/test-connection.yaml');
    expect(files.filter((f) => f.includes('tests/golden') || f.includes('tests/promtool'))).toEqual([]);
  });

  it('gateway.yaml and gateway-simulator.yaml run every container by that digest', () => {
    for (const name of ['gateway', 'gateway-simulator']) {
      const refs = images(manifest(name));
      expect(refs.length, name).toBeGreaterThan(0);
      expect(new Set(refs), name).toEqual(new Set([image]));
    }
    expect(images(manifest('gateway-simulator')).length).toBe(2); // gateway and the simulator sidecar
  });

  it('gateway.yaml and gateway-simulator.yaml hold the workload, valid, with no hook and no monitoring object', () => {
    const kinds = (name: string) =>
      manifest(name)
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort();
    expect(kinds('gateway')).toEqual(
      [
        'Deployment/gateway',
        'PodDisruptionBudget/gateway',
        'Service/gateway',
        'Service/gateway-admin',
        'ServiceAccount/gateway',
      ].sort(),
    );
    expect(kinds('gateway-simulator')).toEqual(
      [
        'ConfigMap/gateway',
        'Deployment/gateway',
        'Service/gateway',
        'Service/gateway-admin',
        'ServiceAccount/gateway',
      ].sort(),
    );
    for (const name of ['gateway', 'gateway-simulator']) {
      for (const o of manifest(name)) {
        expect(validateObject(o), `${name}: ${o.kind}/${o.metadata.name}`).toEqual([]);
        expect(o.metadata.namespace).toBe('llm-gateway');
        expect(o.metadata.annotations?.['helm.sh/hook']).toBeUndefined();
        expect(o.apiVersion.startsWith('monitoring.coreos.com/')).toBe(false);
      }
    }
  });

  it('monitoring.yaml holds only the monitoring.coreos.com objects and the dashboard ConfigMap', () => {
    const objects = manifest('monitoring');
    expect(objects.map((o) => `${o.apiVersion}/${o.kind}`).sort()).toEqual([
      'monitoring.coreos.com/v1/PrometheusRule',
      'monitoring.coreos.com/v1/ServiceMonitor',
      'v1/ConfigMap',
    ]);
    expect(findObject(objects, 'ConfigMap')!.metadata.labels?.grafana_dashboard).toBe('1');
    expect(images(objects)).toEqual([]);
    for (const o of objects) expect(validateObject(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
  });

  it('renders with the options of manifests/rendered: the same objects but for the image', () => {
    for (const name of ['gateway', 'gateway-simulator', 'monitoring']) {
      const committed = parseObjects(readFileSync(join(ROOT, 'manifests/rendered', `${name}.yaml`), 'utf8'));
      const released = JSON.stringify(manifest(name)).replaceAll(image, `${repository}:${version}`);
      expect(JSON.parse(released), name).toEqual(committed);
    }
  });

  it('refuses a malformed digest or version, and missing arguments', () => {
    const bad = spawnSync(process.execPath, [script, version, 'sha256:abc', out], { encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('not an image digest');
    const badVersion = spawnSync(process.execPath, [script, 'v1', digest, out], { encoding: 'utf8' });
    expect(badVersion.stderr).toContain('not a semver version');
    const missing = spawnSync(process.execPath, [script, version], { encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(
      'usage: node .github/scripts/release-chart.ts <version> <sha256:digest> <outdir>',
    );
  });
});

describe('ci workflow', () => {
  const ci = workflow('ci.yaml');

  it('runs on pull requests and pushes to main', () => {
    expect(ci.on).toMatchObject({ pull_request: null, push: { branches: ['main'] } });
  });

  it('runs make test and the release chart script dry, with go for helm and the schemas', () => {
    const run = scripts(ci);
    expect(steps(ci).some((s) => s.uses?.startsWith('actions/setup-go'))).toBe(true);
    expect(run).toMatch(/^make test$/m);
    expect(run).toMatch(
      /node \.github\/scripts\/release-chart\.ts "\$version" \\\n\s+"sha256:\$\(.*sha256sum/,
    );
  });
});

describe('e2e workflow', () => {
  it('runs kind on the oldest and the newest supported Kubernetes, node images pinned by digest', () => {
    const job = (
      parseYaml(read('.github/workflows/e2e.yaml')) as {
        jobs: Record<
          string,
          {
            strategy?: { matrix?: { include?: Record<string, string>[] } };
            env?: Record<string, string>;
            steps: { run?: string }[];
          }
        >;
      }
    ).jobs.kind!;
    const include = job.strategy?.matrix?.include ?? [];
    const minimum = /^kubeVersion: '>=(\d+\.\d+)\.0-0'$/m.exec(
      readFileSync(join(CHART, 'Chart.yaml'), 'utf8'),
    )?.[1];
    expect(include.map((entry) => entry.kubernetes)).toEqual([minimum, KUBE_VERSION.replace(/\.\d+$/, '')]);
    for (const entry of include) {
      expect(entry['node-image']).toMatch(
        new RegExp(`^kindest/node:v${entry.kubernetes!.replace('.', '\\.')}\\.\\d+@sha256:[a-f0-9]{64}$`),
      );
      expect(entry.kind).toMatch(/^v\d+\.\d+\.\d+$/);
    }
    expect(job.env?.KIND_NODE_IMAGE).toBe('${{ matrix.node-image }}');
    expect(job.steps.map((s) => s.run ?? '').join('\n')).toContain(
      'go install sigs.k8s.io/kind@${{ matrix.kind }}',
    );
  });

  it('runs the real-cluster suite on kind with skipping turned into failure', () => {
    const e2e = workflow('e2e.yaml');
    const suite = steps(e2e).find((s) => s.run?.trim() === 'make e2e-k8s') as
      { env?: Record<string, string> } | undefined;
    expect(suite).toBeDefined();
    expect(suite!.env).toMatchObject({ E2E_K8S_REQUIRED: '1', E2E_K8S_PROVIDER: 'kind' });
    expect(scripts(e2e)).toContain('go install sigs.k8s.io/kind@');
  });

  it('the real-cluster values render into valid objects with the sidecar, its models and the image by digest', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const objects = render({
      valuesFiles: [join(ROOT, 'e2e/k8s/values.yaml')],
      setJson: { image: { repository: 'docker.io/library/llm-gateway', digest } },
    });
    for (const o of objects) expect(validateObject(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    const models = findObject(objects, 'ConfigMap', 'gateway-sim-models')!.data as Record<string, string>;
    expect(Object.keys(models).sort()).toEqual(['fast.toml', 'long.toml', 'medium.toml']);
    const deployment = findObject(objects, 'Deployment')!;
    expect(JSON.stringify(deployment.spec)).toContain(`"image":"docker.io/library/llm-gateway@${digest}"`);
  });
});

describe('make e2e-k8s without a cluster', () => {
  // A KUBECONFIG whose API server does not answer: the suite must say so, never pass silently.
  const dir = mkdtempSync(join(tmpdir(), 'e2e-k8s-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: none, user: {}}]',
      'contexts: [{name: none, context: {cluster: none, user: none}}]',
      'current-context: none',
    ].join('\n'),
  );
  const runSuite = (required: string) =>
    spawnSync('bash', [join(ROOT, 'e2e/k8s/run.sh')], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, KUBECONFIG: kubeconfig, E2E_K8S_REQUIRED: required, E2E_K8S_PROVIDER: '' },
    });

  it('says why and skips', () => {
    const skipped = runSuite('');
    expect(skipped.stdout).toMatch(
      /no Kubernetes cluster is possible here: .*(does not answer|kubectl is not on PATH)/,
    );
    expect(skipped.stdout).toMatch(/^SKIPPED: the real-cluster suite did not run/m);
    expect(skipped.status).toBe(0);
  });

  it('fails with E2E_K8S_REQUIRED=1', () => {
    const required = runSuite('1');
    expect(required.stderr).toContain('E2E_K8S_REQUIRED=1: the real-cluster suite could not run');
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
