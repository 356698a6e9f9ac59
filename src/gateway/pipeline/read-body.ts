import type { IncomingMessage } from 'node:http';

/** The body was larger than allowed; the rest of it is not read. */
export const BODY_TOO_LARGE = 'too_large';
/** The client went away before the body ended. */
export const BODY_ABORTED = 'aborted';

export type BodyResult = Buffer | typeof BODY_TOO_LARGE | typeof BODY_ABORTED;

const EMPTY = Buffer.alloc(0);

/**
 * Reads the whole request body and calls `done` once with it, refusing at the first byte past
 * `maxBytes` (and at once when the declared Content-Length is already too large), so a huge upload
 * never sits in memory. `done` runs synchronously when there is nothing to read.
 *
 * A callback rather than a promise: the request path is one promise and one microtask turn
 * shorter for every request. The listeners stay attached after `done` (they do nothing then): the
 * request is over by the time they could fire again, and removing four listeners costs more.
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
  let settled = false;
  const settle = (result: BodyResult): void => {
    if (settled) return;
    settled = true;
    done(result);
  };
  req.on('data', (chunk: Buffer) => {
    if (settled) return;
    size += chunk.length;
    if (size > maxBytes) {
      // Stop buffering; the caller answers 413 and closes the connection.
      req.pause();
      first = chunks = undefined;
      settle(BODY_TOO_LARGE);
      return;
    }
    if (first === undefined) first = chunk;
    else (chunks ??= [first]).push(chunk);
  });
  req.on('end', () => settle(chunks === undefined ? (first ?? EMPTY) : Buffer.concat(chunks, size)));
  // A client gone mid-body closes the request (with the error on `req.errored`); without an
  // 'error' listener Node does not emit the error, so 'close' alone hears every abort.
  req.on('close', () => settle(BODY_ABORTED));
}
