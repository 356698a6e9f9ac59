import type { Readable } from 'node:stream';

function ignore(): void {}

export type ReadStop = { kind: 'stopped' } | { kind: 'ended' } | { kind: 'failed'; error: Error };

/**
 * Feeds the upstream body to `onChunk` until it returns true (the stream is then paused, ready to be
 * handed on), the body ends, or it fails. Used before the commit point, when nothing has reached the
 * client yet and the attempt may still be abandoned.
 */
export function readUntil(body: Readable, onChunk: (chunk: Buffer) => boolean): Promise<ReadStop> {
  return new Promise((resolve) => {
    const finish = (stop: ReadStop): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      // Until the next reader attaches its own listener, an upstream error must not go unheard
      // (an 'error' without a listener ends the process); the reader finds it in `body.errored`.
      body.on('error', ignore);
      resolve(stop);
    };
    const onData = (chunk: Buffer): void => {
      if (onChunk(chunk)) {
        body.pause();
        finish({ kind: 'stopped' });
      }
    };
    const onEnd = (): void => finish({ kind: 'ended' });
    const onError = (error: Error): void => finish({ kind: 'failed', error });
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}

export type ReadAll =
  | { kind: 'complete'; bytes: Buffer }
  | { kind: 'too_large'; chunks: Buffer[] }
  | { kind: 'failed'; error: Error };

/** Reads a whole (non-streamed) body up to `maxBytes`; beyond that the chunks read so far come back. */
export async function readAll(body: Readable, maxBytes: number): Promise<ReadAll> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = await readUntil(body, (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    return size > maxBytes;
  });
  switch (stop.kind) {
    case 'ended':
      return { kind: 'complete', bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
    case 'stopped':
      return { kind: 'too_large', chunks };
    case 'failed':
      return { kind: 'failed', error: stop.error };
  }
}

/**
 * Drops an upstream body that will not be read. Destroying it before its end aborts the request and
 * reports that as an 'error' event on the body (`http/upstream-exchange.ts`), which would crash
 * the process without a listener, so one is attached first.
 */
export function discard(body: Readable): void {
  body.on('error', ignore);
  body.destroy();
}

/** How long a finished-with body may take to reach its end before its connection is given up. */
const DRAIN_GRACE_MS = 1_000;

/**
 * Lets a body the gateway no longer needs (after `[DONE]` or an error event) run to its end, so its
 * keep-alive connection goes back to the pool instead of being torn down; a body that does not end
 * within a short grace is discarded.
 */
export function release(body: Readable): void {
  body.on('error', ignore);
  if (body.readableEnded || body.destroyed) return;
  const timer = setTimeout(() => body.destroy(), DRAIN_GRACE_MS);
  timer.unref();
  body.once('end', () => clearTimeout(timer));
  body.once('close', () => clearTimeout(timer));
  body.on('data', ignore);
  body.resume();
}
