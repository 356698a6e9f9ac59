import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AliasRoute, RuntimeTable } from '../runtime/table.js';
import type { KeyIdentity } from '../auth/keys.js';
import type { Grant } from '../limits/types.js';
import { surfaceOf, type ApiSurface, type StrictEndpoint } from '../api/surfaces.js';
import type { ReasoningPlan } from '../reasoning/index.js';
import type { Span } from '@opentelemetry/api';
import { NOOP_SPAN } from '../telemetry/tracing.js';
import type { RequestOutcome } from './outcome.js';
import type { ServedRecord } from './served-record.js';
import type { SpendHold } from '../limits/spend/types.js';

export type Traffic = 'realtime' | 'dispatched';

/** Upstream work to abort when the client goes away before its response finished. */
export interface AbandonListener {
  abandoned(): void;
}

/** A request translated for providers that do not speak its surface, made once before any attempt. */
export interface Translation {
  /** The chat completions request sent to such a provider (its `gateway_model` applied per attempt). */
  readonly body: Record<string, unknown>;
  /** Fields of the client's request a chat provider cannot honour, dropped (named in a response header). */
  readonly dropped: string;
  /** The model the client named, written into the translated answer. */
  readonly model: string;
  /** The request's stop sequences, to say which one stopped the answer. */
  readonly stopSequences: readonly string[] | undefined;
}

/** The body of a request before it is read (shared: it is never written to). */
const NO_BODY = Buffer.alloc(0);

/**
 * Everything one request carries through the stages. Grants are released exactly once, when the
 * response closes (finished or abandoned), whatever stage the request reached.
 */
export class RequestContext {
  readonly startedAt = performance.now();
  // A request holds one abandon listener (its attempt) and two grants (in-flight slot, attempt)
  // when no limits apply: those live in fields, and only further ones in a list, sparing the
  // request two list allocations.
  /** Told if the client goes away before its response finished (upstream work to abort). */
  #abandonListener: AbandonListener | undefined;
  #moreAbandonListeners: AbandonListener[] | undefined;
  /**
   * The value of the `model` label in metrics and logs: the alias without a class suffix, empty
   * until resolved. Not a provider's model name (that is the provider's `gateway_model`).
   */
  modelLabel = '';
  route: AliasRoute | undefined;
  /** The authenticated key; undefined on an open target. */
  identity: KeyIdentity | undefined;
  /** Raw request body bytes as received. */
  body: Buffer = NO_BODY;
  /**
   * The parsed JSON body, when it was parsed (at most once), until the last attempt is sent
   * (the attempt loop lets it go then: nothing reads it afterwards).
   */
  json: Record<string, unknown> | undefined;
  /** The body has been parsed (`parseJsonBody`), whatever the outcome: it is never parsed twice. */
  bodyParsed = false;
  /** In strict mode, the supported endpoint the path names (spec 4.5). */
  strictEndpoint: StrictEndpoint | undefined;
  /** The request translated for providers that do not speak its surface (`translation.ts`). */
  translation: Translation | undefined;
  /**
   * Only the route's providers that speak the request's surface may serve it: it cannot be
   * translated for the others (a mixed pool), or they cannot answer it (a token count).
   */
  nativeOnly = false;
  /** The reasoning plan decided before any attempt (spec 2.6), applied per provider. */
  reasoning: ReasoningPlan | undefined;
  /** The request's server span (a no-op span when tracing is off). */
  span: Span = NOOP_SPAN;
  /**
   * How the request ended, once the gateway knows it while answering (`endedAs`); undefined leaves it
   * to the response's end (`finalOutcome`).
   */
  outcome: RequestOutcome | undefined;
  /** The client's `x-request-id` when it sent a usable one, else one made for it; on every response. */
  requestId = '';
  /** Upstream attempts sent so far. */
  attempts = 0;
  /**
   * The `x-ratelimit-*` headers of the limits the request was admitted or refused under, set at
   * admission; on every response after it. Undefined when it has none or they are switched off.
   */
  limitHeaders: OutgoingHttpHeaders | undefined;
  /** What the committed attempt served (undefined until one commits). */
  served: ServedRecord | undefined;
  /**
   * The gateway added `stream_options.include_usage` upstream (`usage.request_in_streams`): the
   * usage-only chunk is removed from the client's stream.
   */
  usageInjected = false;
  /** The request's spend reservations, settled when it ends; undefined without budgets. */
  spendHold: SpendHold | undefined;
  /** The largest of its reservations: what a served response whose usage never arrived is charged. */
  spendReserved = 0;
  /** The cost failed-over attempts reported (their providers' usage at their prices). */
  failedAttemptsCost = 0;
  /** The client's address, read when the request arrives (a cut connection no longer has one). */
  clientAddress: string | undefined;
  #firstGrant: Grant | undefined;
  #secondGrant: Grant | undefined;
  #moreGrants: Grant[] | undefined;
  private inflightCounted = false;
  private closed = false;

  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly table: RuntimeTable;
  readonly traffic: Traffic;
  /** Path without the query string. */
  readonly path: string;
  /** The API surface the path names; undefined for any other path (proxied as it is). */
  readonly surface: ApiSurface | undefined;

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
    this.surface = surfaceOf(path);
  }

  hold(grant: Grant): void {
    if (this.closed) grant.release();
    else if (this.#firstGrant === undefined) this.#firstGrant = grant;
    else if (this.#secondGrant === undefined) this.#secondGrant = grant;
    else (this.#moreGrants ??= []).push(grant);
  }

  /** Records how the request ended; the first cause recorded stands (a cut, then its error event). */
  endedAs(outcome: RequestOutcome): void {
    this.outcome ??= outcome;
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
    if (this.#abandonListener === undefined) this.#abandonListener = listener;
    else (this.#moreAbandonListeners ??= []).push(listener);
  }

  offAbandon(listener: AbandonListener): void {
    if (this.#abandonListener === listener) {
      this.#abandonListener = undefined;
      return;
    }
    const more = this.#moreAbandonListeners;
    const at = more?.indexOf(listener) ?? -1;
    if (at >= 0) more!.splice(at, 1);
  }

  /** Releases every grant; safe to call more than once. Aborts upstream work of an unfinished response. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Abort unfinished upstream work first: releasing grants disposes the attempts, which would
    // unsubscribe them before they heard of it.
    // Taken out of the fields first: a listener that unsubscribes while being told changes nothing.
    const listener = this.#abandonListener;
    const moreListeners = this.#moreAbandonListeners;
    this.#abandonListener = undefined;
    this.#moreAbandonListeners = undefined;
    if (!this.res.writableFinished) {
      listener?.abandoned();
      if (moreListeners !== undefined) for (const more of moreListeners) more.abandoned();
    }
    const first = this.#firstGrant;
    const second = this.#secondGrant;
    const moreGrants = this.#moreGrants;
    this.#firstGrant = undefined;
    this.#secondGrant = undefined;
    this.#moreGrants = undefined;
    first?.release();
    second?.release();
    if (moreGrants !== undefined) for (const grant of moreGrants) grant.release();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
