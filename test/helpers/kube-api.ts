/**
 * A Kubernetes API server for the resource-mode tests, on loopback over HTTP: the few endpoints the
 * gateway calls, with the semantics it relies on. GatewayConfig objects are listed and watched by
 * name (a watch replays the events after its resourceVersion, or answers 410 Gone for one older than
 * the last compaction); their status takes server-side apply (the entries of `status.replicas`
 * merged by pod, other fields replaced, and an entry a field manager applied before and leaves out
 * removed, as the real server drops fields no manager owns any more) and JSON patch (test and
 * remove); Leases are read, created
 * and replaced with resourceVersion preconditions; EndpointSlices are listed and watched by their
 * Service's label, as endpoint discovery reads them. The test controls faults: a verb refused with a
 * status, the listener stopped (every connection cut) and started again on the same port, the next
 * watch answered with 410. The real API server's behaviour is proven on a real cluster
 * (e2e/k8s/config-resource.k8s.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GatewayConfigObject } from '../../src/gateway/kube/resource.ts';
import { tempDir } from './temp-dir.ts';

const GROUP_PATH = '/apis/llm-gateway.dev/v1alpha1/namespaces/';
const LEASE_PATH = '/apis/coordination.k8s.io/v1/namespaces/';
const DISCOVERY_PATH = '/apis/discovery.k8s.io/v1/namespaces/';
const SERVICE_LABEL = 'kubernetes.io/service-name';

/** An endpoint of a slice, as a test describes it: a pod, its address, its conditions. */
export interface SliceEndpoint {
  pod: string;
  address: string;
  ready?: boolean;
  terminating?: boolean;
}

interface SliceObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion: string; labels: Record<string, string> };
  addressType: string;
  ports: { name: string; port: number; protocol: string }[];
  endpoints: {
    addresses: string[];
    conditions: { ready: boolean; serving: boolean; terminating: boolean };
    targetRef: { kind: string; name: string; namespace: string };
  }[];
}

export interface StoredObject {
  apiVersion: string;
  kind: string;
  metadata: GatewayConfigObject['metadata'];
  spec: unknown;
  status?: Record<string, unknown> & { replicas?: { pod: string }[] };
}

export type Verb = 'list' | 'watch' | 'patch-status' | 'lease' | 'list-slices' | 'watch-slices';

export interface RecordedCall {
  verb: Verb | 'other';
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  fieldManager: string | null;
  body: unknown;
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  rv: number;
  object: StoredObject | SliceObject;
}

interface Watcher {
  matches(object: StoredObject | SliceObject): boolean;
  res: ServerResponse;
}

export interface FakeKubeApi {
  readonly url: string;
  /** A kubeconfig file naming this server (KUBECONFIG of the gateways under test). */
  readonly kubeconfig: string;
  readonly calls: RecordedCall[];
  /** Watch connections open now (of any resource). */
  openWatches(): number;
  /** Creates the object, or replaces its spec (a new generation). */
  apply(namespace: string, name: string, spec: unknown): StoredObject;
  delete(namespace: string, name: string): void;
  get(namespace: string, name: string): StoredObject | undefined;
  /** Creates or replaces the EndpointSlice `name` of Service `service`, its endpoints on `port`. */
  applySlice(
    namespace: string,
    service: string,
    name: string,
    port: number,
    endpoints: SliceEndpoint[],
  ): void;
  deleteSlice(namespace: string, name: string): void;
  /** A Lease's holder, if the Lease exists and names one. */
  leaseHolder(namespace: string, name: string): string | undefined;
  /** Answers every call of this verb with this status until `refuse(verb, undefined)`. */
  refuse(verb: Verb, status: number | undefined): void;
  /** Requests of this verb are accepted and never answered (a hung server), until called with false. */
  hang(verb: Verb, hung: boolean): void;
  /** Forgets the history before now: a watch from an older resourceVersion gets 410 Gone. */
  compact(): void;
  /** Closes the listener and cuts every connection, as a stopped API server does. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function statusBody(code: number, reason: string, message: string): unknown {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code };
}

export async function startFakeKubeApi(): Promise<FakeKubeApi> {
  const objects = new Map<string, StoredObject>();
  const leases = new Map<
    string,
    { metadata: { name: string; namespace: string; resourceVersion: string }; spec: unknown }
  >();
  const history: WatchEvent[] = [];
  const refusals = new Map<Verb, number>();
  const hung = new Set<Verb>();
  const watchers = new Set<Watcher>();
  const slices = new Map<string, SliceObject>();
  const sockets = new Set<Socket>();
  const calls: RecordedCall[] = [];
  /** Field manager -> the pods of the `status.replicas` entries it applied last. */
  const owned = new Map<string, Set<string>>();
  let rv = 1;
  let compactedAt = 0;
  let uid = 0;

