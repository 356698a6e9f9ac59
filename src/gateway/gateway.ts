import { compileRuntime, type CompiledTable } from './runtime/compile.js';
import { ConfigLoadError, openFileOrigin } from './config/file-origin.js';
import type { ConfigOrigin } from './config/origin.js';
import { resolveLoaded, type SecretReferences } from './config/secrets.js';
import { ConfigWatcher, type ConfigChange, type ConfigDocument } from './config/watch.js';
import { AimdMetrics } from './balance/aimd-metrics.js';
import { AimdRegistry } from './balance/aimd-registry.js';
import { OutlierMetrics, OutlierRegistry } from './balance/outliers.js';
import { PickerMetrics, PickerRegistry } from './balance/pool-picker.js';
import { createAdminServer } from './http/admin-server.js';
import { ConnectionTracker } from './lifecycle/connection-tracker.js';
import { listenOn } from './http/listen.js';
import { createProxyServer } from './http/proxy-server.js';
import { UpstreamClient } from './http/upstream.js';
import { LifecycleState } from './lifecycle/phase.js';
import { runShutdown } from './lifecycle/shutdown.js';
import type { BatchLimiterFactory } from './limits/batch.js';
import type { SharedLimitStore } from './limits/redis/store.js';
import type { ConfigResourceReference, GatewayOptions } from './options.js';
import { createProxyHandler } from './pipeline/handler.js';
import { createLogger, type Logger } from './telemetry/logger.js';
import { createAccessLog } from './telemetry/access-log.js';
import { shutdownTracing } from './telemetry/tracing.js';
import { GatewayMetrics, SharedStateMetrics } from './telemetry/metrics.js';

export { ConfigLoadError } from './config/file-origin.js';

export interface GatewayDeps {
  logger?: Logger;
  /**
   * An embedding program's batch limiter (spec 8: the standalone binary loads the batch cap but
   * enforces it only when a limiter is plugged in or `--enforce-batch-inflight` is given).
   */
  batchLimiter?: BatchLimiterFactory;
}

export interface Gateway {
  readonly options: GatewayOptions;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly lifecycle: LifecycleState;
  /**
   * The table new requests use; a request keeps the table it started with. Undefined before the
   * first configuration loaded (resource mode).
   */
  readonly runtime: CompiledTable | undefined;
  /** Binds both listeners; resolves with the bound ports. */
  listen(): Promise<{ port: number; adminPort: number | undefined }>;
  /** Re-reads the configuration now (the watcher does this by itself). */
  reloadNow(): Promise<void>;
  /** Runs the shutdown sequence of spec 3.2; resolves with the exit code. */
  shutdown(reason: string): Promise<number>;
}

/**
 * Builds a gateway from options: loads and compiles the configuration (throws ConfigLoadError when it
 * is invalid), creates the proxy and admin servers, and arms hot reload. Nothing listens until
 * `listen()`; signal handling belongs to the caller (the CLI), so an embedding program keeps control.
 */
