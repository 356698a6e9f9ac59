import type { ServerResponse } from 'node:http';
import { errorBody } from '../../lib/errors.js';
import type { SequenceEvents, SequenceRequest } from '../engine/engine.js';
import { completionBody } from '../openai/bodies.js';
import {
  DONE_FRAME,
  dataFrame,
  pieceFrame,
  roleFrame,
  usage,
  usageFrame,
  type FrameContext,
} from '../openai/frames.js';
import type { OutputPlan } from '../openai/plan.js';
import type { CompletionRequest } from '../openai/requests.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { admit, engineStoppedMessage } from './admission.js';
import { sendError, sendJson } from './respond.js';
import { openStream, writable, writeFrame } from './sse.js';

function sequenceRequest(request: CompletionRequest, plan: OutputPlan): SequenceRequest {
  return {
    promptTokens: request.promptTokens,
    promptTokenList: request.promptTokenList,
    outputTokens: plan.length,
    priority: request.priority,
    external: false,
    finishReason: plan.finishReason,
  };
}

/**
 * A normal stream paced by the engine: (chat) role frame and first delta at the first token, one
 * frame per token, the finish reason on the last token's frame, the usage frame when asked, [DONE].
 */
export function streamPlan(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: CompletionRequest,
  plan: OutputPlan,
  frame: FrameContext,
): void {
  const last = plan.length - 1;
  const events: SequenceEvents = {
    // A client that is not reading holds its slot but gets no tokens until it drains: no buffering.
    isBlocked: () => res.writableNeedDrain,
    onToken: (index) => {
      if (index === 0 && frame.kind === 'chat') writeFrame(res, roleFrame(frame));
      writeFrame(res, pieceFrame(frame, plan.pieceAt(index), index === last ? plan.finishReason : null));
    },
    onFinish: () => {
      if (request.includeUsage) writeFrame(res, usageFrame(frame, usage(request.promptTokens, plan.length)));
      if (writable(res)) res.end(DONE_FRAME);
    },
    onAbort: () => {
      // The engine died mid-stream: an error event and no [DONE], so the client cannot mistake it.
      const message = engineStoppedMessage(runtime.config.name);
      if (writable(res))
        res.end(dataFrame(errorBody(message, 'service_unavailable_error', 'engine_unavailable')));
    },
  };
  const seq = admit(ctx, runtime, res, sequenceRequest(request, plan), events);
  if (!seq) return;
  openStream(res);
  res.on('drain', () => runtime.engine.kick());
  res.on('close', () => seq.cancel());
}

/** A non-streaming answer: the whole body once the engine has produced the last token. */
export function answerPlan(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: CompletionRequest,
  plan: OutputPlan,
  frame: FrameContext,
): void {
  const events: SequenceEvents = {
    isBlocked: () => false,
    onToken: () => {},
    onFinish: () => sendJson(res, 200, completionBody(frame, plan, usage(request.promptTokens, plan.length))),
    onAbort: () =>
      sendError(
        res,
        503,
        engineStoppedMessage(runtime.config.name),
        'service_unavailable_error',
        'engine_unavailable',
      ),
  };
  const seq = admit(ctx, runtime, res, sequenceRequest(request, plan), events);
  if (!seq) return;
  res.on('close', () => seq.cancel());
}
