import type { ServerResponse } from 'node:http';
import type { Sequence, SequenceEvents, SequenceRequest } from '../engine/engine.js';
import type { ModelRuntime, SimContext } from '../runtime.js';

/** How an endpoint answers the two admission refusals, in its own error shape. */
export interface AdmissionReplies {
  /** The waiting queue is full: 529. */
  saturated: (res: ServerResponse, waiting: number, maxWaiting: number) => void;
  /** The engine is not running: 503. */
  stopped: (res: ServerResponse, model: string) => void;
}

/** The message of the 529 of saturation, with the live numbers. */
export function saturatedMessage(waiting: number, maxWaiting: number): string {
  return `Server is at capacity, ${waiting} requests waiting, max_waiting = ${maxWaiting}, retry with reduced concurrency`;
}

export function engineStoppedMessage(model: string): string {
  return `the engine of model "${model}" is not running`;
}

/**
 * The single funnel through which every generating request reaches an engine. A refusal is
 * counted and answered here, at once and before any response byte: 529 when the waiting queue is
 * full, 503 when the engine is not running.
 */
export function admit(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: SequenceRequest,
  events: SequenceEvents,
  replies: AdmissionReplies,
): Sequence | undefined {
  const model = runtime.config.name;
  const result = runtime.engine.submit(request, events);
  if (result.ok) {
    ctx.metrics.prompt(model, request.promptTokens);
    return result.seq;
  }
  if (result.reason === 'saturated') {
    ctx.metrics.rejected(model, 'queue_saturated');
    ctx.log.debug({ model, waiting: result.waiting, max_waiting: result.maxWaiting }, 'queue saturated');
    replies.saturated(res, result.waiting, result.maxWaiting);
  } else {
    ctx.metrics.rejected(model, 'engine_unavailable');
    replies.stopped(res, model);
  }
  return undefined;
}
