/**
 * The fixed-response upstream of the benchmark: raw `node:net` sockets with a minimal HTTP/1.1
 * reader (request line, headers, Content-Length body), so it costs next to nothing and leaves the
 * two cores to the load generator and the proxy under test.
 *
 * - Any request: a static `chat.completion` JSON body (one prebuilt write).
 * - With `x-bench-stream-chunks: N`: an SSE body of N small `chat.completion.chunk` events and
 *   `[DONE]`, chunked transfer encoding. Unpaced (default) the events are separate back-to-back
 *   writes; with `x-bench-interval-ms: T` one event is written every T ms (a shared ticker per
 *   interval), the first with the headers and `[DONE]` on its own tick.
 * - `POST /v1/messages` (Anthropic's Messages API, a query string allowed): the same in that API's
 *   terms, a static `message` body, or with the stream header a Messages event stream written at the
 *   same places (`message_start` and `content_block_start` first, one `content_block_delta` per
 *   token, `content_block_stop` and `message_delta` last, `message_stop` on its own tick).
 * - `GET /__bench/stats`: requests served and connections accepted, per listening port (JSON), to
 *   check where a pool's traffic went and whether a proxy keeps its upstream connections alive.
 *
 * Run: `node bench/upstream.ts [--ports N]`; prints `{"msg":"listening","ports":[...]}`.
 * Keep-alive always; requests on one connection are answered in order. Chunked request bodies are
 * refused (every client of the benchmark sends Content-Length).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import {
  CHAT_COMPLETION,
  INTERVAL_HEADER,
  MESSAGE,
  MESSAGES_PATH,
  MESSAGES_SSE_FIRST,
  MESSAGES_SSE_LAST,
  MESSAGES_SSE_STOP,
  MESSAGES_SSE_TOKEN,
  SSE_DONE,
  SSE_FIRST,
  SSE_LAST,
  SSE_TOKEN,
  STREAM_HEADER,
} from './support/payloads.ts';

const MAX_HEAD_BYTES = 64 * 1024;

const SSE_HEAD =
  'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n' +
  'transfer-encoding: chunked\r\n\r\n';
const frame = (event: string): Buffer =>
  Buffer.from(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`);

/** One API's prebuilt writes: the whole JSON response, and a stream's writes in order. */
interface Answers {
  json: Buffer;
  headAndFirst: Buffer;
  token: Buffer;
  last: Buffer;
  doneAndEnd: Buffer;
}

function answers(json: string, first: string, token: string, last: string, done: string): Answers {
  return {
    json: Buffer.from(
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    ),
    headAndFirst: Buffer.concat([Buffer.from(SSE_HEAD), frame(first)]),
    token: frame(token),
    last: frame(last),
    doneAndEnd: Buffer.concat([frame(done), Buffer.from('0\r\n\r\n')]),
  };
}

const CHAT_ANSWERS = answers(CHAT_COMPLETION, SSE_FIRST, SSE_TOKEN, SSE_LAST, SSE_DONE);
const MESSAGES_ANSWERS = answers(
  MESSAGE,
  MESSAGES_SSE_FIRST,
  MESSAGES_SSE_TOKEN,
  MESSAGES_SSE_LAST,
  MESSAGES_SSE_STOP,
);

/** The Messages API's answers for its path (with or without a query string), chat's for any other. */
function answersFor(path: string): Answers {
  const isMessages =
    path.startsWith(MESSAGES_PATH) &&
    (path.length === MESSAGES_PATH.length || path[MESSAGES_PATH.length] === '?');
  return isMessages ? MESSAGES_ANSWERS : CHAT_ANSWERS;
}
const BAD_REQUEST = Buffer.from('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');

interface RequestHead {
  method: string;
  path: string;
  contentLength: number;
  chunked: boolean;
  close: boolean;
  streamChunks: number;
  intervalMs: number;
}

function headerValue(lowerHead: string, name: string): string | undefined {
  const at = lowerHead.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const start = at + name.length + 3;
  const end = lowerHead.indexOf('\r\n', start);
  return lowerHead.slice(start, end < 0 ? undefined : end).trim();
}

function parseHead(head: string): RequestHead | undefined {
  const lineEnd = head.indexOf('\r\n');
  const requestLine = head.slice(0, lineEnd < 0 ? undefined : lineEnd).split(' ');
  if (requestLine.length !== 3) return undefined;
  const lower = head.toLowerCase();
  const length = headerValue(lower, 'content-length');
  const chunks = headerValue(lower, STREAM_HEADER);
  const interval = headerValue(lower, INTERVAL_HEADER);
  return {
    method: requestLine[0]!,
    path: requestLine[1]!,
    contentLength: length === undefined ? 0 : Number(length),
    chunked: headerValue(lower, 'transfer-encoding') !== undefined,
    close: headerValue(lower, 'connection') === 'close',
    streamChunks: chunks === undefined ? 0 : Math.max(1, Number(chunks)),
    intervalMs: interval === undefined ? 0 : Number(interval),
  };
}