export async function createGateway(options: GatewayOptions, deps: GatewayDeps = {}): Promise<Gateway> {
  const logger = deps.logger ?? createLogger();
  const metrics = new GatewayMetrics(options.metricsPrefix);
  const lifecycle = new LifecycleState();

  const upstream = new UpstreamClient();
  const aimd = new AimdRegistry({ metrics: new AimdMetrics(metrics.registry, metrics.prefix) });
  const outliers = new OutlierRegistry({
    metrics: new OutlierMetrics(metrics.registry, metrics.prefix),
    logger,
  });
  const pickers = new PickerRegistry(new PickerMetrics(metrics.registry, metrics.prefix));
  const compileOptions = {
    enforceBatchInflight: options.enforceBatchInflight,
    batchLimiter: deps.batchLimiter,
    aimd,
    outliers,
    pickers,
    sharedLimits: undefined as SharedLimitStore | undefined,
  };
  const origin: ConfigOrigin =
    options.configResource === undefined
      ? await openFileOrigin(options.targets!, metrics, logger)
      : await loadResourceOrigin(options.configResource, metrics, logger, lifecycle, () => {
          void watcher.check('resource');
        });
  const sharedLimits = options.sharedState ? await openSharedLimits(options, metrics, logger) : undefined;
  compileOptions.sharedLimits = sharedLimits;
  let runtime: CompiledTable | undefined;
  const startup = origin.startup;
  if (startup === undefined) lifecycle.awaitConfiguration();
  else {
    const compiled = compileRuntime(startup.config, startup.hash, undefined, compileOptions);
    if (!compiled.ok) {
      await sharedLimits?.close();
      throw new ConfigLoadError(origin.where, compiled.issues);
    }
    runtime = compiled.table;
    outliers.commit();
    pickers.commit();
    metrics.configInfo.set({ hash: startup.hash }, 1);
    metrics.configLastReloadSuccess.set(Date.now() / 1000);
    metrics.configLastReloadSuccessful.set(1);
    logger.info(
      {
        ...origin.logFields,
        hash: startup.hash,
        aliases: runtime.routes.size,
        strictMode: runtime.strictMode,
        ...referencesLogged(startup.references),
      },
      'configuration loaded',
    );
  }

  /**
   * Loads a changed configuration (its document, or only a key file it references) and swaps the
   * table, or rejects it and keeps the last good one. Resolves with the key files the load read, for
   * the watcher. The hash metric covers the document alone: a key rotation shows as a reload.
   */
  const applyChange = async (
    change: ConfigChange<ConfigDocument>,
  ): Promise<ReadonlyMap<string, string> | undefined> => {
    const loaded = await resolveLoaded(origin.parse(change.document));
    const compiledNext = loaded.ok
      ? compileRuntime(loaded.config, loaded.hash, runtime, compileOptions)
      : loaded;
    if (!compiledNext.ok) {
      metrics.configReloads.inc({ result: 'failure' });
      metrics.configLastReloadSuccessful.set(0);
      const errors = origin.describeIssues(compiledNext.issues);
      origin.rejected(change.document, errors);
      logger.error(
        {
          ...origin.logFields,
          ...origin.describe(change.document),
          changed: change.changed,
          errors,
        },
        runtime === undefined
          ? 'configuration rejected; not ready until a valid one loads'
          : 'configuration reload rejected; still serving the last good configuration',
      );
      return loaded.references?.files;
    }
    const next = compiledNext.table;
    const previousHash = runtime?.hash;
    runtime = next;
    outliers.commit();
    pickers.commit();
    metrics.configReloads.inc({ result: 'success' });
    metrics.configLastReloadSuccessful.set(1);
    metrics.configLastReloadSuccess.set(Date.now() / 1000);
    metrics.configInfo.reset();
    metrics.configInfo.set({ hash: next.hash }, 1);
    origin.applied(change.document);
    lifecycle.configurationLoaded();
    logger.info(
      {
        ...origin.logFields,
        ...origin.describe(change.document),
        hash: next.hash,
        ...(previousHash === undefined ? {} : { previousHash }),
        changed: change.changed,
        aliases: next.routes.size,
        ...referencesLogged(loaded.ok ? loaded.references : undefined),
      },
      previousHash === undefined ? 'configuration loaded' : 'configuration reloaded',
    );
    return loaded.references?.files;
  };

  const watcher: ConfigWatcher<ConfigDocument> = new ConfigWatcher({
    source: origin.source,
    initial: {
      version: startup?.version ?? '',
      files: startup?.references.files ?? new Map<string, string>(),
    },
    logger,
    pollMs: options.configPollSecs * 1000,
    onChange: applyChange,
  });

  // The configured admin port until the listener is bound (`--metrics-port 0` picks one then).
  let adminPort = options.metricsPort;
  const proxyConnections = new ConnectionTracker();
  const accessLog = createAccessLog(options.accessLog, (lines) =>
    logger.warn(
      { lines, target: options.accessLog },
      'access log lines dropped: the destination is not keeping up',
    ),
  );
  const handler = createProxyHandler({
    accessLog,
    adminPort: () => adminPort,
    connections: proxyConnections,
    runtime: () => runtime,
    metrics,
    logger,
    options,
    upstream,
  });
  const proxyServer = createProxyServer(handler, {
    headerTimeoutMs: options.headerTimeoutSecs * 1000,
    requestTimeoutMs: options.requestTimeoutSecs * 1000,
    keepAliveTimeoutMs: options.keepAliveTimeoutSecs * 1000,
  });
  proxyConnections.watch(proxyServer);
  let proxyPort = options.port;
  const adminServer = createAdminServer({
    metrics,
    metricsEnabled: options.metrics,
    lifecycle,
    logger,
    proxyPort: () => proxyPort,
  });
  let shutdownPromise: Promise<number> | undefined;

  const gateway: Gateway = {
    options,
    logger,
    metrics,
    lifecycle,
    get runtime() {
      return runtime;
    },
    async listen() {
      const port = await listenOn(proxyServer, 'proxy', options.host, options.port);
      proxyPort = port;
      adminPort = await listenOn(adminServer, 'admin', options.host, options.metricsPort);
      logger.info({ listener: 'proxy', host: options.host, port }, 'listening');
      logger.info(
        { listener: 'admin', host: options.host, port: adminPort, metrics: options.metrics },
        'listening',
      );
      if (options.watch) watcher.start();
      origin.start();
      aimd.start();
      lifecycle.enter('serving');
      return { port, adminPort };
    },
    reloadNow: () => watcher.check('manual'),
    shutdown(reason) {
      shutdownPromise ??= (async () => {
        // The status entry is withdrawn as the process stops being ready: it no longer counts as
        // serving the object (a drain serves only what it had admitted).
        const originStopped = origin.stop();
        watcher.stop();
        aimd.stop();
        outliers.stop();
        return runShutdown(
          {
            lifecycle,
            logger,
            metrics,
            proxyServer,
            proxyConnections,
            adminServer,
            delaySecs: options.shutdownDelaySecs,
            timeoutSecs: options.shutdownTimeoutSecs,
            // Upstream pools first (nothing is in flight any more), then Redis (every slot is released
            // by now; a slot of a cut stream was released as it was cut), then the spans of the drain.
            finalizers: [
              () => originStopped,
              () => upstream.close(),
              async () => await sharedLimits?.close(),
              async () => void (await shutdownTracing()),
              async () => await accessLog?.flush(),
            ],
          },
          reason,
        );
      })();
      return shutdownPromise;
    },
  };
  return gateway;
}

