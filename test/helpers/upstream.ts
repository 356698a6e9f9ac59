import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Header names and values as sent, in order (duplicates and case kept). */
  rawHeaders: string[];
  /** The body as UTF-8 text. */
  body: string;
  /** The body's exact bytes. */
  bytes: Buffer;
}

/** The smallest valid non-streaming chat completion. */
export const OK_COMPLETION = {
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'up',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
};

/** One SSE event carrying a text-only chat completion chunk with `content`, as a provider writes it. */
export function chatChunkEvent(content: string): string {
  return `data: ${JSON.stringify({
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  })}\n\n`;
}

export type UpstreamHandler = (
  req: RecordedRequest,
  res: ServerResponse,
  raw: IncomingMessage,
) => void | Promise<void>;

export interface RecordingUpstream {
  server: Server;
  /** `http://127.0.0.1:<port>` (or the host it was started on) */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Replaces the response behaviour for later requests. */
  respondWith: (handler: UpstreamHandler) => void;
  close: () => Promise<void>;
}

/** A JSON completion, like a provider's non-streaming answer. */
export function jsonReply(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): UpstreamHandler {
  return (_req, res) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };
}

/** Streams `frames` as SSE `data:` events, `gapMs` apart, then `[DONE]`. */
export function sseReply(
  frames: unknown[],
  gapMs = 0,
  headers: Record<string, string> = {},
): UpstreamHandler {
  return async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
    for (const frame of frames) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(frame)}\n\n`);
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    }
    res.end('data: [DONE]\n\n');
  };
}

/**
 * A loopback HTTP server that records every request and answers with a programmable handler. By
 * default on 127.0.0.1 and a port the OS chooses; `at` puts it elsewhere on loopback (127.0.0.2:P
 * and 127.0.0.3:P stand for pods serving one port).
 */
export async function startUpstream(
  handler: UpstreamHandler = jsonReply(200, { ok: true }),
  at: { host?: string; port?: number } = {},
): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  let current = handler;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: bytes.toString('utf8'),
        bytes,
      };
      requests.push(recorded);
      void Promise.resolve(current(recorded, res, req)).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  });
  const host = at.host ?? '127.0.0.1';
  server.listen(at.port ?? 0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    url: `http://${host}:${port}`,
    port,
    requests,
    respondWith: (next) => {
      current = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A full non-streaming chat completion as a provider writes it (with usage), `extra` merged on top. */
export function completion(model: string, extra: Record<string, unknown> = {}) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [
      { index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop', logprobs: null },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    ...extra,
  };
}

/** A port nothing listens on: bound by the OS, then released. */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 1;
}
