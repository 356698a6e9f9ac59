import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What the tracker knows of one open socket; the socket carries it under `TRACKED`. */
interface TrackedSocket {
  readonly socket: Socket;
  /** Position in the tracker's list of open sockets. */
  index: number;
  /**
   * The socket's newest response, null once it closed: with pipelining, earlier ones are queued
   * before it.
   */
  latest: ServerResponse | null;
}

const TRACKED = Symbol('gateway.trackedSocket');
type WatchedSocket = Socket & { [TRACKED]?: TrackedSocket };

/**
 * Tracks what the drain must wait for: responses that have started and not yet closed. Sockets are
 * tracked too so the drain deadline can cut them and count them. The request handler reports each
 * response opening and closing (its own `close` listener does both jobs: one listener per response).
 *
 * Neither sockets nor responses are kept in a Set or a Map. V8's hash tables are rebuilt every few
 * dozen deletions, and the table left behind keeps its entries and a link to its successor; once
 * such a table has been promoted to the old generation, young collections keep every successor
 * alive with everything it held, until a full collection.
 * A connection per request would delete an entry per request. Here each socket carries its own
 * record, and the list of open sockets is an array with O(1) removal (the last record takes the
 * removed one's place), which keeps nothing that closed.
 */
export class ConnectionTracker {
  private readonly open: TrackedSocket[] = [];
  private activeResponses = 0;
  private idleWaiters: (() => void)[] = [];
  private draining = false;

  /** Tracks the sockets `server` accepts. */
  watch(server: Server): void {
    server.on('connection', (socket: WatchedSocket) => {
      const record: TrackedSocket = { socket, index: this.open.length, latest: null };
      this.open.push(record);
      socket[TRACKED] = record;
      socket.once('close', () => this.forget(record));
    });
  }

  private forget(record: TrackedSocket): void {
    const last = this.open.pop()!;
    if (last !== record) {
      last.index = record.index;
      this.open[record.index] = last;
    }
    record.latest = null;
  }

  /** Call once per request, before any await: the response counts until `closed`. */
  opened(req: IncomingMessage, res: ServerResponse): void {
    this.activeResponses++;
    const record = (req.socket as WatchedSocket)[TRACKED];
    if (this.draining) {
      // A request pipelined behind a response already marked to close: keep the socket open for
      // it, and let this newest response carry `Connection: close` instead.
      const previous = record?.latest;
      if (previous && !previous.headersSent) previous.shouldKeepAlive = true;
      res.shouldKeepAlive = false;
    }
    if (record !== undefined) record.latest = res;
  }

  /** Call once per request, when its response emits `close` (finished or abandoned). */
  closed(req: IncomingMessage, res: ServerResponse): void {
    this.activeResponses--;
    const record = (req.socket as WatchedSocket)[TRACKED];
    // Forget a closed response (it would keep its request's body alive on an idle socket).
    if (record !== undefined && record.latest === res) record.latest = null;
    if (this.activeResponses === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  get active(): number {
    return this.activeResponses;
  }

  get openSockets(): number {
    return this.open.length;
  }

  /**
   * Shutdown has begun: the last response queued on each socket, and every response after it, goes
   * out with `Connection: close`, so no client reuses a connection to a process that is going
   * away. Only the last one: marking an earlier pipelined response would close the socket under the
   * later ones.
   */
  closeAfterResponses(): void {
    this.draining = true;
    for (const { latest } of this.open) if (latest && !latest.headersSent) latest.shouldKeepAlive = false;
  }

  /** Resolves when no response is in progress. */
  whenIdle(): Promise<void> {
    if (this.activeResponses === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Destroys every socket still open; returns how many were cut. */
  destroyAll(): number {
    let cut = 0;
    // Copied first: a destroyed socket leaves the list (its 'close' may come later, or at once).
    for (const { socket } of [...this.open]) {
      if (!socket.destroyed) {
        cut++;
        socket.destroy();
      }
    }
    return cut;
  }
}
