import { isEventStream, isJson } from '../http/headers.js';
import type { UpstreamResponse } from '../http/upstream-exchange.js';
import type { MaybePromise } from '../limits/types.js';
import {
  INVALID_UPSTREAM_STATUS,
  SseSanitizeTransform,
  embeddedError,
  embeddedStatus,
  invalidUpstreamResponseBody,
  maskUpstreamStatus,
  standaloneJsonResponse,
  standaloneUpstreamErrorBody,
  standardizeUpstreamError,
  strictJsonResponse,
} from '../strict/index.js';
import { recordResponseSummary } from '../telemetry/tracing.js';
import {
  anthropicErrorBody,
  fromOpenAiError,
  maskedAnthropicError,
  type AnthropicErrorBody,
} from '../anthropic/errors.js';
import { chatToMessages } from '../anthropic/response.js';
import { ChatToMessagesStream } from '../anthropic/stream.js';
import { CHAT_COMPLETIONS } from '../api/surfaces.js';
import type { Attempt, AttemptDeps } from './attempt.js';
import type { RequestContext } from './context.js';
import { RawLeadingFrames, parseJsonSafe, type LeadingFrames } from './leading-frames.js';
import { readUntil, readWhole } from './read-ahead.js';
import { ServedStream } from './served-body.js';
import { streamEnding } from './stream-end.js';
import { usageFromBytes, type TokenUsage } from './usage.js';
import { chargeFailedAttempt } from './spend.js';
import {
  answerError,
  answerJson,
  endStreamAs,
  logAndDropErrorBody,
  logOverflow,
  passThrough,
  pumpTransformed,
  startTransformedStream,
  writeCommittedHead,
  type ReEmittedStream,
} from './write-response.js';

export interface RespondDeps extends AttemptDeps {
  sseBufferLimit: number;
}

const ERROR_KEY = Buffer.from('"error"');

/** Largest non-streamed response body the gateway reads to inspect or sanitize it. */
const MAX_INSPECTED_BODY_BYTES = 64 * 1024 * 1024;

/**
 * One attempt's response, from its head to the commit point (spec 2.5, DESIGN 6). Before the commit
 * point nothing reaches the client, so the attempt can still be abandoned (failover never splices
 * or duplicates a stream): on a fallback status, on an error inside a 200 (the first SSE data frame
 * or the JSON body), when the body breaks, or when the first-token deadline fires. At the commit
 * point the attempt commits and the writers (`write-response.ts`) take the response from there.
 *
 * What is read before the commit point, by response kind:
 * - an error status: nothing (it is failed over, or answered at once);
 * - an event stream: up to its first data frame, when failover is possible or it is re-emitted;
 * - a JSON body: whole, when failover is possible or it is sanitized;
 * - otherwise (the last attempt, raw): nothing; it is committed at its head and streamed through.
 */
export function respond(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  deps: RespondDeps,
): MaybePromise<void> {
  const status = response.statusCode;
  attempt.observeStatus(status);
  if (status < 200 || status >= 300) {
    if (attempt.failsOverOn(status)) {
      response.discard();
      attempt.abandon('status', status);
      return;
    }
    attempt.commit();
    return writeErrorStatus(ctx, attempt, response, deps);
  }
  const raw = attempt.mode.kind === 'raw';
  const contentType = response.headers['content-type'];
  if (isEventStream(contentType)) {
    if (raw && !attempt.canFailOver) {
      attempt.commit();
      passThrough(ctx, attempt, response, [], deps);
      return;
    }
    return respondStream(ctx, attempt, response, deps);
  }
  if (raw && !(attempt.canFailOver && isJson(contentType))) {
    attempt.commit();
    passThrough(ctx, attempt, response, [], deps);
    return;
  }
  return respondBody(ctx, attempt, response, deps);
}

/**
 * An error inside a 200 counts as its status for the share controller, and the attempt is abandoned
 * for it when the pool fails over on that status (and another attempt is possible). Usage the
 * provider reported before its error is charged to the request's spend all the same.
 */
