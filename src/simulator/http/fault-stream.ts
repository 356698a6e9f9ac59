import type { ServerResponse } from 'node:http';
import type { SequenceEvents } from '../engine/engine.js';
import { formatFault, type FaultSpec } from '../faults/modes.js';
import type { FaultScript } from '../faults/script.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { admit, type AdmissionReplies } from './admission.js';
import { playFault } from './fault-player.js';
import type { PromptRequest } from './serve-sequence.js';
import { openStream, writable } from './sse.js';

/** What a faulting stream needs of its endpoint's framing besides the script. */
export interface FaultFraming {
  /** Names the endpoint in the `fault injected` log line. */
  endpoint: string;
  replies: AdmissionReplies;
  /** The in-stream error that ends the stream when the engine stops before the script starts. */
  engineStoppedFrame: (model: string) => string;
}

/**
 * A faulting stream, in any framing. It is admitted like any request (so saturation and running
 * counts stay honest) and waits for its first token like any request; from then on the fault
 * script paces itself with `delay_ms`, holding its engine slot until the script is over.
 */
export function faultStream(
  ctx: SimContext,
  runtime: ModelRuntime,
  res: ServerResponse,
  prompt: PromptRequest,
  fault: FaultSpec,
  script: FaultScript,
  framing: FaultFraming,
): void {
  const model = runtime.config.name;
  const events: SequenceEvents = {
    isBlocked: () => false,
    onToken: () => {
      ctx.metrics.faultInjected(model, fault.mode);
      ctx.log.info({ model, endpoint: framing.endpoint, fault: formatFault(fault) }, 'fault injected');
      playFault(res, script, fault.delayMs, ctx.log)
        .catch((err: unknown) => {
          ctx.log.error({ err: err instanceof Error ? err.message : String(err) }, 'fault script failed');
          res.destroy();
        })
        .finally(() => seq?.release());
    },
    onFinish: () => {},
    onAbort: () => {
      if (writable(res)) res.end(framing.engineStoppedFrame(model));
    },
  };
  const seq = admit(
    ctx,
    runtime,
    res,
    {
      promptTokens: prompt.promptTokens,
      promptTokenList: prompt.promptTokenList,
      outputTokens: 1,
      priority: prompt.priority,
      external: true,
      finishReason: 'fault',
    },
    events,
    framing.replies,
  );
  if (!seq) return;
  openStream(res);
  res.on('close', () => seq.cancel());
}
