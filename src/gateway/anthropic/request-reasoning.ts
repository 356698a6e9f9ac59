import type { EffortSource } from './request-messages.js';
import { DroppedFields, Refusal, expectInteger, expectRecord, optional } from './shape.js';

/**
 * `thinking` and the effort (`output_config.effort`, or that of an in-conversation system
 * message when the top level has none, the last one winning) as chat-completions
 * `reasoning_effort`.
 *
 * - `{type: "enabled", budget_tokens}`: the effort, else `medium`. A token budget has no chat
 *   equivalent, so `thinking.budget_tokens` is reported dropped.
 * - `{type: "adaptive"}`: the effort, else nothing (the provider's default).
 * - `{type: "disabled"}` or no `thinking`: nothing; an effort given anyway is reported dropped.
 * - Efforts map low/medium/high as themselves and max to high. An in-conversation effort that is
 *   not the one used and differs from it is reported dropped.
 */

const EFFORTS: ReadonlyMap<unknown, string> = new Map([
  ['low', 'low'],
  ['medium', 'medium'],
  ['high', 'high'],
  ['max', 'high'],
]);

const ENABLED_KEYS: ReadonlySet<string> = new Set(['type', 'budget_tokens']);
const TYPE_ONLY: ReadonlySet<string> = new Set(['type']);

export function reasoningEffort(
  thinking: unknown,
  topLevel: EffortSource | undefined,
  inConversation: readonly EffortSource[],
  dropped: DroppedFields,
): string | undefined {
  const sources = topLevel === undefined ? inConversation : [topLevel, ...inConversation];
  for (const source of sources) {
    if (!EFFORTS.has(source.value)) {
      throw new Refusal(source.path, `${source.path} must be "low", "medium", "high" or "max"`);
    }
  }
  const chosen = topLevel ?? inConversation.at(-1);
  for (const source of sources) {
    if (source !== chosen && source.value !== chosen?.value) dropped.add(source.pattern);
  }

  const mode = thinkingMode(thinking, dropped);
  if (mode === 'off') {
    if (chosen !== undefined) dropped.add(chosen.pattern);
    return undefined;
  }
  if (chosen !== undefined) return EFFORTS.get(chosen.value);
  return mode === 'enabled' ? 'medium' : undefined;
}

function thinkingMode(thinking: unknown, dropped: DroppedFields): 'off' | 'enabled' | 'adaptive' {
  if (thinking === undefined) return 'off';
  const record = expectRecord(thinking, 'thinking');
  switch (record.type) {
    case 'enabled':
      expectInteger(optional(record, 'budget_tokens'), 'thinking.budget_tokens', 1);
      dropped.add('thinking.budget_tokens');
      dropped.addUnknown(record, ENABLED_KEYS, 'thinking');
      return 'enabled';
    case 'adaptive':
      dropped.addUnknown(record, TYPE_ONLY, 'thinking');
      return 'adaptive';
    case 'disabled':
      dropped.addUnknown(record, TYPE_ONLY, 'thinking');
      return 'off';
    default:
      throw new Refusal('thinking.type', 'thinking.type must be "enabled", "adaptive" or "disabled"');
  }
}
