/**
 * Resource mode: the configuration is the `spec` of one GatewayConfig object, read through the
 * Kubernetes API (`--config-resource NAMESPACE/NAME`). This module joins the watch of the object
 * (gatewayconfig-watch.ts), the status it writes (status.ts) and the gateway's loading: each new
 * generation is loaded as a changed file would be, and the replica says in the status whether it
 * accepted it and which generation it serves.
 *
 * Faults never cost a request: while the API server cannot be reached, refuses, or the object is
 * gone, the last good configuration keeps serving (and `config_source_up` is 0). A process that has
 * loaded nothing yet serves no traffic: `/readyz` answers 503 and the reason is logged every 10 s.
 */
import { hostname } from 'node:os';
import { formatIssue, type ConfigIssue } from '../config/issues.js';
import { parseConfigValue, sha256Hex, type ConfigResult } from '../config/load.js';
import type { ConfigOrigin } from '../config/origin.js';
import type { ConfigDocument } from '../config/watch.js';
import type { LifecycleState } from '../lifecycle/phase.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import { CallHealth } from './call-health.js';
import { GatewayConfigWatch, type WatchState } from './gatewayconfig-watch.js';
import { loadKubeConfig } from './kubeconfig.js';
import { RESOURCE, type GatewayConfigObject, type ObjectReference } from './resource.js';
import { StatusReporter } from './status.js';
import { truncate } from './status-summary.js';

/** One generation of the object, as the watch delivered it. */
export interface ResourceDocument extends ConfigDocument {
  readonly uid: string;
  readonly generation: number;
  /** sha256 of the spec's JSON: the `config_info` hash. */
  readonly hash: string;
  readonly spec: unknown;
}

export interface ResourceOriginDeps {
  /** The object, as `--config-resource` named it. */
  reference: ObjectReference;
  metrics: GatewayMetrics;
  logger: Logger;
  lifecycle: LifecycleState;
  /** Called when a new generation (or a new object) arrives: the gateway's watcher checks it. */
  onDocument: () => void;
}

/** While nothing is loaded, why is said this often. */
const NOT_READY_LOG_MS = 10_000;
const KEEP_SERVING = 'still serving the last good configuration';

function documentOf(object: GatewayConfigObject): ResourceDocument {
  const hash = sha256Hex(JSON.stringify(object.spec ?? null));
  const { uid, generation } = object.metadata;
  return { version: `${uid}:${generation}:${hash}`, uid, generation, hash, spec: object.spec };
}

/** Validates the spec. */
function parseSpec(document: ResourceDocument): ConfigResult {
  if (document.spec === undefined || document.spec === null)
    return { ok: false, issues: [{ path: '$', message: 'the object has no `spec`' }] };
  return parseConfigValue(document.spec, document.hash);
}

/** Issues with the object's paths (`spec.targets...`), as `kubectl` names fields. */
function describeSpecIssues(issues: readonly ConfigIssue[]): string[] {
  return issues.map((issue) => formatIssue({ ...issue, path: `spec${issue.path.slice(1)}` }));
}

/**
 * The object as the gateway's configuration origin. Throws StartupError without credentials. The
 * pod's name is the downward API's GATEWAY_POD_NAME, else the host name (a pod's own by default).
 */
export function openResourceOrigin(deps: ResourceOriginDeps): ConfigOrigin<ResourceDocument> {
  const { metrics, logger, lifecycle, reference } = deps;
  const where = `gatewayconfig ${reference.namespace}/${reference.name}`;
  const logFields = { resource: `${reference.namespace}/${reference.name}` };
  const pod = process.env.GATEWAY_POD_NAME || hostname();
  const kube = loadKubeConfig('--config-resource');
  logger.info(
    { ...logFields, credentials: kube.from, server: kube.server, pod },
    'configuration from the Kubernetes API',
  );
  // Nothing is watched until the API server has answered.
  metrics.configSourceUp.set(0);
  const health = new CallHealth(logger, logFields);
  const bug = (what: string) => (error: unknown) => logger.error({ ...logFields, err: error }, what);
  const status = new StatusReporter({
    kubeConfig: kube.kubeConfig,
    reference,
    pod,
    health,
    onError: bug('writing the GatewayConfig status failed unexpectedly'),
  });
  let latest: ResourceDocument | undefined;
  let sourceState: WatchState | undefined;
  /** Why the latest generation was refused, while nothing serves. */
  let refused: string | undefined;
  /** The object and generation serving (a recreated object's generations start again at 1). */
  let served: { uid: string; generation: number } | undefined;

  const onState = (state: WatchState): void => {
    metrics.configSourceUp.set(state.state === 'up' ? 1 : 0);
    const before = sourceState;
    sourceState = state;
    const consequence = lifecycle.ready ? KEEP_SERVING : 'not ready until it loads a configuration';
    if (state.state === 'failing') {
      health.failed(state.verb, RESOURCE, state.failure, consequence);
      return;
    }
    if (before?.state === 'failing') health.succeeded(before.verb, RESOURCE);
    if (state.state === 'missing' && before?.state !== 'missing')
      logger.warn(logFields, `${where} does not exist; ${consequence}`);
    else if (state.state === 'up' && before?.state === 'missing')
      logger.info(logFields, `${where} exists again`);
  };

  const watch = new GatewayConfigWatch(kube.kubeConfig, reference, {
    object: (object) => {
      status.observe(object);
      if (object === undefined) {
        latest = undefined;
        return;
      }
      const document = documentOf(object);
      if (document.version === latest?.version) return;
      latest = document;
      deps.onDocument();
    },
    state: onState,
    error: bug('handling a GatewayConfig event failed unexpectedly'),
  });

  const whyNotReady = (): string => {
    if (sourceState === undefined) return 'waiting for the first answer of the Kubernetes API server';
    if (sourceState.state === 'failing') {
      const { verb, failure } = sourceState;
      return failure.kind === 'unreachable'
        ? `the Kubernetes API server cannot be reached (${verb} ${RESOURCE}: ${failure.reason})`
        : `the Kubernetes API answered ${verb} ${RESOURCE} with ${failure.status ?? failure.kind}: ${failure.reason}`;
    }
    if (sourceState.state === 'missing') return `${where} does not exist`;
    return refused ?? `loading ${where}`;
  };
  let notReadyTimer: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;

  return {
    where,
    logFields,
    source: { read: () => Promise.resolve(latest) },
    startup: undefined,
    parse: parseSpec,
    describeIssues: describeSpecIssues,
    describe: (document) => ({ generation: document.generation, hash: document.hash }),
    applied: (document) => {
      refused = undefined;
      served = { uid: document.uid, generation: document.generation };
      status.update({
        observedGeneration: document.generation,
        accepted: true,
        servedGeneration: document.generation,
      });
    },
    rejected: (document, errors) => {
      const message = truncate(errors.join('; '));
      if (!lifecycle.ready) refused = `generation ${document.generation} of ${where} is refused: ${message}`;
      status.update({
        observedGeneration: document.generation,
        accepted: false,
        message,
        ...(served?.uid === document.uid ? { servedGeneration: served.generation } : {}),
      });
    },
    start: () => {
      watch.start();
      status.start();
      notReadyTimer = setInterval(() => {
        if (lifecycle.phase === 'serving' && !lifecycle.ready)
          logger.warn({ ...logFields, reason: whyNotReady() }, 'not ready: no configuration loaded yet');
      }, NOT_READY_LOG_MS);
      notReadyTimer.unref();
    },
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(notReadyTimer);
        watch.stop();
        await status.stop();
      })()),
  };
}
