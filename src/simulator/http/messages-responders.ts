import type { ServerResponse } from 'node:http';
import { messageBody, messageStream, type MessageAnswer } from '../anthropic/message.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import {
  ANTHROPIC_ADMISSION_REPLIES,
  anthropicEngineStoppedEvent,
  sendAnthropicError,
} from './anthropic-replies.js';
import { engineStoppedMessage } from './admission.js';
import { sendJson } from './respond.js';
import { sequenceRequest, serveAnswer, serveStream, type PromptRequest } from './serve-sequence.js';
import { writable, writeFrame } from './sse.js';

/**
 * A Messages stream paced by the engine: message_start at the first token (its usage knows the
 * prefix-cache hit by then), the block events of each token, then message_delta and message_stop.
 */
export function streamMessage(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  prompt: PromptRequest,
  answer: MessageAnswer,
): void {
  const events = messageStream(answer);
  // `seq` is read in callbacks only: the engine calls back on later turns of the event loop.
  const seq = serveStream(
    ctx,
    runtime,
    res,
    sequenceRequest(prompt, answer.plan),
    ANTHROPIC_ADMISSION_REPLIES,
    {
      onToken: (index) => writeFrame(res, events.token(index, seq?.cachedTokens ?? 0)),
      onFinish: () => {
        if (writable(res)) res.end(events.finish());
      },
      onAbort: () => {
        // The engine died mid-stream: an error event and no message_stop, so the client cannot mistake it.
        if (writable(res)) res.end(anthropicEngineStoppedEvent(runtime.config.name));
      },
    },
  );
}

/** A non-streaming Messages answer: the whole message once the engine has produced the last token. */
export function answerMessage(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  prompt: PromptRequest,
  answer: MessageAnswer,
): void {
  const seq = serveAnswer(
    ctx,
    runtime,
    res,
    sequenceRequest(prompt, answer.plan),
    ANTHROPIC_ADMISSION_REPLIES,
    {
      onFinish: () => sendJson(res, 200, messageBody(answer, seq?.cachedTokens ?? 0)),
      onAbort: () => sendAnthropicError(res, 503, engineStoppedMessage(runtime.config.name)),
    },
  );
}
