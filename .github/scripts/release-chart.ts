/**
 * The chart and plain manifests of a release, pinned to the pushed image's digest:
 *
 *   node .github/scripts/release-chart.ts <version> <sha256:digest> <outdir>
 *
 * writes into <outdir>
 *   gateway-<version>.tgz   the chart: Chart.yaml version and appVersion <version>, values.yaml
 *                           image.digest <digest> (image.repository as in charts/gateway/values.yaml,
 *                           the repository the release pushes to; comments kept)
 *   gateway.yaml, gateway-simulator.yaml, monitoring.yaml
 *                           manifests/values/<name>.yaml rendered from that package
 *
 * and checks them: `helm lint --strict` of the package, every container of the manifests running
 * <repository>@<digest>, monitoring.yaml holding only the monitoring objects. Every render uses the
 * options the chart tests and `make chart-golden` use (test/chart/helm.ts: cluster version, API
 * versions, per-manifest --show-only), so what the tests check is what is published. Nothing is
 * pushed: .github/workflows/release.yaml pushes the package, and the ci workflow and the chart
 * tests run this with a made-up digest. Needs helm in .tools/bin (`make helm`) and node_modules.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseDocument, parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import {
  CHART,
  CI_DIR,
  KUBE_VERSION,
  commandLine,
  helm,
  manifestCases,
  manifestOptions,
  parseObjects,
  renderText,
  templateArgs,
  type K8sObject,
} from '../../test/chart/helm.ts';

const USAGE = 'usage: node .github/scripts/release-chart.ts <version> <sha256:digest> <outdir>';

function fail(message: string): never {
  console.error(`release-chart: ${message}`);
  process.exit(1);
}

function run(args: string[]): string {
  const result = helm(args);
  if (result.status !== 0) fail(`${commandLine(args)} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

const [version, digest, outArg, ...extra] = process.argv.slice(2);
if (!version || !digest || !outArg || extra.length > 0) {
  console.error(USAGE);
  process.exit(2);
}
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) fail(`not a semver version: ${version}`);
if (!/^sha256:[a-f0-9]{64}$/.test(digest)) fail(`not an image digest (sha256:<64 hex>): ${digest}`);
const outdir = resolve(outArg);

const values = parseDocument(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
const repository = values.getIn(['image', 'repository']);
if (typeof repository !== 'string' || repository === '')
  fail('charts/gateway/values.yaml has no image.repository');
if (values.getIn(['image', 'tag']))
  fail('charts/gateway/values.yaml sets image.tag: the published chart pins by digest');
const image = `${repository}@${digest}`;

const scratch = mkdtempSync(join(tmpdir(), 'gateway-release-'));
try {
  // A copy of the chart carries the release; the repository's files keep an empty digest.
  const chart = join(scratch, 'gateway');
  cpSync(CHART, chart, { recursive: true });
  const edit = (file: string, change: (doc: ReturnType<typeof parseDocument>) => void): void => {
    const doc = parseDocument(readFileSync(file, 'utf8'));
    change(doc);
    writeFileSync(file, doc.toString());
  };
  edit(join(chart, 'Chart.yaml'), (doc) => {
    doc.set('version', version);
    doc.set('appVersion', version);
    // Artifact Hub lists (and scans) the images of the annotation: the one the release pushed.
    const annotation = ['annotations', 'artifacthub.io/images'];
    const listed = doc.getIn(annotation);
    if (typeof listed === 'string') {
      const entries = (parseYaml(listed) ?? []) as { name?: string; image?: string }[];
      const ours = entries.filter((e) => e.image?.split('@')[0]?.replace(/:[^:/]+$/, '') === repository);
      if (ours.length === 0) fail(`Chart.yaml ${annotation[1]} lists no image of ${repository}`);
      for (const entry of ours) entry.image = `${repository}:${version}@${digest}`;
      doc.setIn(annotation, stringifyYaml(entries));
    }
  });
  edit(join(chart, 'values.yaml'), (doc) => doc.setIn(['image', 'digest'], digest));

  mkdirSync(outdir, { recursive: true });
  run(['package', chart, '--destination', outdir]);
  const packaged = join(outdir, `gateway-${version}.tgz`);
  if (!existsSync(packaged)) fail(`helm package wrote no ${basename(packaged)}`);
  run([
    'lint',
    '--strict',
    packaged,
    '--values',
    join(CI_DIR, 'default-values.yaml'),
    '--kube-version',
    KUBE_VERSION,
  ]);

  const images = (objects: K8sObject[]): string[] =>
    objects.flatMap((o) => {
      const spec = o.spec as { template?: { spec?: PodSpec } } & PodSpec;
      const pod = o.kind === 'Pod' ? spec : spec?.template?.spec;
      return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].map((c) => c.image);
    });
  interface PodSpec {
    containers?: { image: string }[];
    initContainers?: { image: string }[];
  }

  for (const { name, file } of manifestCases()) {
    const options = manifestOptions(name, file, packaged);
    const text = renderText(options);
    const objects = parseObjects(text);
    const refs = images(objects);
    if (name === 'monitoring') {
      const stray = objects.filter(
        (o) => !o.apiVersion.startsWith('monitoring.coreos.com/') && !o.metadata.name.endsWith('-dashboards'),
      );
      if (stray.length > 0 || refs.length > 0)
        fail(`monitoring.yaml holds ${stray.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
    } else if (refs.length === 0 || refs.some((ref) => ref !== image)) {
      fail(`${name}.yaml runs ${[...new Set(refs)].join(', ') || 'no image'}, not ${image}`);
    }
    const args = templateArgs(options).map((a) => (a === packaged ? `gateway-${version}.tgz` : a));
    const header = [`# gateway ${version}: image ${image}`, `# ${commandLine(args)}`, ''].join('\n');
    writeFileSync(join(outdir, `${name}.yaml`), header + text);
  }
  console.log(
    `release-chart: ${basename(packaged)} and ${manifestCases().length} manifests in ${outdir}, image ${image}`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
