/**
 * The members of a `service:` pool entry: which of a Service's endpoints take requests, read from
 * its EndpointSlices (discovery.k8s.io/v1). Kept apart from the Kubernetes client (kube/), which
 * only a gateway with a `service:` entry loads.
 *
 * An endpoint is a member while its `ready` condition is not false (the API reads an absent one as
 * true) and it is not `terminating`: a pod being deleted or failing its readiness probe gets no new
 * request, and its requests in flight finish on the connection they started on.
 */
import type { ServiceReference } from '../config/schema/index.js';

/** One pod of a Service that takes requests. */
export interface ServiceMember {
  /** The pod's name (its `targetRef`), else the endpoint's hostname, else its address. */
  readonly pod: string;
  /** The IP address requests go to. */
  readonly address: string;
}

/** What the EndpointSlices of one Service say for one entry (its port, its cap). */
export interface ServiceMembers {
  /** The namespace the Service was looked up in (the entry's, else the gateway's). */
  readonly namespace: string;
  /** The members, by pod name, at most the entry's `max_endpoints`. */
  readonly ready: readonly ServiceMember[];
  readonly notReady: number;
  readonly terminating: number;
  /** Ready endpoints left out by `max_endpoints`. */
  readonly overLimit: number;
}

/** The members of an entry: what the compiler asks discovery. */
export type MembersOf = (service: ServiceReference) => ServiceMembers;

/** The parts of an EndpointSlice read here (client-node's V1EndpointSlice has them). */
export interface EndpointSliceShape {
  readonly metadata?: { readonly name?: string };
  readonly addressType: string;
  readonly ports?: readonly { readonly port?: number }[] | null;
  readonly endpoints: readonly {
    readonly addresses: readonly string[];
    readonly conditions?: { readonly ready?: boolean; readonly terminating?: boolean };
    readonly hostname?: string;
    readonly targetRef?: { readonly kind?: string; readonly name?: string };
  }[];
}

/**
 * The members of `service` among `slices`: endpoints of slices that list its port, IP addresses
 * only (an FQDN slice names no pod), each pod once (a pod moving between slices can be in two for a
 * moment; a dual-stack pod by its IPv4 address), sorted by pod name and capped.
 */
export function membersFrom(
  slices: Iterable<EndpointSliceShape>,
  service: Pick<ServiceReference, 'port' | 'max_endpoints'>,
  namespace: string,
): ServiceMembers {
  const ready = new Map<string, ServiceMember>();
  const notReady = new Set<string>();
  const terminating = new Set<string>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    if (!(slice.ports ?? []).some((port) => port.port === service.port)) continue;
    for (const endpoint of slice.endpoints) {
      const address = endpoint.addresses[0];
      if (address === undefined) continue;
      const pod =
        (endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined) ??
        endpoint.hostname ??
        address;
      if (endpoint.conditions?.terminating === true) terminating.add(pod);
      else if (endpoint.conditions?.ready === false) notReady.add(pod);
      // A dual-stack Service lists each pod in an IPv4 and an IPv6 slice: IPv4 is taken, whatever
      // order the slices come in, so a member's address does not change with the order.
      else if (slice.addressType === 'IPv4' || !ready.has(pod)) ready.set(pod, { pod, address });
    }
  }
  for (const pod of ready.keys()) {
    notReady.delete(pod);
    terminating.delete(pod);
  }
  const sorted = [...ready.values()].sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
  return {
    namespace,
    ready: sorted.slice(0, service.max_endpoints),
    notReady: notReady.size,
    terminating: terminating.size,
    overLimit: Math.max(0, sorted.length - service.max_endpoints),
  };
}

/** No discovery (a file only checked, or the API not heard from yet): no member. */
export const noMembers = (namespace: string): ServiceMembers => ({
  namespace,
  ready: [],
  notReady: 0,
  terminating: 0,
  overLimit: 0,
});

/** The URL of a member: the entry's scheme, port and path on the pod's address. */
export function memberUrl(
  service: Pick<ServiceReference, 'scheme' | 'port' | 'path'>,
  address: string,
): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return `${service.scheme}://${host}:${service.port}${service.path}`;
}

/** Every Service the configuration's pools name, once each (namespace as written, maybe absent). */
export function serviceReferences(
  targets: Record<string, { providers?: readonly { service?: ServiceReference | undefined }[] | undefined }>,
): ServiceReference[] {
  const seen = new Map<string, ServiceReference>();
  for (const target of Object.values(targets))
    for (const provider of target.providers ?? [])
      if (provider.service !== undefined)
        seen.set(`${provider.service.namespace ?? ''}/${provider.service.name}`, provider.service);
  return [...seen.values()];
}

/**
 * Endpoint discovery as the gateway drives it (kube/endpoint-discovery.ts, loaded only when a
 * `service:` entry exists).
 */
export interface Discovery {
  /** The members of an entry, from the last EndpointSlices heard (kept while the API fails). */
  readonly members: MembersOf;
  /** Watches these Services (those not watched yet start now). */
  watch(services: readonly ServiceReference[]): void;
  /** Resolves once each of these Services was listed once, or after `ms`. */
  whenListed(services: readonly ServiceReference[], ms: number): Promise<void>;
  /** Stops watching the Services not among these (a configuration no longer names them). */
  retain(services: readonly ServiceReference[]): void;
  stop(): void;
}
