/**
 * Rendering the chart with helm v3, shared by the chart tests, by `make chart-golden`
 * (test/chart/regenerate.ts) and by the release (.github/scripts/release-chart.ts): the one
 * definition of the cluster version, the API versions and the per-manifest options every render
 * uses. Node runs these files directly, so the imports here name .ts files.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CHART = join(ROOT, 'charts/gateway');
const PINNED_HELM = join(ROOT, '.tools/bin/helm');
/**
 * The helm `make` chose (HELM_BIN: the first helm v3 on PATH, else the pinned one it builds into
 * .tools/bin); run without make, the pinned one when it is built, else helm on PATH.
 */
export const HELM = process.env.HELM_BIN || (existsSync(PINNED_HELM) ? PINNED_HELM : 'helm');
export const CI_DIR = join(CHART, 'ci');
export const GOLDEN_DIR = join(CHART, 'tests/golden');
export const MANIFEST_VALUES_DIR = join(ROOT, 'manifests/values');
export const MANIFEST_RENDERED_DIR = join(ROOT, 'manifests/rendered');

/** Renders pretend to target this cluster version (helm template's own default, 1.20, is below kubeVersion). */
export const KUBE_VERSION = '1.34.0';
/** The Prometheus Operator kinds a cluster with its CRDs serves. */
export const MONITORING_API_VERSIONS = [
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PodMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
];
export const RELEASE = 'gateway';
export const NAMESPACE = 'llm-gateway';

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

let helmFound = false;
export function requireHelm(): void {
  if (helmFound) return;
  const probe = spawnSync(HELM, ['version', '--short'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    const where = HELM === 'helm' ? 'on PATH' : `at ${HELM}`;
    throw new Error(`no helm ${where}: install helm v3, or run \`make helm\` to build the pinned one`);
  }
  if (!probe.stdout.startsWith('v3.')) {
    throw new Error(`${HELM} is helm ${probe.stdout.trim()}: the chart tests need helm v3`);
  }
  helmFound = true;
}

/** No cluster, no repositories: keep helm away from the user's kubeconfig and caches. */
const HELM_ENV = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? ROOT,
  KUBECONFIG: '/dev/null',
  HELM_CACHE_HOME: join(ROOT, 'test/.tmp/helm/cache'),
  HELM_CONFIG_HOME: join(ROOT, 'test/.tmp/helm/config'),
  HELM_DATA_HOME: join(ROOT, 'test/.tmp/helm/data'),
};

export function helm(args: string[]): HelmResult {
  requireHelm();
  const result = spawnSync(HELM, args, { cwd: ROOT, encoding: 'utf8', env: HELM_ENV });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** helm without blocking, so independent runs overlap (a run's time is mostly process start-up). */
export function helmAsync(args: string[]): Promise<HelmResult> {
  requireHelm();
  return new Promise((resolve, reject) => {
    const child = spawn(HELM, args, { cwd: ROOT, env: HELM_ENV });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status: status ?? -1, stdout, stderr }));
  });
}

export interface TemplateOptions {
  /** The chart directory or packaged .tgz (default: charts/gateway). */
  chart?: string;
  valuesFiles?: string[];
  /**
   * Values set on top of the files, as a nested object. Passed as one `--set-json path=leaf` per
   * leaf: helm replaces (does not merge) a map given whole to --set-json.
   */
  setJson?: Record<string, unknown>;
  apiVersions?: string[];
  /** The cluster version the render pretends to target (default KUBE_VERSION). */
  kubeVersion?: string;
  skipTests?: boolean;
  showOnly?: string[];
}

export function templateArgs(options: TemplateOptions = {}): string[] {
  const args = [
    'template',
    RELEASE,
    options.chart ?? CHART,
    '--namespace',
    NAMESPACE,
    '--kube-version',
    options.kubeVersion ?? KUBE_VERSION,
  ];
  for (const file of options.valuesFiles ?? []) args.push('--values', file);
  for (const [path, value] of leaves(options.setJson ?? {}))
    args.push('--set-json', `${path}=${JSON.stringify(value)}`);
  for (const api of options.apiVersions ?? MONITORING_API_VERSIONS) args.push('--api-versions', api);
  if (options.skipTests) args.push('--skip-tests');
  for (const template of options.showOnly ?? []) args.push('--show-only', template);
  return args;
}