function abandonedForEmbeddedError(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  status: number,
  reported: TokenUsage | undefined,
): boolean {
  attempt.observeStatus(status);
  if (!attempt.failsOverOn(status)) return false;
  chargeFailedAttempt(ctx, attempt.provider.pricing, reported);
  response.discard();
  attempt.abandon('embedded_error', status);
  return true;
}

/** A non-2xx answer that is not failed over: passed through, standardized or replaced by mode. */
function writeErrorStatus(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  deps: RespondDeps,
): MaybePromise<void> {
  const status = response.statusCode;
  const mode = attempt.mode;
  if (mode.kind === 'raw') {
    // A Messages answer passed through in strict mode: an untrusted provider's error is strict
    // mode's to word (its masked status, Anthropic's shape); a trusted one's passes as sent.
    if (ctx.strictEndpoint !== undefined && !attempt.provider.trusted) {
      logAndDropErrorBody(ctx, attempt, status, response, deps);
      const masked = maskedAnthropicError(status);
      answerJson(ctx, attempt, maskUpstreamStatus(status), undefined, JSON.stringify(masked));
      return;
    }
    passThrough(ctx, attempt, response, [], deps);
    return;
  }
  if (mode.kind === 'translated')
    return answerTranslatedError(ctx, attempt, response, mode.strict && !mode.trusted);
  if (mode.kind === 'strict') {
    const outcome = standardizeUpstreamError(status, mode.trusted);
    if (outcome.kind === 'passthrough') {
      passThrough(ctx, attempt, response, [], deps);
      return;
    }
    logAndDropErrorBody(ctx, attempt, status, response, deps);
    answerError(ctx, attempt, outcome.status, outcome.body);
    return;
  }
  logAndDropErrorBody(ctx, attempt, status, response, deps);
  answerError(ctx, attempt, status, standaloneUpstreamErrorBody(status));
}

/** A non-streamed body read whole: inspected for an error inside it, sanitized, or both. */
async function respondBody(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  deps: RespondDeps,
): Promise<void> {
  const mode = attempt.mode;
  const read = await readWhole(response, MAX_INSPECTED_BODY_BYTES);
  if (read.kind === 'failed') {
    attempt.failed(read.error, 'body');
    return;
  }
  if (read.kind === 'too_large') {
    attempt.commit();
    if (mode.kind === 'translated') {
      response.discard();
      ctx.endedAs('upstream_error');
      const message = "The provider's answer is too large to translate.";
      answerJson(
        ctx,
        attempt,
        INVALID_UPSTREAM_STATUS,
        undefined,
        JSON.stringify(anthropicErrorBody(INVALID_UPSTREAM_STATUS, message)),
      );
    } else if (mode.kind === 'raw') {
      passThrough(ctx, attempt, response, read.chunks, deps);
    } else {
      response.discard();
      answerError(ctx, attempt, INVALID_UPSTREAM_STATUS, invalidUpstreamResponseBody());
    }
    return;
  }
  const bytes = read.bytes;
  if (mode.kind === 'translated') {
    translatedBody(ctx, attempt, response, bytes, mode.strict && !mode.trusted);
    return;
  }
  const recording = attempt.span.isRecording();
  const raw = mode.kind === 'raw';
  // Parsed here, at most once, for the span or for a raw body that can carry an error at all
  // (strict and standalone bodies are parsed by their sanitizer).
  const value =
    recording || (raw && bytes.includes(ERROR_KEY)) ? parseJsonSafe(bytes.toString('utf8')) : undefined;
  // Response model and token usage, for the attempt span, when the body is read anyway.
  if (recording) recordResponseSummary(attempt.span, value);

  if (raw) {
    const error = embeddedError(value);
    if (error !== undefined) {
      if (abandonedForEmbeddedError(ctx, attempt, response, embeddedStatus(error), usageFromBytes(bytes)))
        return;
      ctx.endedAs('upstream_error');
    }
    attempt.commit();
    bodyServed(ctx, bytes);
    passThrough(ctx, attempt, response, [bytes], deps);
    return;
  }

  const outcome =
    mode.kind === 'strict'
      ? strictJsonResponse(mode.endpoint, bytes, ctx.route!.key, mode.trusted)
      : standaloneJsonResponse(bytes, ctx.route!.key);
  const upstreamError =
    outcome.kind === 'passthrough' || (outcome.kind === 'error' && outcome.reason === 'embedded_error')
      ? outcome.upstreamError
      : undefined;
  if (upstreamError !== undefined) {
    if (
      abandonedForEmbeddedError(ctx, attempt, response, embeddedStatus(upstreamError), usageFromBytes(bytes))
    )
      return;
    ctx.endedAs('upstream_error');
  }
  attempt.commit();
  bodyServed(ctx, bytes);
  switch (outcome.kind) {
    case 'ok':
      answerJson(ctx, attempt, response.statusCode, response.headers, outcome.body);
      return;
    case 'passthrough':
      passThrough(ctx, attempt, response, [bytes], deps);
      return;
    case 'error':
      answerError(ctx, attempt, outcome.status, outcome.body);
      return;
  }
}

