import type { ServerResponse } from 'node:http';
import { completionBody } from '../openai/bodies.js';
import { DONE_FRAME, pieceFrame, roleFrame, usage, usageFrame, type FrameContext } from '../openai/frames.js';
import type { OutputPlan } from '../openai/plan.js';
import type { CompletionRequest } from '../openai/requests.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { OPENAI_ADMISSION_REPLIES, engineStoppedFrame, sendEngineStopped } from './openai-errors.js';
import { sendJson } from './respond.js';
import { sequenceRequest, serveAnswer, serveStream } from './serve-sequence.js';
import { writable, writeFrame } from './sse.js';

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
  serveStream(ctx, runtime, res, sequenceRequest(request, plan), OPENAI_ADMISSION_REPLIES, {
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
      if (writable(res)) res.end(engineStoppedFrame(runtime.config.name));
    },
  });
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
  serveAnswer(ctx, runtime, res, sequenceRequest(request, plan), OPENAI_ADMISSION_REPLIES, {
    onFinish: () => sendJson(res, 200, completionBody(frame, plan, usage(request.promptTokens, plan.length))),
    onAbort: () => sendEngineStopped(res, runtime.config.name),
  });
}
