/**
 * The share controller's parameters (spec 3.1): the overrides a pool may set, their defaults, and the
 * resolved values the controller runs with.
 */
import { z } from 'zod';
import { ErrorStatusSchema, uniqueItems } from './fields.js';

/** Resolved share-controller parameters: every AIMD field with a value. */
export interface AimdParameters {
  readonly latency_budget_ms: number;
  readonly breach_rate_target: number;
  readonly recovery_breach_rate: number;
  readonly window_samples: number;
  readonly min_samples: number;
  readonly share_step: number;
  readonly share_decay: number;
  readonly share_floor: number;
  readonly dwell_ms: number;
  readonly idle_recovery_ms: number;
  readonly overload_statuses: readonly number[];
}

/**
 * Share-controller defaults (DESIGN 6). They are applied when the controller is built, never baked
 * into the parsed config, so the runtime can still tell an explicit override from a default (spec
 * 3.1: a reload keeps the controller state only when the parameters are unchanged).
 */
export const AIMD_DEFAULTS: AimdParameters = Object.freeze({
  latency_budget_ms: 2000,
  breach_rate_target: 0.1,
  recovery_breach_rate: 0.02,
  window_samples: 100,
  min_samples: 20,
  share_step: 0.05,
  share_decay: 0.5,
  share_floor: 0.05,
  dwell_ms: 10_000,
  idle_recovery_ms: 30_000,
  overload_statuses: Object.freeze([429, 503, 529]),
});

// AIMD fields carry their default as documentation only (`meta`, not `.default()`): the parsed config
// keeps "not set" distinguishable from "set to the default value".
export const AimdOverridesSchema = z
  .strictObject({
    latency_budget_ms: z
      .int()
      .min(1)
      .optional()
      .describe(
        `First-token latency in milliseconds above which an attempt on the preferred provider counts as a breach.`,
      )
      .meta({ default: AIMD_DEFAULTS.latency_budget_ms }),
    breach_rate_target: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(`Breach rate (0-1) above which the share decreases.`)
      .meta({ default: AIMD_DEFAULTS.breach_rate_target }),
    recovery_breach_rate: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(`Breach rate (0-1) at or below which the share may increase; at most \`breach_rate_target\`.`)
      .meta({ default: AIMD_DEFAULTS.recovery_breach_rate }),
    window_samples: z
      .int()
      .min(1)
      .optional()
      .describe(`Completed outcomes over which the breach rate is measured.`)
      .meta({ default: AIMD_DEFAULTS.window_samples }),
    min_samples: z
      .int()
      .min(1)
      .optional()
      .describe(`Completed outcomes needed before a latency-driven decision; at most \`window_samples\`.`)
      .meta({ default: AIMD_DEFAULTS.min_samples }),
    share_step: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(`Additive share increase per healthy dwell or idle interval (0 < step <= 1).`)
      .meta({ default: AIMD_DEFAULTS.share_step }),
    share_decay: z
      .number()
      .gt(0)
      .lt(1)
      .optional()
      .describe(`Multiplicative decrease factor applied when the breach rate is exceeded (0 < decay < 1).`)
      .meta({ default: AIMD_DEFAULTS.share_decay }),
    share_floor: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe(`Minimum share kept so the preferred provider stays measured (0 < floor <= 1).`)
      .meta({ default: AIMD_DEFAULTS.share_floor }),
    dwell_ms: z
      .int()
      .min(0)
      .optional()
      .describe(`Minimum milliseconds between adjustments, and healthy time required before an increase.`)
      .meta({ default: AIMD_DEFAULTS.dwell_ms }),
    idle_recovery_ms: z
      .int()
      .min(0)
      .optional()
      .describe(
        `Interval in milliseconds that earns one increase step while too few samples exist to judge; 0 disables.`,
      )
      .meta({ default: AIMD_DEFAULTS.idle_recovery_ms }),
    overload_statuses: z
      .array(ErrorStatusSchema)
      .superRefine(uniqueItems('status'))
      .meta({ uniqueItems: true })
      .optional()
      .describe(`Upstream error statuses (400-599) from the preferred provider that count as breaches.`)
      .meta({ default: AIMD_DEFAULTS.overload_statuses }),
  })
  .superRefine((overrides, ctx) => {
    // Relations hold between effective values, so an override is checked against the other field's
    // default too. The issue goes to a field the user actually set.
    const effective = resolveAimd(overrides);
    const ordered = (
      low: 'recovery_breach_rate' | 'min_samples',
      high: 'breach_rate_target' | 'window_samples',
    ): void => {
      if (effective[low] <= effective[high]) return;
      const source = (field: keyof AimdParameters): string =>
        overrides[field] === undefined
          ? `${String(effective[field])}, the default`
          : String(effective[field]);
      const at = overrides[low] !== undefined ? low : high;
      ctx.addIssue({
        code: 'custom',
        path: [at],
        message: `\`${low}\` (${source(low)}) must not exceed \`${high}\` (${source(high)})`,
      });
    };
    ordered('recovery_breach_rate', 'breach_rate_target');
    ordered('min_samples', 'window_samples');
  })
  .meta({
    id: 'AimdOverrides',
    title: 'AIMD overrides',
    description:
      'Overrides of the first-token share controller defaults. Fields left out keep their default. The controller runs on pools with `strategy: priority`, fallback enabled and more than one provider.',
  });

export type AimdOverrides = z.output<typeof AimdOverridesSchema>;

/** Every AIMD parameter: the override where given, else the default. */
export function resolveAimd(overrides: AimdOverrides | undefined): AimdParameters {
  return Object.freeze({
    latency_budget_ms: overrides?.latency_budget_ms ?? AIMD_DEFAULTS.latency_budget_ms,
    breach_rate_target: overrides?.breach_rate_target ?? AIMD_DEFAULTS.breach_rate_target,
    recovery_breach_rate: overrides?.recovery_breach_rate ?? AIMD_DEFAULTS.recovery_breach_rate,
    window_samples: overrides?.window_samples ?? AIMD_DEFAULTS.window_samples,
    min_samples: overrides?.min_samples ?? AIMD_DEFAULTS.min_samples,
    share_step: overrides?.share_step ?? AIMD_DEFAULTS.share_step,
    share_decay: overrides?.share_decay ?? AIMD_DEFAULTS.share_decay,
    share_floor: overrides?.share_floor ?? AIMD_DEFAULTS.share_floor,
    dwell_ms: overrides?.dwell_ms ?? AIMD_DEFAULTS.dwell_ms,
    idle_recovery_ms: overrides?.idle_recovery_ms ?? AIMD_DEFAULTS.idle_recovery_ms,
    overload_statuses: Object.freeze([...(overrides?.overload_statuses ?? AIMD_DEFAULTS.overload_statuses)]),
  });
}