/**
 * An event stream, held up to its first data frame (or a terminal state before it): the provider's
 * bytes for a raw stream, the re-emitted events for a strict or standalone-sanitized one. The first
 * data frame is the commit point and, in strict mode, the first-token sample of the share
 * controller (spec 3.1). A terminal state reached in the same read as the first data frame wins:
 * the stream is over.
 */
async function respondStream(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  deps: RespondDeps,
): Promise<void> {
  const mode = attempt.mode;
  const frames = leadingFramesFor(ctx, mode, deps.sseBufferLimit);
  const held: (string | Buffer)[] = [];
  // The provider's bytes, in its framing (chat completions, for a translated stream).
  const framing = mode.kind === 'translated' ? CHAT_COMPLETIONS : ctx.surface;
  const served = new ServedStream(framing);
  let firstToken = false;
  const stop = await readUntil(response, (chunk) => {
    served.push(chunk);
    const step = frames.push(chunk);
    if (step.output.length > 0) held.push(step.output);
    if (step.firstDataFrame) {
      firstToken = true;
      // A translated stream's first token is its first content delta, not the provider's first frame.
      if (mode.kind === 'translated') served.firstDataAt = performance.now();
      if (mode.kind === 'strict' || mode.kind === 'translated')
        attempt.probe?.firstToken(attempt.elapsedMs());
    }
    return step.state !== 'open' || step.firstDataFrame;
  });
  if (stop.kind === 'failed') {
    attempt.failed(stop.error, 'body');
    return;
  }
  // Ended before its first token without its end marker: nothing was served, and another provider
  // may answer (a stream that served nothing is not committed for its held frames alone).
  if (
    stop.kind === 'ended' &&
    !firstToken &&
    frames.state === 'open' &&
    framing?.streamEnd !== undefined &&
    attempt.canFailOver &&
    !ctx.isClosed
  ) {
    chargeFailedAttempt(ctx, attempt.provider.pricing, served.usage());
    attempt.failed(ENDED_BEFORE_FIRST_TOKEN, 'body');
    return;
  }
  if (ctx.isClosed) {
    // The client left as the first frame arrived: nothing to commit.
    response.discard();
    attempt.abandon('client_gone');
    return;
  }
  const leadingError = frames.leadingError;
  if (leadingError !== undefined) {
    if (abandonedForEmbeddedError(ctx, attempt, response, leadingError.upstreamStatus, served.usage()))
      return;
    ctx.endedAs('upstream_error');
  }
  attempt.commit();

  if (!(frames instanceof RawLeadingFrames)) {
    startTransformedStream(ctx, attempt, response.statusCode, response.headers, held.join(''));
    pumpTransformed(ctx, attempt, response, frames, stop.kind === 'ended', deps, served);
    return;
  }
  if (frames.state === 'overflow') {
    logOverflow(ctx, attempt, deps.logger, { limit: deps.sseBufferLimit });
    response.discard();
    // The head as any committed response's (nothing of the body follows it: the stream is cut).
    writeCommittedHead(ctx, attempt, response.statusCode, response.headers, {});
    endStreamAs(ctx, attempt, streamEnding(ctx.surface, 'raw', 'overflow'));
    return;
  }
  passThrough(ctx, attempt, response, held as Buffer[], deps, served);
}

