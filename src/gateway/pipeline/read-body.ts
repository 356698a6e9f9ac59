import type { IncomingMessage } from 'node:http';

/** The body was larger than allowed; the rest of it is not read. */
export const BODY_TOO_LARGE = 'too_large';

export type BodyResult = Buffer | typeof BODY_TOO_LARGE;

const EMPTY = Buffer.alloc(0);

/**
 * Reads the whole request body and calls `done` once with it, refusing at the first byte past
 * `maxBytes` (and at once when the declared Content-Length is already too large), so a huge upload
 * never sits in memory. `done` runs synchronously when there is nothing to read.
 *
 * A client that goes away mid-body never gets `done` called: its response closes, which is what the
 * caller listens to (a listener here would be one more closure held by every request for nothing).
 *
 * A callback rather than a promise: the request path is one promise and one microtask turn
 * shorter for every request. The listeners stay attached after `done` (they do nothing then): the
 * request is over by the time they could fire again, and removing them costs more.
 */
export function readBody(req: IncomingMessage, maxBytes: number, done: (result: BodyResult) => void): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    done(BODY_TOO_LARGE);
    return;
  }
  if (declared === '0' || (declared === undefined && req.headers['transfer-encoding'] === undefined)) {
    // No body framing at all: nothing to read (GET, HEAD, body-less POST).
    done(EMPTY);
    return;
  }
  // Most bodies arrive in one chunk: a list is made only for a second one.
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    if (size > maxBytes) return;
    size += chunk.length;
    if (size > maxBytes) {
      // Stop buffering (the rest is not read, so 'end' does not come); the caller answers 413
      // and closes the connection.
      req.pause();
      first = chunks = undefined;
      done(BODY_TOO_LARGE);
      return;
    }
    if (first === undefined) first = chunk;
    else (chunks ??= [first]).push(chunk);
  });
  req.on('end', () => {
    if (size <= maxBytes) done(chunks === undefined ? (first ?? EMPTY) : Buffer.concat(chunks, size));
  });
}
