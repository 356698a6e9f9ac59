import type { BudgetReading } from '../../telemetry/budget-metrics.js';
import type { SpendBudget } from './types.js';
import { windowLabel } from './window.js';

/** The budgets' state for their gauges, read in one go from where they live. */
export async function readBudgets(budgets: readonly SpendBudget[]): Promise<readonly BudgetReading[]> {
  if (budgets.length === 0) return [];
  const states = await budgets[0]!.book.snapshot(budgets);
  return budgets.map((budget, i) => ({
    scope: budget.scope,
    budget: budget.name,
    window: windowLabel(budget.params.window),
    limit: budget.params.amount,
    spent: states[i]?.spent,
    reserved: states[i]?.reserved,
  }));
}
