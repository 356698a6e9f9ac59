import type { ServerResponse } from 'node:http';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
} as const;

/** Sends the 200 and the SSE headers right away, as vLLM's server does before the first token. */
export function openStream(res: ServerResponse): void {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
}

/** True while bytes can still be written (the client has not left and the body is not ended). */
export function writable(res: ServerResponse): boolean {
  return !res.destroyed && !res.writableEnded;
}

/** Writes unless the response is gone: a write after the client left would be an error event. */
export function writeFrame(res: ServerResponse, frame: string | Buffer): void {
  if (writable(res)) res.write(frame);
}
