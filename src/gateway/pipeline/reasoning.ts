import { planReasoning } from '../reasoning/index.js';
import type { RequestContext } from './context.js';
import type { GatewayError } from './errors.js';
import { parseJsonBody } from './resolve.js';

/**
 * Reasoning validation and planning (spec 2.6), after the strict checks and before any attempt: the
 * client's effort is checked against every provider of the pool, token budgets against the request
 * limit, native reasoning controls are refused. The plan is applied per attempt (provider-scoped).
 */
export function planRequestReasoning(ctx: RequestContext): GatewayError | undefined {
  const surface = ctx.surface?.reasoning;
  if (surface === undefined) return undefined;
  const unparsable = parseJsonBody(ctx);
  if (unparsable) return unparsable;
  if (ctx.json === undefined) return undefined;
  const plan = planReasoning(
    surface,
    ctx.json,
    ctx.route!.reasoning,
    ctx.strictEndpoint ? 'strict' : 'non-strict',
  );
  if (!plan.ok) {
    return {
      status: plan.status,
      type: plan.type,
      code: plan.code,
      message: plan.message,
      param: plan.param,
      outcome: 'rejected',
    };
  }
  ctx.reasoning = plan;
  return undefined;
}
