import type { ServerResponse } from 'node:http';
import type { Sequence, SequenceEvents, SequenceRequest } from '../engine/engine.js';
import type { OutputPlan } from '../openai/plan.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { admit, type AdmissionReplies } from './admission.js';
import { openStream } from './sse.js';

/** What the engine needs of a parsed request, whatever its wire shape. */
export interface PromptRequest {
  promptTokens: number;
  promptTokenList: () => string[];
  priority: number;
}

/** The engine's view of a request answered by `plan`. */
export function sequenceRequest(prompt: PromptRequest, plan: OutputPlan): SequenceRequest {
  return {
    promptTokens: prompt.promptTokens,
    promptTokenList: prompt.promptTokenList,
    outputTokens: plan.length,
    priority: prompt.priority,
    external: false,
    finishReason: plan.finishReason,
  };
}

/** The engine events an endpoint's stream framing handles; backpressure is handled here. */
export type StreamEvents = Omit<SequenceEvents, 'isBlocked'>;

/**
 * A stream paced by the engine, in any framing: admitted through the funnel, the SSE headers sent
 * at once, tokens withheld while the client is not reading, the slot freed when it leaves.
 * Returns the sequence, or undefined when admission refused it (the refusal is already answered).
 */
export function serveStream(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: SequenceRequest,
  replies: AdmissionReplies,
  events: StreamEvents,
): Sequence | undefined {
  // Every events object is built with the same keys in the same order, so the engine's calls into
  // them stay monomorphic. A client that is not reading holds its slot but gets no tokens until it
  // drains: no buffering.
  const sequenceEvents: SequenceEvents = {
    isBlocked: () => res.writableNeedDrain,
    onToken: events.onToken,
    onFinish: events.onFinish,
    onAbort: events.onAbort,
  };
  const seq = admit(ctx, runtime, res, request, sequenceEvents, replies);
  if (!seq) return undefined;
  openStream(res);
  res.on('drain', () => runtime.engine.kick());
  res.on('close', () => seq.cancel());
  return seq;
}

/** The engine events a non-streaming answer handles: the whole body comes at the last token. */
export type AnswerEvents = Pick<SequenceEvents, 'onFinish' | 'onAbort'>;

/** A non-streaming answer through the engine, in any framing. */
export function serveAnswer(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: SequenceRequest,
  replies: AdmissionReplies,
  events: AnswerEvents,
): Sequence | undefined {
  const sequenceEvents: SequenceEvents = {
    isBlocked: notBlocked,
    onToken: ignore,
    onFinish: events.onFinish,
    onAbort: events.onAbort,
  };
  const seq = admit(ctx, runtime, res, request, sequenceEvents, replies);
  if (!seq) return undefined;
  res.on('close', () => seq.cancel());
  return seq;
}

const notBlocked = (): boolean => false;
const ignore = (): void => {};
