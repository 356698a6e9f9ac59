import { isEventStream } from '../http/headers.js';
import type { UpstreamResponse } from '../http/upstream-exchange.js';
import type { MaybePromise } from '../limits/types.js';
import { SseParser } from '../../lib/sse.js';
import {
  INVALID_UPSTREAM_STATUS,
  SseSanitizeTransform,
  embeddedError,
  embeddedStatus,
  invalidUpstreamResponseBody,
  standaloneJsonResponse,
  standaloneUpstreamErrorBody,
  standardizeUpstreamError,
  strictJsonResponse,
  type JsonResponseOutcome,
} from '../strict/index.js';
import { recordResponseSummary } from '../telemetry/tracing.js';
import type { Attempt } from './attempt.js';
import {
  answerError,
  answerJson,
  cutResponse,
  logAndDropErrorBody,
  passThrough,
  pumpTransformed,
  startTransformedStream,
  type CommitDeps,
} from './commit.js';
import type { RequestContext } from './context.js';
import { consumeUntil, discard, readAll, readUntil } from './read-upstream.js';

const ERROR_KEY = Buffer.from('"error"');

/** Largest non-streamed response body the gateway reads to inspect or sanitize it. */
const MAX_INSPECTED_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Why an attempt was given up before anything reached the client. `client_gone` is the client's
 * doing, not the provider's: it is never failed over and never counts against the provider.
 */
export type AbandonReason = 'status' | 'embedded_error' | 'deadline' | 'connection_error' | 'client_gone';

export type ServeOutcome =
  /** The response is being (or has been) written to the client by this attempt. */
  | { kind: 'committed' }
  /** Nothing was sent; the caller may try the next provider. */
  | { kind: 'abandoned'; reason: AbandonReason; status?: number; error?: Error };

/** The outcome of every attempt that answered the client (shared: it carries nothing else). */
const COMMITTED: ServeOutcome = { kind: 'committed' };
/** The client left before the commit point (shared, like COMMITTED). */
const CLIENT_GONE: ServeOutcome = { kind: 'abandoned', reason: 'client_gone' };

export interface ServeDeps extends CommitDeps {
  sseBufferLimit: number;
}

function isJson(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.includes('json');
}

/**
 * An error embedded in a 200 counts as its status: an outcome for the share controller, and a
 * failover trigger when that status is a fallback status and another attempt is possible.
 */
function abandonsFor(ctx: RequestContext, attempt: Attempt, status: number, canRetry: boolean): boolean {
  attempt.probe?.status(status);
  return canRetry && ctx.route!.fallback?.onStatus(status) === true;
}

function logOverflow(ctx: RequestContext, attempt: Attempt, deps: ServeDeps): void {
  deps.logger.warn(
    { model: ctx.model, provider: attempt.provider.name, limit: deps.sseBufferLimit },
    'unfinished SSE event exceeded --sse-buffer-limit; stream cut',
  );
}

function parseJsonSafe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Handles one attempt's response up to the commit point and, once committed, hands the rest to the
 * streaming writers. Before the commit point nothing reaches the client, so the attempt can still be
 * abandoned (failover never produces a spliced or duplicated stream): on a fallback status, on an
 * error embedded in a 200 (first SSE data frame or JSON body), or when the first-token deadline
 * fires. `canRetry` says whether abandoning is possible at all.
 */
export function serveResponse(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  canRetry: boolean,
  deps: ServeDeps,
): MaybePromise<ServeOutcome> {
  const status = response.statusCode;
  const fallback = ctx.route!.fallback;
  attempt.probe?.status(status);

  if (status < 200 || status >= 300) {
    if (canRetry && fallback?.onStatus(status)) {
      discard(response.body);
      return { kind: 'abandoned', reason: 'status', status };
    }
    commitErrorStatus(ctx, attempt, response, deps);
    return COMMITTED;
  }

  if (isEventStream(response.headers['content-type'])) {
    return attempt.mode.kind === 'raw'
      ? serveRawStream(ctx, attempt, response, canRetry, deps)
      : serveTransformedStream(ctx, attempt, response, canRetry, deps);
  }
  return serveBody(ctx, attempt, response, canRetry, deps);
}

