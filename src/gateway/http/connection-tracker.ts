import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Tracks what the drain must wait for: responses that have started and not yet closed. Sockets are
 * tracked too so the drain deadline can cut them and count them. The request handler reports each
 * response opening and closing (its own `close` listener does both jobs: one listener per response).
 */
export class ConnectionTracker {
  private readonly sockets = new Set<Socket>();
  /**
   * The newest response of each open socket (null once it closed): with pipelining, earlier ones
   * are queued before it. An entry lives as long as its socket: deleting and re-adding it per
   * request would make V8 copy the map to a new table every few dozen requests, and a table left
   * behind in the old generation keeps its successor, and every response they held, alive through
   * young collections until a full one (docs/performance.md, change 29).
   */
  private readonly latestBySocket = new Map<Socket, ServerResponse | null>();
  private activeResponses = 0;
  private idleWaiters: (() => void)[] = [];
  private draining = false;

  /** Tracks the sockets `server` accepts. */
  watch(server: Server): void {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => {
        this.sockets.delete(socket);
        this.latestBySocket.delete(socket);
      });
    });
  }

  /** Call once per request, before any await: the response counts until `closed`. */
  opened(req: IncomingMessage, res: ServerResponse): void {
    this.activeResponses++;
    const socket = req.socket;
    if (this.draining) {
      // A request pipelined behind a response already marked to close: keep the socket open for
      // it, and let this newest response carry `Connection: close` instead.
      const previous = this.latestBySocket.get(socket);
      if (previous && !previous.headersSent) previous.shouldKeepAlive = true;
      res.shouldKeepAlive = false;
    }
    this.latestBySocket.set(socket, res);
  }

  /** Call once per request, when its response emits `close` (finished or abandoned). */
  closed(req: IncomingMessage, res: ServerResponse): void {
    this.activeResponses--;
    const socket = req.socket;
    // Forget a closed response (it would keep its request's body alive on an idle socket).
    if (this.latestBySocket.get(socket) === res) this.latestBySocket.set(socket, null);
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
    return this.sockets.size;
  }

  /**
   * Admission has closed: the last response queued on each socket goes out with
   * `Connection: close`, so no client reuses a connection to a process that is going away. Only the
   * last one: marking an earlier pipelined response would close the socket under the later ones.
   */
  closeAfterResponses(): void {
    this.draining = true;
    for (const res of this.latestBySocket.values()) if (res && !res.headersSent) res.shouldKeepAlive = false;
  }

  /** Resolves when no response is in progress. */
  whenIdle(): Promise<void> {
    if (this.activeResponses === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Destroys every socket still open; returns how many were cut. */
  destroyAll(): number {
    let cut = 0;
    for (const socket of this.sockets) {
      if (!socket.destroyed) {
        cut++;
        socket.destroy();
      }
    }
    return cut;
  }
}
