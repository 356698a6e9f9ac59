import type { AccessLog } from '../telemetry/access-log.js';
import type { GatewayMetrics } from '../telemetry/metrics.js';
import { traceIdOf } from '../telemetry/tracing.js';
import type { RequestContext } from './context.js';
import type { RequestOutcome } from './outcome.js';
import { chargeTokens } from './admit.js';
import { chargedCost, settleSpend, usageCost } from './spend.js';

export interface FinishedDeps {
  metrics: GatewayMetrics;
  accessLog: AccessLog | undefined;
}

/**
 * What a finished request served, recorded once its response closed: its charge to its spend
 * budgets, the tokens and their cost per account and key, a completed response that reported no
 * usage, the time to its first token and its upstream time (`gateway_*` metrics), and its access
 * log line.
 */
export function recordFinished(
  ctx: RequestContext,
  outcome: RequestOutcome,
  status: number,
  durationMs: number,
  deps: FinishedDeps,
): void {
  const metrics = deps.metrics;
  const served = ctx.served;
  const usage = served?.usage;
  const firstTokenAt = served?.firstTokenAt;
  const cost = chargedCost(ctx, outcome);
  settleSpend(ctx, cost);
  if (served !== undefined) {
    const model = ctx.modelLabel;
    const provider = served.provider;
    if (usage !== undefined) {
      const identity = ctx.identity;
      const counts = metrics.usageOf.get(
        model,
        provider,
        identity?.account ?? '',
        identity?.definitionName ?? '',
      );
      chargeTokens(ctx, usage.prompt + usage.completion);
      counts.prompt += usage.prompt;
      counts.completion += usage.completion;
      counts.reasoning += usage.reasoning;
      counts.cachedPrompt += usage.cachedPrompt;
      counts.cacheWrite += usage.cacheWrite;
      if (served.pricing !== undefined) counts.cost += usageCost(usage, served.pricing);
    } else if (outcome === 'completed' && ctx.surface?.reportsUsage === true) {
      metrics.usageMissingOf.get(model, provider).inc();
    }
    if (firstTokenAt !== undefined)
      metrics.firstTokenOf.get(model, provider).observe((firstTokenAt - ctx.startedAt) / 1000);
    if (served.endedAt !== 0)
      metrics.upstreamDurationOf.get(model, provider).observe((served.endedAt - served.startedAt) / 1000);
  }
  deps.accessLog?.write({
    requestId: ctx.requestId,
    method: ctx.req.method ?? '',
    path: ctx.path,
    model: ctx.modelLabel,
    provider: served?.member ?? '',
    status,
    outcome,
    attempts: ctx.attempts,
    durationMs,
    ttftMs: firstTokenAt === undefined ? null : firstTokenAt - ctx.startedAt,
    promptTokens: usage?.prompt ?? null,
    completionTokens: usage?.completion ?? null,
    reasoningTokens: usage?.reasoning ?? null,
    cachedPromptTokens: usage?.cachedPrompt ?? null,
    cacheWriteTokens: usage?.cacheWrite ?? null,
    cost: cost ?? null,
    account: ctx.identity?.account ?? null,
    key: ctx.identity?.definitionName ?? null,
    traffic: ctx.traffic,
    traceId: traceIdOf(ctx.span),
    client: ctx.clientAddress ?? null,
  });
}