/** A non-2xx answer that is not failed over: passed through, standardized or replaced by mode. */
function commitErrorStatus(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  deps: ServeDeps,
): void {
  const status = response.statusCode;
  const mode = attempt.mode;
  if (mode.kind === 'raw') {
    passThrough(ctx, attempt, response, [], deps);
    return;
  }
  if (mode.kind === 'strict') {
    const outcome = standardizeUpstreamError(status, mode.trusted);
    if (outcome.kind === 'passthrough') {
      passThrough(ctx, attempt, response, [], deps);
      return;
    }
    logAndDropErrorBody(ctx, attempt, status, response.body, deps);
    answerError(ctx, attempt, outcome.status, outcome.body);
    return;
  }
  logAndDropErrorBody(ctx, attempt, status, response.body, deps);
  answerError(ctx, attempt, status, standaloneUpstreamErrorBody(status));
}

/**
 * Non-streamed 2xx bodies: passed through at once when nothing needs reading (answered without a
 * promise: the common case of a last attempt in raw mode), read whole when they must be inspected
 * or sanitized.
 */
function serveBody(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  canRetry: boolean,
  deps: ServeDeps,
): MaybePromise<ServeOutcome> {
  const inspect = canRetry && isJson(response.headers['content-type']);
  if (attempt.mode.kind === 'raw' && !inspect) {
    passThrough(ctx, attempt, response, [], deps);
    return COMMITTED;
  }
  return serveReadBody(ctx, attempt, response, canRetry, deps);
}

/** A non-streamed body read whole: inspected for an embedded error, sanitized, or both. */
async function serveReadBody(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  canRetry: boolean,
  deps: ServeDeps,
): Promise<ServeOutcome> {
  const mode = attempt.mode;
  const read = await readAll(response.body, MAX_INSPECTED_BODY_BYTES);
  if (read.kind === 'failed') return abandonedByFailure(ctx, attempt, read.error);
  if (read.kind === 'complete' && attempt.span.isRecording()) {
    // Response model and token usage, for the attempt span, when the body is read anyway.
    recordResponseSummary(attempt.span, parseJsonSafe(read.bytes.toString('utf8')));
  }
  if (read.kind === 'too_large') {
    if (mode.kind === 'raw') {
      passThrough(ctx, attempt, response, read.chunks, deps);
    } else {
      discard(response.body);
      answerError(ctx, attempt, INVALID_UPSTREAM_STATUS, invalidUpstreamResponseBody());
    }
    return COMMITTED;
  }

  if (mode.kind === 'raw') {
    // Parse only a body that can carry an embedded error at all.
    const error = read.bytes.includes(ERROR_KEY)
      ? embeddedError(parseJsonSafe(read.bytes.toString('utf8')))
      : undefined;
    if (error !== undefined) {
      const embedded = embeddedStatus(error);
      if (abandonsFor(ctx, attempt, embedded, canRetry)) {
        return { kind: 'abandoned', reason: 'embedded_error', status: embedded };
      }
    }
    passThrough(ctx, attempt, response, [read.bytes], deps);
    return COMMITTED;
  }

  const outcome: JsonResponseOutcome =
    mode.kind === 'strict'
      ? strictJsonResponse(mode.endpoint, read.bytes, ctx.route!.key, mode.trusted)
      : standaloneJsonResponse(read.bytes, ctx.route!.key);
  if (outcome.kind === 'error' && outcome.reason === 'embedded_error') {
    const embedded = embeddedStatus(outcome.upstreamError);
    if (abandonsFor(ctx, attempt, embedded, canRetry)) {
      return { kind: 'abandoned', reason: 'embedded_error', status: embedded };
    }
  }
  switch (outcome.kind) {
    case 'ok':
      answerJson(ctx, attempt, response.statusCode, response.headers, outcome.body);
      break;
    case 'passthrough':
      passThrough(ctx, attempt, response, [read.bytes], deps);
      break;
    case 'error':
      answerError(ctx, attempt, outcome.status, outcome.body);
      break;
  }
  return COMMITTED;
}

/**
 * A body that failed before the commit point. A client that leaves aborts the upstream request, and
 * that abort reaches the reader as a body failure: it is the client's, not the provider's.
 */
function abandonedByFailure(ctx: RequestContext, attempt: Attempt, error: Error): ServeOutcome {
  if (ctx.isClosed) return CLIENT_GONE;
  return attempt.expired
    ? { kind: 'abandoned', reason: 'deadline' }
    : { kind: 'abandoned', reason: 'connection_error', error };
}

/**
 * A raw (non-strict) SSE stream. When failover is still possible, the bytes are held until the first
 * data frame so an embedded error can be failed over and the deadline can abandon the attempt;
 * otherwise the stream is passed through at once.
 */
