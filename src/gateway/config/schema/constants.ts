/** Names and defaults the schema shares with the runtime: efforts, strategies, surfaces, upstream auth. */

import type { ReasoningSurfaceName } from '../../api/surfaces.js';

/** The seven reasoning efforts clients may send, in increasing order (spec 2.6). */
export const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORTS)[number];

export const STRATEGIES = [
  'weighted_random',
  'priority',
  'round_robin',
  'least_request',
  'prefix_affinity',
] as const;
/** The `strategy` a pool may configure. */
export type PoolStrategy = (typeof STRATEGIES)[number];
/** A pool without `strategy` balances at random by weight. */
export const DEFAULT_STRATEGY: PoolStrategy = 'weighted_random';

/** The request surfaces a reasoning translation can be configured for (DESIGN 6). */
export const REASONING_SURFACES = [
  'chat_completions',
  'responses',
] as const satisfies readonly ReasoningSurfaceName[];
export type { ReasoningSurfaceName };

export const DEFAULT_UPSTREAM_AUTH_HEADER_NAME = 'Authorization';
export const DEFAULT_UPSTREAM_AUTH_HEADER_PREFIX = 'Bearer ';
