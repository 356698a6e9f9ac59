import { Gauge, type Registry } from '../telemetry/prom-client.js';
import type { ServiceMembers } from './members.js';

/** A `service:` entry of a live pool, as the endpoints gauge reads it. */
export interface ServiceEntryState {
  readonly model: string;
  readonly pool: string;
  /** The entry's identity (the `provider` label). */
  readonly entry: string;
  readonly members: ServiceMembers;
}

/**
 * The metrics of endpoint discovery, declared once per gateway that has a `service:` entry. Labels
 * are bounded by the configuration: the Services it names and their entries, never a pod.
 */
export class DiscoveryMetrics {
  /** 1 while the Service's EndpointSlices are watched, 0 while the API server fails (last endpoints kept). */
  readonly up: Gauge<'namespace' | 'service'>;

  constructor(registry: Registry, prefix: string, entries: () => Iterable<ServiceEntryState>) {
    this.up = new Gauge({
      name: `${prefix}_service_discovery_up`,
      help: "Whether the gateway follows the Service's EndpointSlices through the Kubernetes API: 1, or 0 while the API server cannot be reached or refuses (the last known endpoints keep serving).",
      labelNames: ['namespace', 'service'],
      registers: [registry],
    });
    new Gauge({
      name: `${prefix}_service_endpoints`,
      help: 'Endpoints of the Service of a `service:` provider entry, by state: ready (members of the pool), not_ready, terminating (neither gets new requests) and over_limit (ready, left out by `max_endpoints`).',
      labelNames: ['model', 'pool', 'provider', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const { model, pool, entry, members } of entries()) {
          const labels = { model, pool, provider: entry };
          this.set({ ...labels, state: 'ready' }, members.ready.length);
          this.set({ ...labels, state: 'not_ready' }, members.notReady);
          this.set({ ...labels, state: 'terminating' }, members.terminating);
          this.set({ ...labels, state: 'over_limit' }, members.overLimit);
        }
      },
    });
  }
}