async function serveRawStream(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  canRetry: boolean,
  deps: ServeDeps,
): Promise<ServeOutcome> {
  if (!canRetry) {
    passThrough(ctx, attempt, response, [], deps);
    return COMMITTED;
  }
  const held: Buffer[] = [];
  let firstData: string | undefined;
  let overflow = false;
  const parser = new SseParser(
    {
      onEvent: (event) => {
        if (firstData === undefined && event.data !== '' && event.data !== '[DONE]') firstData = event.data;
      },
    },
    { maxPendingBytes: deps.sseBufferLimit },
  );
  const stop = await readUntil(response.body, (chunk) => {
    held.push(chunk);
    const pushed = parser.push(chunk);
    if (!pushed.ok) overflow = true;
    return firstData !== undefined || overflow;
  });
  if (stop.kind === 'failed') return abandonedByFailure(ctx, attempt, stop.error);
  if (ctx.isClosed) {
    // The client left as the first frame arrived: nothing to commit.
    discard(response.body);
    return CLIENT_GONE;
  }
  if (overflow) {
    logOverflow(ctx, attempt, deps);
    discard(response.body);
    ctx.res.writeHead(response.statusCode, { 'content-type': 'text/event-stream' });
    cutResponse(ctx.res);
    return COMMITTED;
  }
  if (firstData !== undefined) {
    const error = embeddedError(parseJsonSafe(firstData));
    if (error !== undefined) {
      const embedded = embeddedStatus(error);
      if (abandonsFor(ctx, attempt, embedded, canRetry)) {
        discard(response.body);
        return { kind: 'abandoned', reason: 'embedded_error', status: embedded };
      }
    }
  }
  passThrough(ctx, attempt, response, held, deps);
  return COMMITTED;
}

/**
 * A strict or standalone-sanitized SSE stream: every chunk goes through the sanitizing transform.
 * Before the first data frame the output is held (so an embedded error can still be failed over and
 * the deadline can still abandon the attempt); the first data frame is the commit point and, in
 * strict mode, the first-token sample of the share controller (spec 3.1).
 */
async function serveTransformedStream(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  canRetry: boolean,
  deps: ServeDeps,
): Promise<ServeOutcome> {
  const mode = attempt.mode;
  const transform = new SseSanitizeTransform({
    alias: ctx.route!.key,
    mode: mode.kind === 'strict' ? 'strict' : 'standalone',
    trusted: mode.kind === 'strict' ? mode.trusted : false,
    maxPendingBytes: deps.sseBufferLimit,
  });
  let held = '';
  let committedBy: 'first' | 'terminal' | undefined;
  let embedded: number | undefined;
  const stop = await consumeUntil(response, (chunk) => {
    const step = transform.push(chunk);
    held += step.output;
    if (step.firstDataFrame && mode.kind === 'strict') attempt.probe?.firstToken(attempt.elapsedMs());
    // Only an error before any data frame is "an error inside a 200" that may fail over; after
    // data it is a mid-stream error of the serving attempt.
    if (step.state === 'error_event' && step.error && !step.firstDataFrame) {
      embedded =
        step.error.reason === 'embedded_error' && step.error.upstreamError !== undefined
          ? embeddedStatus(step.error.upstreamError)
          : step.error.status;
    }
    // A terminal state wins over a first frame seen in the same read: the stream is over.
    if (step.state !== 'open') {
      committedBy = 'terminal';
      return true;
    }
    if (step.firstDataFrame) {
      committedBy = 'first';
      return true;
    }
    return false;
  });
  if (stop.kind === 'failed') return abandonedByFailure(ctx, attempt, stop.error);
  if (ctx.isClosed) {
    // The client left as the first frame arrived: nothing to commit.
    response.discard();
    return CLIENT_GONE;
  }

  if (embedded !== undefined && abandonsFor(ctx, attempt, embedded, canRetry)) {
    response.discard();
    return { kind: 'abandoned', reason: 'embedded_error', status: embedded };
  }
  startTransformedStream(ctx, attempt, response.statusCode, response.headers, held);

  if (stop.kind === 'ended') {
    // The upstream finished before (or right at) the first frame: apply the end rules.
    const end = transform.end();
    if (end.output.length > 0) ctx.res.write(end.output);
    if (end.state === 'incomplete' || end.state === 'overflow') {
      if (end.state === 'overflow') logOverflow(ctx, attempt, deps);
      cutResponse(ctx.res);
    } else {
      ctx.res.end();
    }
    attempt.release();
    return COMMITTED;
  }
  if (committedBy === 'terminal') {
    if (transform.state === 'overflow') {
      response.discard();
      logOverflow(ctx, attempt, deps);
      cutResponse(ctx.res);
    } else {
      response.drain();
      ctx.res.end();
    }
    attempt.release();
    return COMMITTED;
  }
  pumpTransformed(ctx, attempt, response, transform, deps);
  return COMMITTED;
}
