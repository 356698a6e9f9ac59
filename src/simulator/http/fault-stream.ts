import type { ServerResponse } from 'node:http';
import { errorBody } from '../../lib/errors.js';
import type { SequenceEvents } from '../engine/engine.js';
import { formatFault, type FaultSpec } from '../faults/modes.js';
import { faultScript } from '../faults/script.js';
import { dataFrame, type FrameContext } from '../openai/frames.js';
import type { CompletionRequest } from '../openai/requests.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { admit, engineStoppedMessage } from './admission.js';
import { playFault } from './fault-player.js';
import { openStream, writable } from './sse.js';

/**
 * A faulting stream. It is admitted like any request (so saturation and running counts stay
 * honest) and waits for its first token like any request; from then on the fault script paces
 * itself with `delay_ms`, holding its engine slot until the script is over.
 */
export function faultStream(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  request: CompletionRequest,
  fault: FaultSpec,
  frame: FrameContext,
): void {
  const model = runtime.config.name;
  const script = faultScript(fault, {
    frame,
    includeUsage: request.includeUsage,
    promptTokens: request.promptTokens,
  });
  const events: SequenceEvents = {
    isBlocked: () => false,
    onToken: () => {
      ctx.metrics.faultInjected(model, fault.mode);
      ctx.log.info({ model, endpoint: frame.kind, fault: formatFault(fault) }, 'fault injected');
      playFault(res, script, fault.delayMs, ctx.log)
        .catch((err: unknown) => {
          ctx.log.error({ err: err instanceof Error ? err.message : String(err) }, 'fault script failed');
          res.destroy();
        })
        .finally(() => seq?.release());
    },
    onFinish: () => {},
    onAbort: () => {
      const message = engineStoppedMessage(model);
      if (writable(res))
        res.end(dataFrame(errorBody(message, 'service_unavailable_error', 'engine_unavailable')));
    },
  };
  const seq = admit(
    ctx,
    runtime,
    res,
    {
      promptTokens: request.promptTokens,
      promptTokenList: request.promptTokenList,
      outputTokens: 1,
      priority: request.priority,
      external: true,
      finishReason: 'fault',
    },
    events,
  );
  if (!seq) return;
  openStream(res);
  res.on('close', () => seq.cancel());
}
