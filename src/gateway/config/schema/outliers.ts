/** Outlier ejection of a pool's providers. */
import { z } from 'zod';
import { kubernetesRules } from './fields.js';

export const OUTLIER_DEFAULTS = {
  consecutive_failures: 5,
  base_ejection_ms: 30_000,
  max_ejection_ms: 300_000,
  max_ejected_percent: 50,
} as const;

export const OutlierDetectionSchema = z
  .strictObject({
    consecutive_failures: z
      .int()
      .min(1)
      .default(OUTLIER_DEFAULTS.consecutive_failures)
      .describe(
        'Failed attempts in a row that eject a provider: a connection error, a reset, a timeout, a 5xx status (529 included, also as an error inside a 200) or a stream cut after it started. A 429 or another 4xx neither counts nor clears the count; any other answer clears it.',
      ),
    base_ejection_ms: z
      .int()
      .positive()
      .default(OUTLIER_DEFAULTS.base_ejection_ms)
      .describe(
        'How long an ejection lasts, times the number of times the provider was ejected since its last success.',
      ),
    max_ejection_ms: z
      .int()
      .positive()
      .default(OUTLIER_DEFAULTS.max_ejection_ms)
      .describe('The longest an ejection lasts. At least `base_ejection_ms`.'),
    max_ejected_percent: z
      .int()
      .min(1)
      .max(100)
      .default(OUTLIER_DEFAULTS.max_ejected_percent)
      .describe(
        "Most of the pool's providers ejected at once, in percent of the pool (rounded down); the last provider is never ejected.",
      ),
  })
  .superRefine((settings, ctx) => {
    if (settings.max_ejection_ms < settings.base_ejection_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['max_ejection_ms'],
        message: `must be at least \`base_ejection_ms\` (${settings.base_ejection_ms})`,
      });
  })
  .meta({
    ...kubernetesRules({
      rule: `(has(self.max_ejection_ms) ? self.max_ejection_ms : ${OUTLIER_DEFAULTS.max_ejection_ms}) >= (has(self.base_ejection_ms) ? self.base_ejection_ms : ${OUTLIER_DEFAULTS.base_ejection_ms})`,
      fieldPath: '.max_ejection_ms',
      message: `must be at least \`base_ejection_ms\` (default ${OUTLIER_DEFAULTS.base_ejection_ms}; \`max_ejection_ms\` defaults to ${OUTLIER_DEFAULTS.max_ejection_ms})`,
    }),
    id: 'OutlierDetection',
    title: 'Outlier detection',
    description:
      'Ejects a provider from selection after consecutive failed attempts, for a time that grows with each ejection; it then returns on probation (one more failure ejects it again, a success clears its record). Off unless set: ejection changes where requests go, so a pool opts in. `{}` turns it on with the defaults.',
  });

export type OutlierDetectionConfig = z.output<typeof OutlierDetectionSchema>;
