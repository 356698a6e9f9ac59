/**
 * Endpoint discovery: the EndpointSlices of every Service a `service:` pool entry names, listed and
 * watched through the Kubernetes API (list-watch.ts: resumed watches, relists on 410 Gone, backoff).
 * Each change calls `onChange`; the gateway then compiles its table again with the new members.
 *
 * While the API server cannot be reached or refuses, the last slices heard stay in use (a pod that
 * went away meanwhile fails its attempts and is ejected or failed over like any provider), the `up`
 * gauge reads 0 and one line says so per change of state.
 */
import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice } from '@kubernetes/client-node';
import type { ServiceReference } from '../config/schema/index.js';
import { membersFrom, noMembers, type Discovery, type ServiceMembers } from '../discovery/members.js';
import type { DiscoveryMetrics } from '../discovery/metrics.js';
import type { Logger } from '../telemetry/logger.js';
import { CallHealth } from './call-health.js';
import { loadKubeConfig } from './kubeconfig.js';
import { ListWatch } from './list-watch.js';

const RESOURCE = 'endpointslices.discovery.k8s.io';
/** The label EndpointSlices carry with their Service's name. */
const SERVICE_LABEL = 'kubernetes.io/service-name';
/** What the log lines about one Service's calls name. */
const resourceOf = (namespace: string, name: string): string => `${RESOURCE} of service ${namespace}/${name}`;

export interface EndpointDiscoveryDeps {
  logger: Logger;
  metrics: DiscoveryMetrics;
  /** The members of some Service changed (or were listed for the first time). */
  onChange: () => void;
}

/** One watched Service: its slices by name. */
class WatchedService {
  readonly slices = new Map<string, V1EndpointSlice>();
  listed = false;
  readonly watch: ListWatch<V1EndpointSlice>;
  private readonly waiters: (() => void)[] = [];

  constructor(watch: (service: WatchedService) => ListWatch<V1EndpointSlice>) {
    this.watch = watch(this);
  }

  /** The first list arrived: whoever waits for it goes on. */
  markListed(): void {
    this.listed = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  whenListed(): Promise<void> {
    return this.listed ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export class EndpointDiscovery implements Discovery {
  readonly #kubeConfig: KubeConfig;
  readonly #api: DiscoveryV1Api;
  readonly #namespace: string;
  readonly #deps: EndpointDiscoveryDeps;
  readonly #health: CallHealth;
  readonly #services = new Map<string, WatchedService>();
  #stopped = false;

  constructor(kubeConfig: KubeConfig, namespace: string, deps: EndpointDiscoveryDeps) {
    this.#kubeConfig = kubeConfig;
    this.#api = kubeConfig.makeApiClient(DiscoveryV1Api);
    this.#namespace = namespace;
    this.#deps = deps;
    this.#health = new CallHealth(deps.logger, { discovery: RESOURCE });
  }

  #key(service: Pick<ServiceReference, 'namespace' | 'name'>): { key: string; namespace: string } {
    const namespace = service.namespace ?? this.#namespace;
    return { key: `${namespace}/${service.name}`, namespace };
  }

  readonly members = (service: ServiceReference): ServiceMembers => {
    const { key, namespace } = this.#key(service);
    const watched = this.#services.get(key);
    return watched === undefined
      ? noMembers(namespace)
      : membersFrom(watched.slices.values(), service, namespace);
  };

  watch(services: readonly ServiceReference[]): void {
    if (this.#stopped) return;
    for (const service of services) {
      const { key, namespace } = this.#key(service);
      if (this.#services.has(key)) continue;
      const watched = new WatchedService((self) => this.#listWatch(self, namespace, service.name));
      this.#services.set(key, watched);
      this.#deps.metrics.up.set({ namespace, service: service.name }, 0);
      watched.watch.start();
    }
  }

  #listWatch(watched: WatchedService, namespace: string, name: string): ListWatch<V1EndpointSlice> {
    const labelSelector = `${SERVICE_LABEL}=${name}`;
    const resource = resourceOf(namespace, name);
    const labels = { namespace, service: name };
    let failing: 'list' | 'watch' | undefined;
    return new ListWatch<V1EndpointSlice>(
      this.#kubeConfig,
      {
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        selector: { labelSelector },
        list: (options) => this.#api.listNamespacedEndpointSlice({ namespace, labelSelector }, options),
      },
      {
        listed: (slices) => {
          watched.slices.clear();
          for (const slice of slices) watched.slices.set(slice.metadata?.name ?? '', slice);
          watched.markListed();
          this.#deps.onChange();
        },
        changed: (type, slice) => {
          const sliceName = slice.metadata?.name ?? '';
          if (type === 'DELETED') watched.slices.delete(sliceName);
          else watched.slices.set(sliceName, slice);
          this.#deps.onChange();
        },
        answered: () => {
          this.#deps.metrics.up.set(labels, 1);
          if (failing !== undefined) this.#health.succeeded(failing, resource);
          failing = undefined;
        },
        failing: (verb, failure) => {
          this.#deps.metrics.up.set(labels, 0);
          failing = verb;
          this.#health.failed(
            verb,
            resource,
            failure,
            watched.listed ? 'still routing to the endpoints it listed last' : 'no member until it answers',
          );
        },
        error: (error) =>
          this.#deps.logger.error(
            { err: error, service: `${namespace}/${name}` },
            'handling an EndpointSlice event failed unexpectedly',
          ),
      },
    );
  }

  async whenListed(services: readonly ServiceReference[], ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waits = services.map((service) => this.#services.get(this.#key(service).key)?.whenListed());
    await Promise.race([
      Promise.all(waits),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
      }),
    ]);
    clearTimeout(timer);
  }

  retain(services: readonly ServiceReference[]): void {
    const kept = new Set(services.map((service) => this.#key(service).key));
    for (const [key, watched] of this.#services) {
      if (kept.has(key)) continue;
      watched.watch.stop();
      this.#services.delete(key);
      const [namespace, service] = key.split('/') as [string, string];
      this.#deps.metrics.up.remove({ namespace, service });
      this.#health.forget(resourceOf(namespace, service));
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const watched of this.#services.values()) watched.watch.stop();
  }
}

/**
 * Discovery with the gateway's Kubernetes credentials (the service account in a pod, else
 * `KUBECONFIG` or `~/.kube/config`). A Service without a namespace is looked up in the gateway's
 * own: the pod's (its service account says it), else the kubeconfig context's, else `default`.
 * Throws StartupError without credentials.
 */
export function openEndpointDiscovery(deps: EndpointDiscoveryDeps): EndpointDiscovery {
  const { kubeConfig, from, server } = loadKubeConfig('endpoint discovery of `service:` providers');
  const namespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? 'default';
  deps.logger.info({ credentials: from, server, namespace }, 'endpoint discovery through the Kubernetes API');
  return new EndpointDiscovery(kubeConfig, namespace, deps);
}
