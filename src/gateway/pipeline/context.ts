import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AliasRoute, RuntimeTable } from '../config/runtime.js';
import type { KeyIdentity } from '../auth/keys.js';
import type { Grant } from '../limits/types.js';
import type { StrictEndpoint } from '../strict/index.js';
import type { ReasoningPlan } from '../reasoning/index.js';
import type { Span } from '@opentelemetry/api';
import { NOOP_SPAN } from '../telemetry/tracing.js';

export type Traffic = 'realtime' | 'dispatched';

/** Upstream work to abort when the client goes away before its response finished. */
export interface AbandonListener {
  abandoned(): void;
}

/** The body of a request before it is read (shared: it is never written to). */
const NO_BODY = Buffer.alloc(0);

/**
 * Everything one request carries through the stages. Grants are released exactly once, when the
 * response closes (finished or abandoned), whatever stage the request reached.
 */
export class RequestContext {
  readonly startedAt = performance.now();
  /** Told if the client goes away before its response finished (upstream work to abort). */
  #abandonListeners: AbandonListener[] | undefined;
  /** `model` metric label: the alias without class suffix, empty until resolved. */
  model = '';
  route: AliasRoute | undefined;
  /** The authenticated key; undefined on an open target. */
  identity: KeyIdentity | undefined;
  /** Raw request body bytes as received. */
  body: Buffer = NO_BODY;
  /** The parsed JSON body, when it was parsed (at most once). */
  json: Record<string, unknown> | undefined;
  /** In strict mode, the supported endpoint the path names (spec 4.5). */
  strictEndpoint: StrictEndpoint | undefined;
  /** The reasoning plan decided before any attempt (spec 2.6), applied per provider. */
  reasoning: ReasoningPlan | undefined;
  /** The request's server span (a no-op span when tracing is off). */
  span: Span = NOOP_SPAN;
  private grants: Grant[] = [];
  private inflightCounted = false;
  private closed = false;

  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly table: RuntimeTable;
  readonly traffic: Traffic;
  /** Path without the query string. */
  readonly path: string;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    table: RuntimeTable,
    traffic: Traffic,
    path: string,
  ) {
    this.req = req;
    this.res = res;
    this.table = table;
    this.traffic = traffic;
    this.path = path;
  }

  hold(grant: Grant): void {
    if (this.closed) grant.release();
    else this.grants.push(grant);
  }

  /** Marks the request as counted in the alias in-flight gauge (undone on close). */
  countInflight(): boolean {
    if (this.inflightCounted) return false;
    this.inflightCounted = true;
    return true;
  }

  get countedInflight(): boolean {
    return this.inflightCounted;
  }

  /**
   * Registers work to abort when the client leaves before its response finished. (A plain list: an
   * AbortController per request would build a DOMException with a stack trace on every abort.)
   */
  onAbandon(listener: AbandonListener): void {
    (this.#abandonListeners ??= []).push(listener);
  }

  offAbandon(listener: AbandonListener): void {
    const listeners = this.#abandonListeners;
    const at = listeners?.indexOf(listener) ?? -1;
    if (at >= 0) listeners!.splice(at, 1);
  }

  /** Releases every grant; safe to call more than once. Aborts upstream work of an unfinished response. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Abort unfinished upstream work first: releasing grants disposes the attempts, which would
    // unsubscribe them before they heard of it.
    const listeners = this.#abandonListeners;
    this.#abandonListeners = undefined;
    if (listeners !== undefined && !this.res.writableFinished) {
      for (const listener of [...listeners]) listener.abandoned();
    }
    const grants = this.grants;
    this.grants = [];
    for (const grant of grants) grant.release();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
