import type { ErrorBody } from '../../lib/errors.js';
import { runStrictChecksOnParsed } from '../strict/index.js';
import type { UnsupportedParamName } from '../strict/unsupported-params-catalog.js';
import type { Logger } from '../telemetry/logger.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import type { RequestContext } from './context.js';
import type { GatewayError } from './errors.js';

/** A strict check's rejection as a gateway error; `label` is the rejections-metric code (spec 6). */
export function strictRejection(rejection: { status: number; code: string; error: ErrorBody }): GatewayError {
  const { message, type, param, code } = rejection.error.error;
  return {
    status: rejection.status,
    type,
    code: typeof code === 'number' ? String(code) : code,
    message,
    param,
    outcome: 'rejected',
    label: rejection.code,
    strictShape: true,
  };
}

/**
 * The strict request checks (spec 4.4 rule 6: schema, unsupported parameters, reasoning) over the
 * body parsed at routing. Every catalog parameter found is counted and logged (names only, never
 * values), also when the request is refused.
 */
export function runStrictChecks(
  ctx: RequestContext,
  deps: { metrics: GatewayMetrics; logger: Logger },
): GatewayError | undefined {
  const endpoint = ctx.strictEndpoint!;
  const checks = runStrictChecksOnParsed(endpoint, ctx.json!, {
    rejectUnsupportedParams: ctx.table.rejectUnsupportedParams as ReadonlySet<UnsupportedParamName>,
  });
  if (checks.unsupportedParams.length > 0) {
    for (const match of checks.unsupportedParams) {
      deps.metrics.unsupportedParams.inc({
        param: match.name,
        model: ctx.modelLabel,
        traffic: ctx.traffic,
        action: match.rejected ? 'rejected' : 'logged',
      });
    }
    deps.logger.info(
      {
        params: checks.unsupportedParams.map((m) => m.name),
        rejected: checks.unsupportedParams.filter((m) => m.rejected).map((m) => m.name),
        model: ctx.modelLabel,
        account: ctx.identity?.account ?? null,
        keyId: ctx.identity?.keyId ?? null,
      },
      'unsupported parameters in a strict request',
    );
  }
  return checks.ok ? undefined : strictRejection(checks);
}