/** One paced stream: how many events are still owed to its socket. */
interface PacedStream {
  connection: Connection;
  answers: Answers;
  /** Token events still to write before the last chunk, `[DONE]` and the end. */
  tokensLeft: number;
  stage: 'tokens' | 'last' | 'done';
}

/** One shared timer per pacing interval writes the next event of every stream on it. */
const tickers = new Map<number, { streams: Set<PacedStream>; timer: NodeJS.Timeout }>();

function pace(stream: PacedStream, intervalMs: number): void {
  let ticker = tickers.get(intervalMs);
  if (!ticker) {
    const streams = new Set<PacedStream>();
    const timer = setInterval(() => {
      for (const paced of streams) {
        if (advance(paced)) streams.delete(paced);
      }
      if (streams.size === 0) {
        clearInterval(timer);
        tickers.delete(intervalMs);
      }
    }, intervalMs);
    ticker = { streams, timer };
    tickers.set(intervalMs, ticker);
  }
  ticker.streams.add(stream);
}

/** Writes the stream's next event; true when the stream is over. */
function advance(stream: PacedStream): boolean {
  const { connection, answers } = stream;
  if (connection.socket.destroyed) return true;
  if (stream.stage === 'tokens') {
    if (stream.tokensLeft > 0) {
      stream.tokensLeft--;
      connection.socket.write(answers.token);
      return false;
    }
    stream.stage = 'last';
  }
  if (stream.stage === 'last') {
    stream.stage = 'done';
    connection.socket.write(answers.last);
    return false;
  }
  connection.socket.write(answers.doneAndEnd);
  connection.responseDone();
  return true;
}

class Connection {
  readonly socket: Socket;
  private readonly port: number;
  private pending: Buffer | undefined;
  private head: RequestHead | undefined;
  private bodyLeft = 0;
  private busy = false;
  /** The paced stream in progress was asked for with `Connection: close`. */
  private closeAfter = false;

  constructor(socket: Socket, port: number) {
    this.socket = socket;
    this.port = port;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.pending = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
      this.process();
    });
    socket.on('error', () => socket.destroy());
  }

  /** Reads as many complete requests as the buffered bytes hold, answering each in order. */
  private process(): void {
    while (!this.busy && this.pending) {
      if (this.head === undefined) {
        const end = this.pending.indexOf('\r\n\r\n');
        if (end < 0) {
          if (this.pending.length > MAX_HEAD_BYTES) this.fail();
          return;
        }
        const head = parseHead(this.pending.toString('latin1', 0, end));
        this.consume(end + 4);
        if (!head || head.chunked) return this.fail();
        this.head = head;
        this.bodyLeft = head.contentLength;
      }
      if (this.bodyLeft > 0) {
        if (!this.pending) return;
        const take = Math.min(this.bodyLeft, this.pending.length);
        this.bodyLeft -= take;
        this.consume(take);
        if (this.bodyLeft > 0) return;
      }
      const head = this.head;
      this.head = undefined;
      this.respond(head);
    }
  }

  private consume(bytes: number): void {
    if (!this.pending) return;
    this.pending = bytes >= this.pending.length ? undefined : this.pending.subarray(bytes);
  }

  private fail(): void {
    this.pending = undefined;
    this.socket.end(BAD_REQUEST);
  }

  private respond(head: RequestHead): void {
    served.set(this.port, (served.get(this.port) ?? 0) + 1);
    if (head.method === 'GET' && head.path === '/__bench/stats') {
      const body = JSON.stringify({
        requests: Object.fromEntries(served),
        connections: Object.fromEntries(accepted),
      });
      this.socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
    } else if (head.streamChunks > 0) {
      const answers = answersFor(head.path);
      this.busy = true;
      this.socket.write(answers.headAndFirst);
      const tokens = Math.max(0, head.streamChunks - 2);
      if (head.intervalMs > 0) {
        pace({ connection: this, answers, tokensLeft: tokens, stage: 'tokens' }, head.intervalMs);
        if (head.close) this.closeAfter = true;
        return;
      }
      for (let i = 0; i < tokens; i++) this.socket.write(answers.token);
      if (head.streamChunks > 1) this.socket.write(answers.last);
      this.socket.write(answers.doneAndEnd);
      this.busy = false;
    } else {
      this.socket.write(answersFor(head.path).json);
    }
    if (head.close) this.socket.end();
  }

  /** A paced stream ended: answer whatever was pipelined behind it. */
  responseDone(): void {
    this.busy = false;
    if (this.closeAfter) {
      this.socket.end();
      return;
    }
    this.process();
  }
}

const served = new Map<number, number>();
const accepted = new Map<number, number>();

async function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error('no port'));
      else resolve(address.port);
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { ports: { type: 'string', default: '1' } } });
  const count = Number(values.ports);
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    let port = 0;
    const server = createServer((socket) => {
      accepted.set(port, (accepted.get(port) ?? 0) + 1);
      new Connection(socket, port);
    });
    port = await listen(server);
    servers.push(server);
    ports.push(port);
  }
  process.stdout.write(`${JSON.stringify({ msg: 'listening', ports })}\n`);
  const stop = (): void => {
    for (const server of servers) server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

await main();
