import { z } from 'zod';
import type { CapacityRecord } from '../engine/engine.js';
import type { ModelRuntime, SimContext } from '../runtime.js';

export type ControlResult<T> =
  { ok: true; value: T } | { ok: false; status: number; message: string; code: string; param: string | null };

const capacityChange = z.strictObject({
  model: z.string().min(1).optional(),
  max_num_seqs: z.unknown().optional(),
  max_waiting: z.unknown().optional(),
});

export function capacityRecords(ctx: SimContext): CapacityRecord[] {
  return [...ctx.models.values()].map((runtime) => runtime.engine.capacity());
}

/**
 * POST /control/capacity. Everything is validated before anything changes, then the change is
 * applied to every targeted engine in one synchronous pass, so no request observes half of it.
 */
export function applyCapacity(ctx: SimContext, body: unknown): ControlResult<CapacityRecord[]> {
  const parsed = capacityChange.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail(
      400,
      `invalid capacity change: ${issue?.message ?? 'invalid body'}`,
      'invalid_capacity',
      null,
    );
  }
  const { model, max_num_seqs: seqs, max_waiting: waiting } = parsed.data;
  if (seqs !== undefined && !(Number.isInteger(seqs) && (seqs as number) >= 1)) {
    return fail(
      400,
      `max_num_seqs must be an integer of at least 1, got ${JSON.stringify(seqs)}: 0 would accept work and never schedule it`,
      'invalid_capacity',
      'max_num_seqs',
    );
  }
  if (waiting !== undefined && !(Number.isInteger(waiting) && (waiting as number) >= 0)) {
    return fail(
      400,
      `max_waiting must be an integer of at least 0 (0 means unbounded), got ${JSON.stringify(waiting)}`,
      'invalid_capacity',
      'max_waiting',
    );
  }
  const targets = selectModels(ctx, model);
  if (!targets) return fail(404, `The model \`${model}\` does not exist.`, 'model_not_found', 'model');
  for (const runtime of targets) {
    runtime.engine.setCapacity({
      maxNumSeqs: seqs as number | undefined,
      maxWaiting: waiting as number | undefined,
    });
  }
  ctx.log.info(
    { models: targets.map((t) => t.config.name), max_num_seqs: seqs, max_waiting: waiting },
    'capacity changed',
  );
  return { ok: true, value: capacityRecords(ctx) };
}

/** One model by name, or every model when no name is given; undefined for an unknown name. */
export function selectModels(ctx: SimContext, model: string | undefined): ModelRuntime[] | undefined {
  if (model === undefined) return [...ctx.models.values()];
  const runtime = ctx.models.get(model);
  return runtime ? [runtime] : undefined;
}

function fail<T>(status: number, message: string, code: string, param: string | null): ControlResult<T> {
  return { ok: false, status, message, code, param };
}
