/**
 * Attempt order of one request over a pool's providers (spec 2.2 `strategy`, DESIGN 6).
 *
 * Runs once per request, so it avoids work that grows with traffic: `priority` hands back the
 * configured array itself, `weighted_random` builds one array of the pool's size (a pool has a
 * handful of providers, so the quadratic pick below is cheaper than any index structure).
 */

import type { PoolStrategy } from '../config/schema/index.js';
import type { PickInput, PoolPicker } from './pool-picker.js';

/** A uniform number in [0, 1), like `Math.random`. Injected so tests script the draws. */
export type Random = () => number;

export interface Weighted {
  /** Positive relative weight (the schema rejects 0 and negatives). */
  readonly weight: number;
}

/** Something that may reorder a priority pool per request: the share controller. */
export interface PriorityReorder {
  orderFor<T>(providers: readonly T[]): readonly T[];
}

/** How a route orders its providers: its pool's strategy, or `single` for a single-provider target. */
export type RouteStrategy = PoolStrategy | 'single';

/** `priority`: definition order, unchanged. Returns the same array (no allocation). */
export function priorityOrder<T>(providers: readonly T[]): readonly T[] {
  return providers;
}

/**
 * `weighted_random`: the first provider is a literal weighted random choice (probability
 * weight / total). Failover then continues as weighted sampling without replacement over the
 * providers not yet tried: a heavier provider is the likelier next hop too, and every provider
 * appears exactly once, so `max_attempts` (at most the pool size) never retries one provider.
 *
 * Draws `providers.length - 1` numbers from `random`, the first one deciding the first attempt; a
 * pool of one draws nothing.
 */
export function weightedRandomOrder<T extends Weighted>(
  providers: readonly T[],
  random: Random,
): readonly T[] {
  const n = providers.length;
  if (n <= 1) return providers;
  const order = providers.slice();
  for (let position = 0; position < n - 1; position++) {
    let total = 0;
    for (let i = position; i < n; i++) total += order[i]!.weight;
    const target = random() * total;
    // Rounding can leave the running sum just below `target` after the last candidate: the last
    // remaining candidate is then the pick, never "none".
    let picked = n - 1;
    let cumulative = 0;
    for (let i = position; i < n - 1; i++) {
      cumulative += order[i]!.weight;
      if (target < cumulative) {
        picked = i;
        break;
      }
    }
    if (picked !== position) {
      const chosen = order[picked]!;
      // Shift instead of swap so the not-yet-picked providers keep their definition order; it
      // does not change the probabilities but keeps scripted-draw tests readable.
      for (let i = picked; i > position; i--) order[i] = order[i - 1]!;
      order[position] = chosen;
    }
  }
  return order;
}

/**
 * The order in which the share controller sends a request that does not start at the preferred
 * provider: the next provider first, then the rest in priority order, which puts the preferred
 * provider second. Only the first attempt changes (spec 3.1: "later attempts proceed as usual and
 * the preferred provider stays reachable"), so even `max_attempts: 2` can still reach it.
 */
export function deferPreferred<T>(providers: readonly T[]): readonly T[] {
  if (providers.length < 2) return providers;
  const order = providers.slice();
  order[0] = providers[1]!;
  order[1] = providers[0]!;
  return order;
}

/** What decides a pool's order besides its strategy. */
export interface OrderDeps {
  /** The pool's share controller when one runs (priority pools only). */
  readonly share?: PriorityReorder | undefined;
  /** The pool's picker (the load-aware strategies). */
  readonly picker?: PoolPicker | undefined;
}

/**
 * The attempt order for one request: the single entry point for the attempt loop. `input` is read
 * only by `prefix_affinity` (it is called only for it).
 */
export function attemptOrder<T extends Weighted>(
  strategy: RouteStrategy,
  providers: readonly T[],
  random: Random,
  deps: OrderDeps,
  input: () => PickInput,
): readonly T[] {
  switch (strategy) {
    case 'weighted_random':
      return weightedRandomOrder(providers, random);
    case 'priority':
      return deps.share ? deps.share.orderFor(providers) : priorityOrder(providers);
    case 'single':
      return providers;
    case 'round_robin':
    case 'least_request':
      return deps.picker!.order(providers, NO_INPUT, random);
    case 'prefix_affinity':
      return deps.picker!.order(providers, input(), random);
  }
}

const NO_INPUT: PickInput = { json: undefined, sessionHeader: undefined };
