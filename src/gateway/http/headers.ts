import type { IncomingHttpHeaders } from 'node:http';

/** RFC 9110 7.6.1 connection-specific fields, never forwarded in either direction. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Request headers the gateway consumes or recomputes instead of forwarding. */
const REQUEST_CONSUMED = [
  'host',
  'content-length',
  // The client's key never reaches a provider, in either header a client may send it in.
  'authorization',
  'x-api-key',
  'model-override',
  'expect',
];

/** What a request never forwards: hop-by-hop fields and what the gateway consumes. */
const REQUEST_DROP: ReadonlySet<string> = new Set([...HOP_BY_HOP, ...REQUEST_CONSUMED]);

/**
 * The set of request header names not to forward, `REQUEST_DROP` plus `extra`: build it once (at
 * module load or configuration time) and pass it to `forwardRequestHeaders`, so a request pays
 * one set lookup per header whatever is dropped.
 */
export function requestHeaderDrop(extra: readonly string[]): ReadonlySet<string> {
  return new Set([...REQUEST_DROP, ...extra]);
}

/** The last `Connection` value parsed and its names: clients send the same one on every request. */
let lastConnection: { value: string; listed: ReadonlySet<string> } | undefined;

/** The header names a `Connection` value lists (never modified by callers: it may be shared). */
function connectionListed(headers: IncomingHttpHeaders): ReadonlySet<string> | undefined {
  const value = headers.connection;
  if (!value) return undefined;
  if (lastConnection?.value === value) return lastConnection.listed;
  const listed = new Set<string>();
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name) listed.add(name);
  }
  lastConnection = { value, listed };
  return listed;
}

/**
 * Headers to send upstream: the client's, minus hop-by-hop fields (and any the client's
 * `Connection` header names), minus what the gateway consumes, minus what `drop` adds (a set from
 * `requestHeaderDrop`). Node already lower-cases names.
 */
export function forwardRequestHeaders(
  headers: IncomingHttpHeaders,
  drop: ReadonlySet<string> = REQUEST_DROP,
): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    if (drop.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * The set of response header names not to pass on, the hop-by-hop fields plus `extra`: built once
 * and passed to `forwardResponseHeaders`, so a response pays one set lookup per header, and its
 * header object is never thinned with `delete` (which turns it into a slower dictionary for every
 * write after it, Node's header writer included).
 */
export function responseHeaderDrop(extra: readonly string[]): ReadonlySet<string> {
  return new Set([...HOP_BY_HOP, ...extra]);
}

/** Response headers from a provider that may reach the client: all but those in `drop`. */
export function forwardResponseHeaders(
  headers: Record<string, string | string[] | undefined>,
  drop: ReadonlySet<string> = HOP_BY_HOP,
): Record<string, string | string[]> {
  const listedRaw = headers.connection;
  const listed = typeof listedRaw === 'string' ? connectionListed({ connection: listedRaw }) : undefined;
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    if (drop.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The provider's `content-type` says the body is a server-sent event stream. */
export function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.includes('text/event-stream');
}

/** A JSON body (`application/json` and its `+json` relatives). */
export function isJson(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.includes('json');
}
