/**
 * List/watch of a collection through @kubernetes/client-node: a list (narrowed by a field or label
 * selector) gives the objects and a resourceVersion; a watch from that resourceVersion streams
 * every change after it. A watch that ends (the server's timeout, a dropped connection, an error)
 * is resumed from the last resourceVersion seen; `410 Gone` (that version was compacted away) lists
 * again. Errors back off exponentially (with jitter) up to a ceiling, so a returning API server is
 * noticed within that ceiling; a watch that hears nothing for too long (a hung server or network)
 * is abandoned and started again; one whose response does not begin within a deadline is given up
 * (client-node's watch takes no deadline of its own, and its request cannot be aborted before its
 * response begins: a late one is aborted then), so a hung server holds at most one request per
 * deadline and backoff.
 */
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { callOptions, describeFailure, type CallFailure, type CallOptions } from './api-calls.js';

export type WatchVerb = 'list' | 'watch';

/** An object as the watch reads it: its name and version, the rest is the caller's. */
export interface Watched {
  readonly metadata?: { readonly name?: string; readonly resourceVersion?: string };
}

/** What is watched: a collection's path, a selector narrowing it, and its list call. */
export interface WatchedCollection<T extends Watched> {
  /** The collection's URL path, e.g. `/apis/discovery.k8s.io/v1/namespaces/team/endpointslices`. */
  readonly path: string;
  readonly selector: { readonly fieldSelector?: string; readonly labelSelector?: string };
  list(options: CallOptions): Promise<{ metadata?: { resourceVersion?: string }; items?: T[] }>;
}

export interface ListWatchHandlers<T> {
  /** A list: the objects as they are now, replacing everything heard before. */
  listed(objects: readonly T[]): void;
  /** One object added, changed or deleted (also unchanged ones, on a resumed watch). */
  changed(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
  /** The API server answered: after each list, and each time a watch connected. */
  answered(): void;
  /** A call failed; called on every failure (the caller tells repeats apart). */
  failing(verb: WatchVerb, failure: CallFailure): void;
  /** A handler threw: a bug, reported here instead of being lost in the client's stream. */
  error(error: unknown): void;
}

interface WatchTiming {
  /** Deadline of a list call. */
  listDeadlineMs: number;
  /**
   * A watch whose response head has not come within this is given up (the API server sends it at
   * once; a connection that hangs, as to an address being re-routed, would otherwise hold the watch
   * until the idle limit).
   */
  connectDeadlineMs: number;
  /** The server ends a watch after this long (randomized up to 1.5x, so replicas spread out). */
  watchSeconds: number;
  /** A watch that hears nothing (not even a bookmark) for watchSeconds x 1.5 plus this is abandoned. */
  idleMarginMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
}

const WATCH_TIMING: WatchTiming = {
  listDeadlineMs: 10_000,
  connectDeadlineMs: 10_000,
  watchSeconds: 60,
  idleMarginMs: 30_000,
  backoffInitialMs: 500,
  backoffMaxMs: 5_000,
};

/** A watch that ends sooner than this without an event is treated as a failure (no busy loop). */
const MIN_WATCH_MS = 1000;

/** A failed call and the verb it used. */
class FailedCall extends Error {
  readonly verb: WatchVerb;
  override readonly cause: unknown;
  constructor(verb: WatchVerb, cause: unknown) {
    super(`${verb} failed`);
    this.verb = verb;
    this.cause = cause;
  }
}

export class ListWatch<T extends Watched> {
  private readonly watcher: Watch;
  private resourceVersion: string | undefined;
  private needsList = true;
  /** 410 Gone answers since a watch last lasted or brought news. */
  private goneInARow = 0;
  private stopped = false;
  private backoffMs: number;
  private current: AbortController | undefined;
  private wake: (() => void) | undefined;
  private readonly collection: WatchedCollection<T>;
  private readonly handlers: ListWatchHandlers<T>;
  private readonly timing: WatchTiming;