  const key = (namespace: string, name: string): string => `${namespace}/${name}`;
  const copy = <T>(value: T): T => structuredClone(value);

  const emit = (type: WatchEvent['type'], object: StoredObject | SliceObject): void => {
    const event: WatchEvent = { type, rv: Number(object.metadata.resourceVersion), object: copy(object) };
    history.push(event);
    for (const watcher of watchers)
      if (watcher.matches(object) && !watcher.res.writableEnded)
        watcher.res.write(`${JSON.stringify({ type, object: event.object })}\n`);
  };

  /** Streams the events after `resourceVersion` that `matches` takes, then the new ones, until the timeout. */
  const serveWatch = (
    url: URL,
    res: ServerResponse,
    matches: (object: StoredObject | SliceObject) => boolean,
  ): void => {
    const from = Number(url.searchParams.get('resourceVersion') ?? '0');
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    if (from < compactedAt) {
      res.end(
        `${JSON.stringify({ type: 'ERROR', object: statusBody(410, 'Expired', 'too old resource version') })}\n`,
      );
      return;
    }
    // The real server sends the head at once, before any event.
    res.flushHeaders();
    for (const event of history)
      if (event.rv > from && matches(event.object))
        res.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
    const watcher: Watcher = { matches, res };
    watchers.add(watcher);
    const seconds = Number(url.searchParams.get('timeoutSeconds') ?? '60');
    const timer = setTimeout(() => res.end(), seconds * 1000);
    res.on('close', () => {
      clearTimeout(timer);
      watchers.delete(watcher);
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const text = await readBody(req);
    let body: unknown = undefined;
    if (text !== '') body = JSON.parse(text);
    const path = url.pathname;
    const watching = url.searchParams.get('watch') === 'true';
    const verb: Verb | 'other' = path.startsWith(LEASE_PATH)
      ? 'lease'
      : path.startsWith(DISCOVERY_PATH)
        ? watching
          ? 'watch-slices'
          : 'list-slices'
        : path.endsWith('/status')
          ? 'patch-status'
          : url.searchParams.get('watch') === 'true'
            ? 'watch'
            : req.method === 'GET'
              ? 'list'
              : 'other';
    calls.push({
      verb,
      method: req.method ?? 'GET',
      path,
      query: url.searchParams,
      contentType: req.headers['content-type'],
      fieldManager: url.searchParams.get('fieldManager'),
      body,
    });
    if (req.headers.authorization !== 'Bearer test-token') {
      json(res, 401, statusBody(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    if (verb !== 'other' && hung.has(verb)) return;
    const refused = verb === 'other' ? undefined : refusals.get(verb);
    if (refused !== undefined) {
      json(
        res,
        refused,
        statusBody(
          refused,
          refused === 403 ? 'Forbidden' : 'InternalError',
          `${verb} refused by the test (${refused})`,
        ),
      );
      return;
    }

    if (verb === 'lease') {
      const [namespace, , name] = path.slice(LEASE_PATH.length).split('/');
      const leaseKey = key(namespace!, name ?? '');
      if (req.method === 'GET') {
        const lease = leases.get(leaseKey);
        if (lease === undefined) json(res, 404, statusBody(404, 'NotFound', 'lease not found'));
        else json(res, 200, lease);
        return;
      }
      const lease = body as {
        metadata: { name: string; namespace?: string; resourceVersion?: string };
        spec: unknown;
      };
      const existing = leases.get(key(namespace!, lease.metadata.name));
      if (req.method === 'POST' && existing !== undefined) {
        json(res, 409, statusBody(409, 'AlreadyExists', 'lease exists'));
        return;
      }
      if (req.method === 'PUT' && existing?.metadata.resourceVersion !== lease.metadata.resourceVersion) {
        json(res, 409, statusBody(409, 'Conflict', 'the object has been modified'));
        return;
      }
      const stored = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: lease.metadata.name, namespace: namespace!, resourceVersion: String((rv += 1)) },
        spec: lease.spec,
      };
      leases.set(key(namespace!, lease.metadata.name), stored);
      json(res, req.method === 'POST' ? 201 : 200, stored);
      return;
    }

    if (verb === 'list-slices' || verb === 'watch-slices') {
      const [namespace, plural] = path.slice(DISCOVERY_PATH.length).split('/');
      const service = new RegExp(`^${SERVICE_LABEL}=(.+)$`).exec(
        url.searchParams.get('labelSelector') ?? '',
      )?.[1];
      if (plural !== 'endpointslices' || service === undefined) {
        json(res, 400, statusBody(400, 'BadRequest', 'the tests serve the slices of one Service'));
        return;
      }
      const matches = (object: StoredObject | SliceObject): boolean =>
        object.kind === 'EndpointSlice' &&
        object.metadata.namespace === namespace &&
        (object as SliceObject).metadata.labels[SERVICE_LABEL] === service;
      if (verb === 'watch-slices') {
        serveWatch(url, res, matches);
        return;
      }
      json(res, 200, {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSliceList',
        metadata: { resourceVersion: String(rv) },
        items: [...slices.values()].filter(matches).map(copy),
      });
      return;
    }

    if (!path.startsWith(GROUP_PATH)) {
      json(res, 404, statusBody(404, 'NotFound', `no route ${path}`));
      return;
    }
    const [namespace, plural, name] = path.slice(GROUP_PATH.length).split('/');
    if (plural !== 'gatewayconfigs') {
      json(res, 404, statusBody(404, 'NotFound', `no resource ${plural}`));
      return;
    }

    if (verb === 'patch-status') {
      const object = objects.get(key(namespace!, name!));
      if (object === undefined) {
        json(res, 404, statusBody(404, 'NotFound', 'gatewayconfig not found'));
        return;
      }
      const status = (object.status ??= {});
      if (req.headers['content-type'] === 'application/apply-patch+yaml') {
        const applied = body as { metadata?: { uid?: string }; status: Record<string, unknown> };
        if (applied.metadata?.uid !== undefined && applied.metadata.uid !== object.metadata.uid) {
          json(res, 409, statusBody(409, 'Conflict', 'uid precondition failed'));
          return;
        }
        const manager = url.searchParams.get('fieldManager') ?? '';
        const pods = new Set<string>();
        for (const [field, value] of Object.entries(applied.status)) {
          if (field !== 'replicas') status[field] = value;
          else
            for (const entry of value as { pod: string }[]) {
              pods.add(entry.pod);
              const entries = (status.replicas ??= []);
              const at = entries.findIndex((e) => e.pod === entry.pod);
              if (at < 0) entries.push(entry);
              else entries[at] = entry;
            }
        }
        for (const pod of owned.get(manager) ?? [])
          if (!pods.has(pod)) status.replicas = (status.replicas ?? []).filter((e) => e.pod !== pod);
        owned.set(manager, pods);
      } else if (req.headers['content-type'] === 'application/json-patch+json') {
        const draft = copy(object);
        for (const op of body as { op: string; path: string; value?: unknown }[]) {
          const segments = op.path.split('/').slice(1);
          const index = Number(segments[2]);
          const entries = draft.status?.replicas ?? [];
          if (
            op.op === 'test' &&
            (entries[index] as Record<string, unknown> | undefined)?.[segments[3]!] !== op.value
          ) {
            json(res, 422, statusBody(422, 'Invalid', `test failed at ${op.path}`));
            return;
          }
          if (op.op === 'remove') entries.splice(index, 1);
        }
        object.status = draft.status;
      } else {
        json(res, 415, statusBody(415, 'UnsupportedMediaType', String(req.headers['content-type'])));
        return;
      }
      object.metadata.resourceVersion = String((rv += 1));
      emit('MODIFIED', object);
      json(res, 200, object);
      return;
    }

    const selected = /^metadata\.name=(.+)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
    if (selected === undefined) {
      json(res, 400, statusBody(400, 'BadRequest', 'the tests serve one object by name'));
      return;
    }
    if (verb === 'list') {
      const object = objects.get(key(namespace!, selected));
      json(res, 200, {
        apiVersion: 'llm-gateway.dev/v1alpha1',
        kind: 'GatewayConfigList',
        metadata: { resourceVersion: String(rv) },
        items: object === undefined ? [] : [copy(object)],
      });
      return;
    }
    serveWatch(
      url,
      res,
      (object) =>
        object.kind === 'GatewayConfig' &&
        object.metadata.namespace === namespace &&
        object.metadata.name === selected,
    );
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, statusBody(500, 'InternalError', String(error)));
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  const dir = tempDir('gateway-kube-');
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'test', user: { token: 'test-token' } }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'test' } }],
      'current-context': 'test',
    }),
  );

  const cutAll = (): void => {
    for (const watcher of watchers) watcher.res.destroy();
    for (const socket of sockets) socket.destroy();
  };

  return {
    url,
    kubeconfig,
    calls,
    openWatches: () => watchers.size,
    apply(namespace, name, spec) {
      const existing = objects.get(key(namespace, name));
      rv += 1;
      if (existing === undefined) {
        uid += 1;
        const object: StoredObject = {
          apiVersion: 'llm-gateway.dev/v1alpha1',
          kind: 'GatewayConfig',
          metadata: { name, namespace, uid: `uid-${uid}`, generation: 1, resourceVersion: String(rv) },
          spec: copy(spec),
        };
        objects.set(key(namespace, name), object);
        emit('ADDED', object);
        return copy(object);
      }
      existing.spec = copy(spec);
      existing.metadata.generation += 1;
      existing.metadata.resourceVersion = String(rv);
      emit('MODIFIED', existing);
      return copy(existing);
    },
    delete(namespace, name) {
      const existing = objects.get(key(namespace, name));
      if (existing === undefined) return;
      objects.delete(key(namespace, name));
      existing.metadata.resourceVersion = String((rv += 1));
      emit('DELETED', existing);
    },
    get: (namespace, name) => {
      const object = objects.get(key(namespace, name));
      return object === undefined ? undefined : copy(object);
    },
    applySlice(namespace, service, name, port, endpoints) {
      const existed = slices.has(key(namespace, name));
      const slice: SliceObject = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name,
          namespace,
          resourceVersion: String((rv += 1)),
          labels: { [SERVICE_LABEL]: service },
        },
        addressType: 'IPv4',
        ports: [{ name: 'http', port, protocol: 'TCP' }],
        endpoints: endpoints.map((endpoint) => ({
          addresses: [endpoint.address],
          conditions: {
            ready: (endpoint.ready ?? true) && !(endpoint.terminating ?? false),
            serving: endpoint.ready ?? true,
            terminating: endpoint.terminating ?? false,
          },
          targetRef: { kind: 'Pod', name: endpoint.pod, namespace },
        })),
      };
      slices.set(key(namespace, name), slice);
      emit(existed ? 'MODIFIED' : 'ADDED', slice);
    },
    deleteSlice(namespace, name) {
      const slice = slices.get(key(namespace, name));
      if (slice === undefined) return;
      slices.delete(key(namespace, name));
      slice.metadata.resourceVersion = String((rv += 1));
      emit('DELETED', slice);
    },
    leaseHolder: (namespace, name) =>
      (leases.get(key(namespace, name))?.spec as { holderIdentity?: string } | undefined)?.holderIdentity,
    hang(verb, value) {
      if (value) hung.add(verb);
      else hung.delete(verb);
    },
    refuse(verb, status) {
      if (status === undefined) refusals.delete(verb);
      else refusals.set(verb, status);
    },
    compact() {
      compactedAt = rv + 1;
      // A running watch is ended, as the real server ends watches it can no longer serve.
      for (const watcher of watchers) watcher.res.end();
    },
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      cutAll();
      await closed;
    },
    async start() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
    async close() {
      if (server.listening) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        cutAll();
        await closed;
      }
    },
  };
}
