import type { IncomingMessage } from 'node:http';

export type BodyResult = { kind: 'ok'; body: Buffer } | { kind: 'too_large' } | { kind: 'aborted' };

const EMPTY = Buffer.alloc(0);

/**
 * Reads the whole request body, refusing at the first byte past `maxBytes` (and at once when the
 * declared Content-Length is already too large), so a huge upload never sits in memory.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyResult> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.resolve({ kind: 'too_large' });
  if (declared === '0' || (declared === undefined && req.headers['transfer-encoding'] === undefined)) {
    // No body framing at all: nothing to read (GET, HEAD, body-less POST).
    return Promise.resolve({ kind: 'ok', body: EMPTY });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: BodyResult): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('close', onAbort);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        // Stop buffering; the caller answers 413 and closes the connection.
        req.pause();
        settle({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void =>
      settle({ kind: 'ok', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onAbort = (): void => settle({ kind: 'aborted' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('close', onAbort);
  });
}
