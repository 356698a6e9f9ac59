import type { KeyIndex } from '../auth/keys.js';
import type { ConfigIssue } from '../config/issues.js';
import { DEFAULT_BUDGET_MAX_TOKENS, providerIdentity, type BudgetConfig } from '../config/schema/index.js';
import type { ResolvedGatewayConfig, ResolvedTarget } from '../config/secrets.js';
import type { BudgetParams } from '../limits/spend/types.js';
import { budgetWindow } from '../limits/spend/window.js';
import type { ReservePrices } from './table.js';

/** A budget's configuration as the limiters take it. */
export function budgetParams(config: BudgetConfig): BudgetParams {
  return {
    amount: config.amount,
    window: budgetWindow(config.window, config.time_zone),
    defaultMaxTokens: config.default_max_tokens ?? DEFAULT_BUDGET_MAX_TOKENS,
  };
}

/**
 * The prices a reservation on this target uses: the highest of its providers' (a request may be
 * served by any of them), the prompt at the dearer of the prompt and cache-write prices. Undefined
 * when some provider has no price.
 */
export function reservePrices(target: ResolvedTarget): ReservePrices | undefined {
  let prompt = 0;
  let completion = 0;
  for (const entry of target.providers ?? [target]) {
    const pricing = ('pricing' in entry ? entry.pricing : undefined) ?? target.pricing;
    if (pricing === undefined) return undefined;
    prompt = Math.max(prompt, pricing.prompt_per_million, pricing.cache_write_per_million ?? 0);
    completion = Math.max(completion, pricing.completion_per_million);
  }
  return { prompt: prompt / 1_000_000, completion: completion / 1_000_000 };
}

/** The first provider of the target without a price, by the name logs and metrics give it. */
function unpricedProvider(target: ResolvedTarget): string | undefined {
  if (target.providers === undefined) return target.pricing === undefined ? target.url : undefined;
  for (const entry of target.providers)
    if ((entry.pricing ?? target.pricing) === undefined) return providerIdentity(entry);
  return undefined;
}

/**
 * A budget can only be enforced on models whose cost is known: every target it may be charged for
 * needs a price on each provider. A key's budget is charged on the targets that accept the key, an
 * account's on those that accept any of its keys, a target's on the target.
 */
export function budgetIssues(config: ResolvedGatewayConfig, keys: KeyIndex): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const definitions = config.auth?.key_definitions ?? {};
  const accounts = config.auth?.accounts ?? {};
  const anyBudget =
    Object.values(definitions).some((d) => d.budget !== undefined) ||
    Object.values(accounts).some((a) => a.budget !== undefined) ||
    Object.values(config.targets).some((t) => t.budget !== undefined);
  if (!anyBudget) return issues;
  const check = (path: string, targetKeys: Iterable<string>, whose: string): void => {
    for (const key of targetKeys) {
      const target = config.targets[key];
      const provider = target === undefined ? undefined : unpricedProvider(target);
      if (provider === undefined) continue;
      issues.push({
        path,
        message: `${whose} is charged for the model \`${key}\`, whose provider \`${provider}\` has no \`pricing\`: a budget cannot be enforced on a cost it does not know. Set \`pricing\` on the target \`${key}\` or on that provider.`,
      });
      return;
    }
  };
  const accountTargets = new Map<string, Set<string>>();
  for (const [name, definition] of Object.entries(definitions)) {
    const reached = keys.keyedTargetsOf(name);
    if (definition.budget !== undefined)
      check(`$.auth.key_definitions.${name}.budget`, reached, `the budget of the key \`${name}\``);
    const account = definition.labels?.account;
    if (account === undefined) continue;
    let targets = accountTargets.get(account);
    if (targets === undefined) accountTargets.set(account, (targets = new Set()));
    for (const key of reached) targets.add(key);
  }
  for (const [account, limits] of Object.entries(accounts))
    if (limits.budget !== undefined)
      check(
        `$.auth.accounts.${account}.budget`,
        accountTargets.get(account) ?? [],
        `the budget of the account \`${account}\``,
      );
  for (const [key, target] of Object.entries(config.targets))
    if (target.budget !== undefined)
      check(`$.targets.${key}.budget`, [key], `the budget of the target \`${key}\``);
  return issues;
}