/** The reader of a stream up to its commit point, by how the attempt's response reaches the client. */
function leadingFramesFor(
  ctx: RequestContext,
  mode: Attempt['mode'],
  sseBufferLimit: number,
): RawLeadingFrames | (LeadingFrames & ReEmittedStream) {
  switch (mode.kind) {
    case 'raw':
      return new RawLeadingFrames(sseBufferLimit, ctx.surface);
    case 'translated':
      return new ChatToMessagesStream({
        model: ctx.translation!.model,
        stopSequences: ctx.translation!.stopSequences,
        maxPendingBytes: sseBufferLimit,
        masked: mode.strict && !mode.trusted,
      });
    case 'strict':
    case 'standalone':
      return new SseSanitizeTransform({
        alias: ctx.route!.key,
        mode: mode.kind,
        trusted: mode.kind === 'strict' ? mode.trusted : false,
        maxPendingBytes: sseBufferLimit,
        dropUsageChunk: ctx.usageInjected,
      });
  }
}

/**
 * A translated request's non-streamed answer, read whole: an error inside the 200 is failed over or
 * answered in the client surface's shape; a chat completion is answered translated, or with a 502
 * when it cannot be (a tool call whose arguments are not a JSON object is never sent as `{}`).
 */
function translatedBody(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  bytes: Buffer,
  masked: boolean,
): void {
  const value = parseJsonSafe(bytes.toString('utf8'));
  if (attempt.span.isRecording()) recordResponseSummary(attempt.span, value);
  const error = embeddedError(value);
  if (error !== undefined) {
    const status = embeddedStatus(error);
    if (abandonedForEmbeddedError(ctx, attempt, response, status, usageFromBytes(bytes))) return;
    ctx.endedAs('upstream_error');
    attempt.commit();
    answerJson(ctx, attempt, status, undefined, JSON.stringify(translatedError(status, { error }, masked)));
    return;
  }
  attempt.commit();
  bodyServed(ctx, bytes);
  const translation = ctx.translation!;
  const translated = chatToMessages(value, translation.model, translation.stopSequences);
  if (translated.ok) {
    answerJson(ctx, attempt, response.statusCode, response.headers, JSON.stringify(translated.body));
    return;
  }
  ctx.endedAs('upstream_error');
  answerJson(
    ctx,
    attempt,
    INVALID_UPSTREAM_STATUS,
    undefined,
    JSON.stringify(
      anthropicErrorBody(
        INVALID_UPSTREAM_STATUS,
        `The provider's answer cannot be translated: ${translated.message}`,
      ),
    ),
  );
}

/** Largest error body of a chat provider read to translate its message. */
const MAX_TRANSLATED_ERROR_BYTES = 64 * 1024;

/**
 * A chat provider's error answer (not failed over), in the client surface's shape: its status, and
 * its message unless strict mode keeps an untrusted provider's words from the client.
 */
async function answerTranslatedError(
  ctx: RequestContext,
  attempt: Attempt,
  response: UpstreamResponse,
  masked: boolean,
): Promise<void> {
  const status = response.statusCode;
  const read = await readWhole(response, MAX_TRANSLATED_ERROR_BYTES);
  if (read.kind === 'too_large') response.discard();
  const value = read.kind === 'complete' ? parseJsonSafe(read.bytes.toString('utf8')) : undefined;
  const body = translatedError(status, value, masked);
  answerJson(ctx, attempt, masked ? maskUpstreamStatus(status) : status, undefined, JSON.stringify(body));
}

/** A chat provider's error value in Anthropic's shape; masked: strict mode's words for it. */
function translatedError(status: number, value: unknown, masked: boolean): AnthropicErrorBody {
  return masked ? maskedAnthropicError(status) : fromOpenAiError(status, value);
}

const ENDED_BEFORE_FIRST_TOKEN = new Error('the stream ended before its first token, without its end marker');

/** A body read whole and committed: its end, and the usage it reported. */
function bodyServed(ctx: RequestContext, bytes: Buffer): void {
  ctx.served?.bodyDone(undefined, usageFromBytes(bytes));
}
