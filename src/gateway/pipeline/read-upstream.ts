import type { Readable } from 'node:stream';
import type { BodyConsumer, UpstreamResponse } from '../http/upstream-exchange.js';

function ignore(): void {}

export type ReadStop = { kind: 'stopped' } | { kind: 'ended' } | { kind: 'failed'; error: Error };

const STOPPED: ReadStop = { kind: 'stopped' };
const ENDED: ReadStop = { kind: 'ended' };

/**
 * `readUntil` for a body taken chunk by chunk (`UpstreamResponse.consume`): when `onChunk`
 * returns true the response is paused, and whoever consumes it next resumes it.
 */
export function consumeUntil(
  response: UpstreamResponse,
  onChunk: (chunk: Buffer) => boolean,
): Promise<ReadStop> {
  return new Promise((resolve) => response.consume(new ReaderUntil(response, onChunk, resolve)));
}

class ReaderUntil implements BodyConsumer {
  readonly #response: UpstreamResponse;
  readonly #onChunk: (chunk: Buffer) => boolean;
  readonly #resolve: (stop: ReadStop) => void;
  #done = false;

  constructor(
    response: UpstreamResponse,
    onChunk: (chunk: Buffer) => boolean,
    resolve: (stop: ReadStop) => void,
  ) {
    this.#response = response;
    this.#onChunk = onChunk;
    this.#resolve = resolve;
  }

  bodyData(chunk: Buffer): void {
    if (this.#done || !this.#onChunk(chunk)) return;
    this.#response.pause();
    this.#finish(STOPPED);
  }

  bodyEnded(): void {
    this.#finish(ENDED);
  }

  bodyFailed(error: Error): void {
    this.#finish({ kind: 'failed', error });
  }

  #finish(stop: ReadStop): void {
    if (this.#done) return;
    this.#done = true;
    this.#resolve(stop);
  }
}

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
