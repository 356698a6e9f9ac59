/** A pool provider entry that names a Kubernetes Service: its ready pods become the pool's members. */
import { z } from 'zod';

/** A Service name: a DNS label (RFC 1035: starts with a letter). */
const SERVICE_NAME_PATTERN = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A namespace: a DNS label (RFC 1123). */
const NAMESPACE_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const SERVICE_DEFAULTS = {
  scheme: 'http',
  path: '',
  max_endpoints: 64,
} as const;

export const ServiceReferenceSchema = z
  .strictObject({
    name: z
      .string()
      .regex(SERVICE_NAME_PATTERN, {
        error:
          'must be a Service name: lower-case letters, digits and `-`, starting with a letter, at most 63 characters',
      })
      .describe('Name of the Service whose pods serve this entry.'),
    namespace: z
      .string()
      .regex(NAMESPACE_PATTERN, {
        error: 'must be a namespace name: lower-case letters, digits and `-`, at most 63 characters',
      })
      .optional()
      .describe(
        "The Service's namespace. Default: the gateway's own (its pod's namespace, or the kubeconfig context's).",
      ),
    port: z
      .int()
      .min(1)
      .max(65_535)
      .describe(
        "The pods' port, as the Service's EndpointSlices list it (the Service's `targetPort`, e.g. 8000 for vLLM), not the Service's own port: requests go to the pods directly.",
      ),
    scheme: z
      .enum(['http', 'https'])
      .default(SERVICE_DEFAULTS.scheme)
      .describe(
        "`http`, or `https`: then a pod's certificate is verified for the Service's DNS name `<name>.<namespace>.svc` (pods are reached by IP address, which certificates rarely name).",
      ),
    path: z
      .string()
      .regex(/^(\/[^\s?#]*)?$/, {
        error: 'must be empty or a path starting with `/`, without query or fragment',
      })
      .max(1024)
      .default(SERVICE_DEFAULTS.path)
      .describe(
        "Base path on every pod, as a `url`'s path (`/v1`: a base ending in `/v1` absorbs the request path's leading `/v1`).",
      ),
    max_endpoints: z
      .int()
      .min(1)
      .max(1024)
      .default(SERVICE_DEFAULTS.max_endpoints)
      .describe(
        'Most pods taken as members (the first by pod name); more are left out, logged and counted in `gateway_service_endpoints{state="over_limit"}`. Bounds the per-member state and the metric series labelled by pod.',
      ),
  })
  .meta({
    id: 'ServiceReference',
    title: 'Service reference',
    description:
      "A Kubernetes Service whose ready pods are the pool's members, found through its EndpointSlices (list and watch on `endpointslices` in its namespace).",
  });

export type ServiceReference = z.output<typeof ServiceReferenceSchema>;
