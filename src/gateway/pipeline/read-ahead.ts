import type { BodyConsumer, UpstreamResponse } from '../http/upstream-exchange.js';

/**
 * Reading a provider's body before the commit point, while the attempt may still be abandoned:
 * nothing read here has reached the client.
 */

export type ReadStop = { kind: 'stopped' } | { kind: 'ended' } | { kind: 'failed'; error: Error };

const STOPPED: ReadStop = { kind: 'stopped' };
const ENDED: ReadStop = { kind: 'ended' };

/**
 * Feeds the body to `onChunk` until it returns true (the response is then paused, and whoever
 * consumes it next resumes it), the body ends, or it fails.
 */
export function readUntil(
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

export type ReadWhole =
  | { kind: 'complete'; bytes: Buffer }
  /** Larger than the limit: the chunks read so far, the rest waiting (paused). */
  | { kind: 'too_large'; chunks: Buffer[] }
  | { kind: 'failed'; error: Error };

/** Reads a whole (non-streamed) body up to `maxBytes`. */
export async function readWhole(response: UpstreamResponse, maxBytes: number): Promise<ReadWhole> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = await readUntil(response, (chunk) => {
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