/** Where the keys came from, for the log: file paths and variable names, never a value or digest. */
function referencesLogged(references: SecretReferences | undefined): {
  keyFiles?: string[];
  keyEnv?: readonly string[];
} {
  if (references === undefined) return {};
  return {
    ...(references.files.size > 0 ? { keyFiles: [...references.files.keys()] } : {}),
    ...(references.env.length > 0 ? { keyEnv: references.env } : {}),
  };
}

/**
 * Resource mode's origin, loaded on demand: the Kubernetes client library is never loaded in file
 * mode (it would cost every file-mode process memory and start-up time).
 */
async function loadResourceOrigin(
  reference: ConfigResourceReference,
  metrics: GatewayMetrics,
  logger: Logger,
  lifecycle: LifecycleState,
  onDocument: () => void,
): Promise<ConfigOrigin> {
  const { openResourceOrigin } = await import('./kube/resource-origin.js');
  return openResourceOrigin({ reference, metrics, logger, lifecycle, onDocument });
}

/** How long startup waits for Redis before serving with the failure policy deciding. */
const SHARED_STATE_STARTUP_WAIT_MS = 2000;

/**
 * Connects the shared limits (loaded on demand: a gateway without `--shared-state` never loads the
 * Redis client). An unreachable Redis does not stop startup: a crash-looping replica helps nobody,
 * the failure policy decides meanwhile, and the `up` gauge and the log say so.
 */
async function openSharedLimits(
  options: GatewayOptions,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<SharedLimitStore> {
  const { SharedLimitStore } = await import('./limits/redis/store.js');
  const store = new SharedLimitStore({
    url: options.sharedState!,
    prefix: options.sharedStatePrefix,
    policies: options.sharedStateFailure,
    leaseMs: Math.round(options.sharedStateLeaseSecs * 1000),
    timeoutMs: options.sharedStateTimeoutMs,
    logger,
    metrics: new SharedStateMetrics(metrics.registry, metrics.prefix),
  });
  if (!(await store.client.waitUntilReady(SHARED_STATE_STARTUP_WAIT_MS))) {
    logger.warn(
      { sharedState: store.client.target, waitedMs: SHARED_STATE_STARTUP_WAIT_MS },
      'shared state not reachable at startup; limits are decided by the failure policy until it connects',
    );
  }
  return store;
}
