import type { ServerResponse } from 'node:http';
import type { Sequence, SequenceEvents, SequenceRequest } from '../engine/engine.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { sendError, sendRaw } from './respond.js';

/** The exact 529 body of the specification, with the live numbers. */
export function saturatedBody(waiting: number, maxWaiting: number): string {
  return JSON.stringify({
    error: {
      message: `Server is at capacity, ${waiting} requests waiting, max_waiting = ${maxWaiting}, retry with reduced concurrency`,
      type: 'overloaded_error',
      code: 'queue_saturated',
    },
  });
}

/**
 * The single funnel through which every completion request reaches an engine. A refusal is answered
 * here, at once and before any response byte, as JSON: 529 when the waiting queue is full, 503 when
 * the engine is not running.
 */
export function admit(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: SequenceRequest,
  events: SequenceEvents,
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
    sendRaw(res, 529, saturatedBody(result.waiting, result.maxWaiting));
  } else {
    ctx.metrics.rejected(model, 'engine_unavailable');
    sendError(res, 503, engineStoppedMessage(model), 'service_unavailable_error', 'engine_unavailable');
  }
  return undefined;
}

export function engineStoppedMessage(model: string): string {
  return `the engine of model "${model}" is not running`;
}
