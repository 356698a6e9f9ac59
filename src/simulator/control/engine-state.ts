import { z } from 'zod';
import type { SimContext } from '../runtime.js';
import { selectModels, type ControlResult } from './capacity.js';

export interface EngineStateRecord {
  model: string;
  state: 'running' | 'stopped';
}

const stateChange = z.strictObject({
  model: z.string().min(1).optional(),
  state: z.enum(['running', 'stopped']),
});

export function engineStates(ctx: SimContext): EngineStateRecord[] {
  return [...ctx.models.values()].map((runtime) => ({
    model: runtime.config.name,
    state: runtime.engine.isRunning ? 'running' : 'stopped',
  }));
}

/**
 * POST /control/engine: stops or restarts engines to simulate a liveness failure. A stopped engine
 * aborts its queued and running requests and answers new ones with 503, distinct from the 529 of
 * saturation; /health then reports 503 too.
 */
export function applyEngineState(ctx: SimContext, body: unknown): ControlResult<EngineStateRecord[]> {
  const parsed = stateChange.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return {
      ok: false,
      status: 400,
      message: `invalid engine state change: ${where}${issue?.message ?? 'invalid body'} (state is "running" or "stopped")`,
      code: 'invalid_engine_state',
      param: null,
    };
  }
  const targets = selectModels(ctx, parsed.data.model);
  if (!targets) {
    return {
      ok: false,
      status: 404,
      message: `The model \`${parsed.data.model}\` does not exist.`,
      code: 'model_not_found',
      param: 'model',
    };
  }
  for (const runtime of targets) {
    if (parsed.data.state === 'stopped') runtime.engine.stop();
    else runtime.engine.start();
  }
  ctx.log.warn(
    { models: targets.map((t) => t.config.name), state: parsed.data.state },
    'engine state changed',
  );
  return { ok: true, value: engineStates(ctx) };
}
