import { compileRuntime, type CompiledTable } from './runtime/compile.js';
import { readBudgets } from './limits/spend/readings.js';
import { warnUnreachable, type ProbedProvider } from './http/reachability.js';
import type { ProviderRoute } from './runtime/table.js';
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
import { noMembers, serviceReferences, type Discovery } from './discovery/members.js';
import { DiscoveryMetrics, type ServiceEntryState } from './discovery/metrics.js';
import type { ResolvedGatewayConfig } from './config/secrets.js';
import type { ServiceReference } from './config/schema/index.js';
import type { ConfigIssue } from './config/issues.js';
import { StartupError } from './lifecycle/startup-error.js';

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
  metrics.budgets.source(() => readBudgets(runtime?.budgets ?? []));
  const lifecycle = new LifecycleState();

  const upstream = new UpstreamClient();
  const aimd = new AimdRegistry({ metrics: new AimdMetrics(metrics.registry, metrics.prefix) });
  const outliers = new OutlierRegistry({
    metrics: new OutlierMetrics(metrics.registry, metrics.prefix),
    logger,
  });
  const pickers = new PickerRegistry(new PickerMetrics(metrics.registry, metrics.prefix));
  /** Endpoint discovery, started by the first configuration with a `service:` entry. */
  let discovery: Discovery | undefined;
  const compileOptions = {
    enforceBatchInflight: options.enforceBatchInflight,
    batchLimiter: deps.batchLimiter,
    aimd,
    outliers,
    pickers,
    sharedLimits: undefined as SharedLimitStore | undefined,
    members: (service: ServiceReference) => discovery?.members(service) ?? noMembers(service.namespace ?? ''),
  };
  /** The configuration the table was compiled from: compiled again when a Service's pods change. */
  let resolved: { config: ResolvedGatewayConfig; hash: string } | undefined;
  let membersTimer: NodeJS.Timeout | undefined;

  /**
   * Watches the Services a configuration names (discovery starts with the first one) and waits, a
   * bounded time, for their first lists, so the table compiled next has their pods. Without
   * Kubernetes credentials: the issue that names the first `service:` entry.
   */
  const discoverServices = async (config: ResolvedGatewayConfig): Promise<ConfigIssue | undefined> => {
    const services = serviceReferences(config.targets);
    if (services.length === 0) return undefined;
    try {
      discovery ??= await loadDiscovery(metrics, logger, liveServiceEntries, scheduleMembersCompile);
    } catch (error) {
      if (!(error instanceof StartupError)) throw error;
      return { path: firstServicePath(config), message: error.message };
    }
    discovery.watch(services);
    await discovery.whenListed(services, FIRST_LIST_WAIT_MS);
    return undefined;
  };
  /** The table is in use: Services it no longer names are not watched any more. */
  const committed = (config: ResolvedGatewayConfig, hash: string): void => {
    resolved = { config, hash };
    discovery?.retain(serviceReferences(config.targets));
  };
  function* liveServiceEntries(): Iterable<ServiceEntryState> {
    for (const route of runtime?.routes.values() ?? [])
      for (const service of route.services)
        yield { model: route.model, pool: route.key, entry: service.entry, members: service.members };
  }
  /** Pods came or went: the table is compiled again (at most every MEMBERS_DEBOUNCE_MS). */
  function scheduleMembersCompile(): void {
    membersTimer ??= setTimeout(() => {
      membersTimer = undefined;
      if (resolved === undefined || runtime === undefined) return;
      let compiled: ReturnType<typeof compileRuntime>;
      try {
        compiled = compileRuntime(resolved.config, resolved.hash, runtime, compileOptions);
      } catch (error) {
        logger.error({ err: error }, 'compiling the new members of a pool failed unexpectedly');
        return;
      }
      if (!compiled.ok) {
        logger.error({ errors: compiled.issues }, 'compiling the new members of a pool failed unexpectedly');
        return;
      }
      logMemberChanges(logger, runtime, compiled.table);
      warnOverLimit(logger, runtime, compiled.table);
      runtime = compiled.table;
      outliers.commit();
      pickers.commit();
    }, MEMBERS_DEBOUNCE_MS);
  }
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
    const discoveryIssue = await discoverServices(startup.config);
    if (discoveryIssue !== undefined) {
      await sharedLimits?.close();
      throw new StartupError(`${discoveryIssue.path}: ${discoveryIssue.message}`);
    }
    const compiled = compileRuntime(startup.config, startup.hash, undefined, compileOptions);
    if (!compiled.ok) {
      await sharedLimits?.close();
      discovery?.stop();
      throw new ConfigLoadError(origin.where, compiled.issues);
    }
    runtime = compiled.table;
    warnOverLimit(logger, undefined, runtime);
    noteBudgetsInMemory(logger, undefined, runtime);
    void warnUnreachable(staticProviders(runtime), logger);
    outliers.commit();
    pickers.commit();
    committed(startup.config, startup.hash);
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
    const discoveryIssue = loaded.ok ? await discoverServices(loaded.config) : undefined;
    const compiledNext = !loaded.ok
      ? loaded
      : discoveryIssue !== undefined
        ? { ok: false as const, issues: [discoveryIssue] }
        : compileRuntime(loaded.config, loaded.hash, runtime, compileOptions);
    if (!compiledNext.ok) {
      // The Services only the rejected configuration named are not followed.
      discovery?.retain(serviceReferences(resolved?.config.targets ?? {}));
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
    warnOverLimit(logger, runtime, next);
    noteBudgetsInMemory(logger, runtime, next);
    void warnUnreachable(staticProviders(next), logger);
    runtime = next;
    outliers.commit();
    pickers.commit();
    if (loaded.ok) committed(loaded.config, loaded.hash);
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
        discovery?.stop();
        clearTimeout(membersTimer);
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

/** How long a configuration naming a new Service waits for its first EndpointSlices before it applies. */
const FIRST_LIST_WAIT_MS = 5000;
/** EndpointSlice events closer together than this make one compile (a rollout sends a burst). */
const MEMBERS_DEBOUNCE_MS = 100;

/**
 * Endpoint discovery, loaded on demand like resource mode: a gateway without a `service:` entry
 * never loads the Kubernetes client. Throws StartupError without Kubernetes credentials.
 */
async function loadDiscovery(
  metrics: GatewayMetrics,
  logger: Logger,
  entries: () => Iterable<ServiceEntryState>,
  onChange: () => void,
): Promise<Discovery> {
  const { openEndpointDiscovery } = await import('./kube/endpoint-discovery.js');
  return openEndpointDiscovery({
    logger,
    metrics: new DiscoveryMetrics(metrics.registry, metrics.prefix, entries),
    onChange,
  });
}

/** The JSON path of the first `service:` entry, for the issue that there is no way to follow it. */
function firstServicePath(config: ResolvedGatewayConfig): string {
  for (const [key, target] of Object.entries(config.targets)) {
    const index = target.providers?.findIndex((provider) => provider.service !== undefined) ?? -1;
    if (index >= 0) return `$.targets[${JSON.stringify(key)}].providers[${index}].service`;
  }
  return '$';
}

/** One line per pool whose members changed: who came, who left, how many there are. */
function logMemberChanges(logger: Logger, before: CompiledTable, after: CompiledTable): void {
  for (const [key, route] of after.routes) {
    if (route.services.length === 0) continue;
    const old = new Set(before.routes.get(key)?.providers.map((p) => p.name) ?? []);
    const now = new Set(route.providers.map((p) => p.name));
    const added = [...now].filter((name) => !old.has(name));
    const removed = [...old].filter((name) => !now.has(name));
    if (added.length > 0 || removed.length > 0)
      logger.info(
        { model: route.model, pool: key, members: now.size, added, removed },
        'pool members changed',
      );
  }
}

/** A warning when more pods of a Service are ready than its entry's `max_endpoints` takes (once per change). */
function warnOverLimit(logger: Logger, before: CompiledTable | undefined, after: CompiledTable): void {
  for (const [key, route] of after.routes)
    for (const { entry, service, members } of route.services) {
      const earlier =
        before?.routes.get(key)?.services.find((s) => s.entry === entry)?.members.overLimit ?? 0;
      if (members.overLimit > 0 && members.overLimit !== earlier)
        logger.warn(
          {
            model: route.model,
            pool: key,
            provider: entry,
            service: `${members.namespace}/${service}`,
            members: members.ready.length,
            overLimit: members.overLimit,
          },
          'more pods of the Service are ready than the entry takes (max_endpoints): the pods after the first by name get no request',
        );
    }
}

/**
 * The providers a table names by URL, one per endpoint with the aliases and providers using it (a
 * Service's pods are left out: discovery lists only ready ones).
 */
function staticProviders(table: CompiledTable): ProbedProvider[] {
  const byOrigin = new Map<string, { endpoint: ProviderRoute['endpoint']; users: string[] }>();
  for (const route of table.routes.values())
    for (const provider of route.providers) {
      if (provider.name !== provider.label) continue;
      const origin = provider.endpoint.origin;
      let entry = byOrigin.get(origin);
      if (entry === undefined) byOrigin.set(origin, (entry = { endpoint: provider.endpoint, users: [] }));
      entry.users.push(`${route.key}/${provider.name}`);
    }
  return [...byOrigin.values()];
}

/**
 * Budgets without `--shared-state` live in this process: said once, when a configuration first has
 * any, since an operator who expects a monthly budget to survive a restart must learn otherwise
 * before the restart, not after.
 */
function noteBudgetsInMemory(logger: Logger, before: CompiledTable | undefined, after: CompiledTable): void {
  if (after.sharedLimits || after.budgets.length === 0 || (before?.budgets.length ?? 0) > 0) return;
  logger.warn(
    { budgets: after.budgets.length },
    "spend budgets are kept in this process's memory without --shared-state: each replica counts its own spend, and a restart starts every budget from zero",
  );
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