/**
 * The plain manifests (manifests/values/<name>.yaml rendered into manifests/rendered/<name>.yaml,
 * and into the release's assets): no helm test hook, and monitoring.yaml only the monitoring
 * objects, to apply where the Prometheus Operator CRDs exist.
 */
export const MANIFEST_SHOW_ONLY: Record<string, string[]> = {
  monitoring: [
    'templates/servicemonitor.yaml',
    'templates/prometheusrule.yaml',
    'templates/dashboards-configmap.yaml',
  ],
};

export const manifestOptions = (name: string, valuesFile: string, chart?: string): TemplateOptions => ({
  ...(chart === undefined ? {} : { chart }),
  valuesFiles: [valuesFile],
  skipTests: true,
  showOnly: MANIFEST_SHOW_ONLY[name] ?? [],
});

/** `helm <args>` as a reader would type it: paths inside the repository relative to its root. */
export function commandLine(args: string[]): string {
  return ['helm', ...args.map((a) => (a.startsWith(ROOT) ? relative(ROOT, a) || '.' : a))].join(' ');
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** [dotted path, value] for every leaf; arrays and empty objects are leaves. */
export function leaves(values: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(values).flatMap(([key, value]): [string, unknown][] =>
    isPlainObject(value) && Object.keys(value).length > 0
      ? leaves(value, `${prefix}${key}.`)
      : [[`${prefix}${key}`, value]],
  );
}

export function template(options: TemplateOptions = {}): HelmResult {
  return helm(templateArgs(options));
}

export function templateAsync(options: TemplateOptions = {}): Promise<HelmResult> {
  return helmAsync(templateArgs(options));
}

/** Renders and fails with helm's message when rendering fails. */
export function renderText(options: TemplateOptions = {}): string {
  const result = template(options);
  if (result.status !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return result.stdout;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}

export function parseObjects(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if ('errors' in doc && doc.errors.length > 0) throw new Error(`rendered YAML: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    objects.push(value as K8sObject);
  }
  return objects;
}

export function render(options: TemplateOptions = {}): K8sObject[] {
  return parseObjects(renderText(options));
}

/** The chart's CI scenarios: charts/gateway/ci/<name>-values.yaml. */
export function ciCases(): { name: string; file: string }[] {
  return readdirSync(CI_DIR)
    .filter((f) => f.endsWith('-values.yaml'))
    .sort()
    .map((f) => ({ name: f.replace(/-values\.yaml$/, ''), file: join(CI_DIR, f) }));
}

/** The value sets manifests/rendered/ is rendered from: manifests/values/<name>.yaml. */
export function manifestCases(): { name: string; file: string }[] {
  return readdirSync(MANIFEST_VALUES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({ name: f.replace(/\.yaml$/, ''), file: join(MANIFEST_VALUES_DIR, f) }));
}

export function findObject(objects: K8sObject[], kind: string, name?: string): K8sObject | undefined {
  return objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
}

/**
 * NOTES.txt as rendered for a scenario. `helm template` never renders NOTES.txt and `helm install
 * --dry-run` needs a cluster, so a scratch copy of the chart renders it into a ConfigMap.
 */
export function renderNotes(valuesFiles: string[]): string {
  const scratch = mkdtempSync(join(tmpdir(), 'gateway-notes-'));
  try {
    const copy = join(scratch, 'gateway');
    cpSync(CHART, copy, { recursive: true });
    const notes = readFileSync(join(copy, 'templates/NOTES.txt'), 'utf8');
    rmSync(join(copy, 'templates/NOTES.txt'));
    writeFileSync(join(copy, 'templates/_notes.tpl'), `{{- define "test.notes" -}}\n${notes}\n{{- end }}\n`);
    writeFileSync(
      join(copy, 'templates/notes.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n    {{- include "test.notes" . | nindent 4 }}\n',
    );
    const args = templateArgs({ valuesFiles, showOnly: ['templates/notes.yaml'] });
    args[2] = copy;
    const result = helm(args);
    if (result.status !== 0) throw new Error(`rendering NOTES.txt failed:\n${result.stderr}`);
    const [cm] = parseObjects(result.stdout);
    return (cm as unknown as { data: { notes: string } }).data.notes;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
