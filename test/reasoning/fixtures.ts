import { ReasoningTranslationSchema } from '../../src/gateway/config/schema/index.js';
import { compileReasoningTranslation, type CompiledReasoning } from '../../src/gateway/reasoning/index.js';

/**
 * Translations as a configuration file would carry them. Each goes through the config schema
 * first, so a fixture that breaks the spec's coverage rules fails loudly instead of testing a
 * configuration the gateway would never load.
 */
export function translation(config: unknown): CompiledReasoning {
  const compiled = compileReasoningTranslation(ReasoningTranslationSchema.parse(config));
  if (compiled === undefined) throw new Error('unreachable: a parsed translation compiles');
  return compiled;
}

/** A Qwen-style switch: thinking on for every effort but `none`; the two top efforts refused. */
export const switchOnly = translation({
  chat_completions: {
    writes: [
      {
        target_path: '/chat_template_kwargs/enable_thinking',
        values: { none: false, minimal: true, low: true, medium: true, high: true },
      },
    ],
    unsupported_efforts: ['xhigh', 'max'],
  },
});

/** A vLLM-style token budget plus the switch; only low, medium and high are served. */
export const budgeted = translation({
  chat_completions: {
    writes: [
      { target_path: '/thinking_token_budget', values: { low: 1024, medium: 4096, high: 8192 } },
      {
        target_path: '/chat_template_kwargs/enable_thinking',
        values: { low: true, medium: true, high: true },
      },
    ],
    unsupported_efforts: ['none', 'minimal', 'xhigh', 'max'],
  },
});

/** An upstream that speaks the canonical field with fewer levels: every effort is mapped. */
export const renamed = translation({
  chat_completions: {
    writes: [
      {
        target_path: '/reasoning_effort',
        values: {
          none: 'none',
          minimal: 'low',
          low: 'low',
          medium: 'medium',
          high: 'high',
          xhigh: 'high',
          max: 'high',
        },
      },
    ],
    unsupported_efforts: [],
  },
});

/** Responses surface only: effort renamed and a budget written next to it. */
export const responsesBudgeted = translation({
  responses: {
    writes: [
      { target_path: '/reasoning/effort', values: { low: 'low', medium: 'medium', high: 'high' } },
      { target_path: '/reasoning/max_tokens', values: { low: 512, medium: 2048, high: 6000 } },
    ],
    unsupported_efforts: ['none', 'minimal', 'xhigh', 'max'],
  },
});

/** Responses surface with a switch only (no budget); everything but `max` served. */
export const responsesSwitch = translation({
  responses: {
    writes: [
      {
        target_path: '/enable_thinking',
        values: { none: false, minimal: true, low: true, medium: true, high: true, xhigh: true },
      },
    ],
    unsupported_efforts: ['max'],
  },
});

/** Recursively frozen copy: any write to it (or to anything reachable from it) throws. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export const chatBody = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
  deepFreeze({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], ...extra });

export const responsesBody = (extra: Record<string, unknown> = {}): Record<string, unknown> =>
  deepFreeze({ model: 'llama', input: 'hi', ...extra });
