import {
  aimdApplies,
  providerIdentity,
  resolveAimd,
  type AimdOverrides,
  type AimdParameters,
  type TargetConfig,
} from '../config/schema/index.js';
import { monotonicClock, type Clock } from '../limits/clock.js';
import type { AimdMetrics, AimdSeries } from './aimd-metrics.js';
import { ShareController, type ControllerState } from './aimd.js';
import type { Random } from './strategies.js';

/**
 * Share controllers across configuration reloads (spec 3.1, DESIGN 3).
 *
 * A controller is bound to its pool key, its `model` label, the identity of the preferred provider,
 * the resolved AIMD parameters and the explicit first-token deadline. On each rebuild, per pool:
 *
 * - eligible, binding unchanged: the same controller continues (a parked one resumes its share).
 * - eligible, binding changed (or no controller yet): a new controller at share 1.
 * - not eligible, binding unchanged: the controller is parked; its share waits for the pool to
 *   become eligible again. Opting out with `aimd: false` changes the binding, so it discards.
 * - not eligible otherwise, or the pool is gone: the controller is retired.
 *
 * The registry is one mutable object per gateway: requests of an older table keep the controller
 * they were given (a retired one ignores their outcomes for the share), and the registry owns the
 * single interval that lets idle pools' gauges move.
 */

/** What the compile step knows about one target (a pool, or a single-provider target). */
export interface PoolDescriptor {
  /** The configured target key: the `pool` label. */
  readonly key: string;
  /** The alias without a request-class suffix: the `model` label. */
  readonly model: string;
  /** Provider identities (`name`, defaulting to the url) in definition order. */
  readonly providers: readonly string[];
  /** Whether a share controller runs on the pool, as `aimdApplies` decides it. */
  readonly eligible: boolean;
  /** The `fallback.aimd` field as configured. */
  readonly aimd: false | AimdOverrides | undefined;
  /** The explicit `fallback.first_token_timeout_ms`, undefined when absent. */
  readonly firstTokenTimeoutMs: number | undefined;
}

/** Builds the descriptor of a validated target. */
export function describePool(
  key: string,
  model: string,
  target: Pick<TargetConfig, 'providers' | 'url' | 'strategy' | 'fallback'>,
): PoolDescriptor {
  const providers = target.providers;
  return {
    key,
    model,
    providers: providers ? providers.map(providerIdentity) : target.url !== undefined ? [target.url] : [],
    eligible: aimdApplies(target),
    aimd: target.fallback?.aimd,
    firstTokenTimeoutMs: target.fallback?.first_token_timeout_ms,
  };
}

interface Binding {
  readonly model: string;
  readonly preferred: string | undefined;
  /** Undefined when the pool opted out (`aimd: false`): nothing to compare, so never the same. */
  readonly params: AimdParameters | undefined;
  readonly deadline: number | undefined;
}

function bindingOf(pool: PoolDescriptor): Binding {
  return {
    model: pool.model,
    preferred: pool.providers[0],
    params: pool.aimd === false ? undefined : resolveAimd(pool.aimd),
    deadline: pool.firstTokenTimeoutMs,
  };
}

function sameBinding(a: Binding, b: Binding): boolean {
  return (
    a.model === b.model &&
    a.preferred !== undefined &&
    a.preferred === b.preferred &&
    a.deadline === b.deadline &&
    a.params !== undefined &&
    b.params !== undefined &&
    sameParameters(a.params, b.params)
  );
}

/**
 * Compares resolved values: an override equal to the default is no change. Overload statuses are
 * a set, so their order in the file does not matter.
 */
export function sameParameters(a: AimdParameters, b: AimdParameters): boolean {
  const scalars = [
    'latency_budget_ms',
    'breach_rate_target',
    'recovery_breach_rate',
    'window_samples',
    'min_samples',
    'share_step',
    'share_decay',
    'share_floor',
    'dwell_ms',
    'idle_recovery_ms',
  ] as const;
  for (const field of scalars) if (a[field] !== b[field]) return false;
  const statuses = new Set(a.overload_statuses);
  return (
    statuses.size === new Set(b.overload_statuses).size && b.overload_statuses.every((s) => statuses.has(s))
  );
}

interface Slot {
  readonly controller: ShareController;
  readonly binding: Binding;
  readonly series: AimdSeries;
}

export interface AimdRegistryOptions {
  readonly metrics: AimdMetrics;
  readonly clock?: Clock;
  readonly random?: Random;
}

/** Default period of the shared tick: fine enough for a gauge, negligible work. */
export const AIMD_TICK_MS = 1000;

export class AimdRegistry {
  readonly #metrics: AimdMetrics;
  readonly #clock: Clock;
  readonly #random: Random;
  #slots = new Map<string, Slot>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: AimdRegistryOptions) {
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? monotonicClock;
    this.#random = options.random ?? Math.random;
  }

  /**
   * Applies a new configuration. Returns, for every descriptor, the controller its requests use
   * (undefined where no controller runs). Call it once per successful compile, after everything
   * that can still fail: it retires and parks controllers as it goes.
   */
  rebuild(pools: Iterable<PoolDescriptor>): Map<string, ShareController | undefined> {
    const list = [...pools];
    // Checked before anything changes, so a bad call leaves the registry as it was.
    const keys = new Set<string>();
    for (const pool of list) {
      if (keys.has(pool.key)) throw new Error(`pool ${pool.key} described twice`);
      keys.add(pool.key);
    }
    const next = new Map<string, Slot>();
    const result = new Map<string, ShareController | undefined>();
    for (const pool of list) {
      const previous = this.#slots.get(pool.key);
      const binding = bindingOf(pool);
      const kept = previous !== undefined && sameBinding(previous.binding, binding) ? previous : undefined;
      if (pool.eligible) {
        let slot = kept;
        if (slot) slot.controller.resume();
        else slot = this.#create(pool, binding.params!, binding);
        next.set(pool.key, slot);
        result.set(pool.key, slot.controller);
      } else {
        if (kept) {
          kept.controller.park();
          next.set(pool.key, kept);
        }
        result.set(pool.key, undefined);
      }
    }

    // Zero the active gauge of every controller that did not survive before writing the survivors'
    // values: a replaced controller shares its label set with its successor.
    for (const slot of this.#slots.values()) {
      if (next.get(slot.series.pool)?.controller === slot.controller) continue;
      slot.controller.retire();
      slot.series.setActive(false);
    }
    for (const slot of next.values()) slot.series.setActive(slot.controller.state === 'active');
    this.#slots = next;
    return result;
  }

  /** The controller that new requests of the pool use; undefined when none runs (parked, absent). */
  controller(poolKey: string): ShareController | undefined {
    const slot = this.#slots.get(poolKey);
    return slot?.controller.state === 'active' ? slot.controller : undefined;
  }

  /** Active or parked; undefined when the registry holds no controller for the pool. */
  stateOf(poolKey: string): ControllerState | undefined {
    return this.#slots.get(poolKey)?.controller.state;
  }

  /** Lets time-driven transitions (and so the share gauge) happen in pools without traffic. */
  tick(): void {
    for (const slot of this.#slots.values()) if (slot.controller.state === 'active') slot.controller.tick();
  }

  /** Starts the shared interval; unref'd so it never keeps the process alive. */
  start(intervalMs: number = AIMD_TICK_MS): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.tick(), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #create(pool: PoolDescriptor, params: AimdParameters, binding: Binding): Slot {
    const series = this.#metrics.series(pool.model, pool.key, params.overload_statuses);
    const controller = new ShareController({ params, clock: this.#clock, random: this.#random, series });
    return { controller, binding, series };
  }
}