  constructor(kubeConfig: KubeConfig, collection: WatchedCollection<T>, handlers: ListWatchHandlers<T>) {
    this.collection = collection;
    this.handlers = handlers;
    this.timing = WATCH_TIMING;
    this.watcher = new Watch(kubeConfig);
    this.backoffMs = WATCH_TIMING.backoffInitialMs;
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.current?.abort();
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (this.needsList) await this.list();
        const heard = await this.watchOnce();
        // Only a watch that lasted, or brought news, proves the server well: one that the server
        // (or a proxy) ends at once keeps the backoff growing.
        if (heard.events || heard.ms >= MIN_WATCH_MS) {
          this.backoffMs = this.timing.backoffInitialMs;
          this.goneInARow = 0;
        } else await this.pause();
      } catch (error) {
        if (this.stopped) return;
        const verb = error instanceof FailedCall ? error.verb : 'watch';
        const failure = describeFailure(error instanceof FailedCall ? error.cause : error);
        if (failure.kind === 'gone') {
          // The resourceVersion is too old to resume from: list again, at once the first time; a
          // server that answers 410 to the version of a fresh list is waited out like an error.
          this.needsList = true;
          if (this.goneInARow++ > 0) await this.pause();
          continue;
        }
        this.handlers.failing(verb, failure);
        await this.pause();
      }
    }
  }

  /** Waits out the backoff (doubling up to the ceiling, with +-20% jitter); stop() cuts it short. */
  private async pause(): Promise<void> {
    const ms = this.backoffMs * (0.8 + Math.random() * 0.4);
    this.backoffMs = Math.min(this.backoffMs * 2, this.timing.backoffMaxMs);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  /** Runs a handler; a throw is a bug, reported, and must not end the watch. */
  private deliver(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.handlers.error(error);
    }
  }

  private async list(): Promise<void> {
    let list: { metadata?: { resourceVersion?: string }; items?: T[] };
    try {
      list = await this.collection.list(callOptions(this.timing.listDeadlineMs));
    } catch (error) {
      throw new FailedCall('list', error);
    }
    if (this.stopped) return;
    this.resourceVersion = list.metadata?.resourceVersion;
    this.needsList = false;
    this.backoffMs = this.timing.backoffInitialMs;
    this.deliver(() => this.handlers.listed(list.items ?? []));
    this.deliver(() => this.handlers.answered());
  }

  /** One watch, from the last resourceVersion, until the server ends it (resolves) or it fails. */
  private async watchOnce(): Promise<{ events: boolean; ms: number }> {
    const started = Date.now();
    const seconds = Math.round(this.timing.watchSeconds * (1 + Math.random() * 0.5));
    const idleLimitMs = seconds * 1000 + this.timing.idleMarginMs;
    return new Promise((resolve, reject) => {
      let settled = false;
      let events = false;
      let lastHeard = Date.now();
      let controller: AbortController | undefined;
      const finish = (error?: FailedCall): void => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        clearTimeout(connectTimer);
        controller?.abort();
        if (this.current === controller) this.current = undefined;
        if (error === undefined) resolve({ events, ms: Date.now() - started });
        else reject(error);
      };
      // A hung connection (the server stopped answering, the network dropped it silently) ends no
      // watch by itself: give it up and start another.
      const watchdog = setInterval(
        () => {
          if (Date.now() - lastHeard > idleLimitMs)
            finish(
              new FailedCall('watch', {
                name: 'TimeoutError',
                message: `nothing heard for ${idleLimitMs} ms`,
              }),
            );
        },
        Math.min(5000, idleLimitMs),
      );
      watchdog.unref();
      const connectTimer = setTimeout(() => {
        if (controller === undefined)
          finish(
            new FailedCall('watch', {
              name: 'TimeoutError',
              message: `no response within ${this.timing.connectDeadlineMs} ms`,
            }),
          );
      }, this.timing.connectDeadlineMs);
      connectTimer.unref();
      const onEvent = (type: string, object: unknown): void => {
        if (settled || this.stopped) return;
        lastHeard = Date.now();
        events = true;
        if (type === 'ERROR') {
          // A Status object: 410 Gone above all (the resourceVersion was compacted away).
          finish(new FailedCall('watch', { code: (object as { code?: number }).code, body: object }));
          return;
        }
        const watched = object as T;
        const version = watched.metadata?.resourceVersion;
        if (version) this.resourceVersion = version;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
          this.deliver(() => this.handlers.changed(type, watched));
        // BOOKMARK: only its resourceVersion matters.
      };
      void this.watcher
        .watch(
          this.collection.path,
          {
            ...this.collection.selector,
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: seconds,
          },
          onEvent,
          (error: unknown) => {
            if (this.stopped) finish();
            else finish(error ? new FailedCall('watch', error) : undefined);
          },
        )
        .then(
          (abort) => {
            controller = abort;
            clearTimeout(connectTimer);
            if (settled || this.stopped) {
              abort.abort();
              return;
            }
            this.current = abort;
            this.deliver(() => this.handlers.answered());
          },
          (error: unknown) => finish(new FailedCall('watch', error)),
        );
    });
  }
}
