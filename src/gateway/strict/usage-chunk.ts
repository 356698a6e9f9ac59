/**
 * The usage-only chunk a provider adds before `[DONE]` when a stream was asked for usage
 * (`stream_options.include_usage`): no choices, a usage object. The gateway removes it from a
 * stream whose client did not ask for usage itself (`usage.request_in_streams`).
 */
export function isUsageOnlyChunk(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const chunk = value as { readonly choices?: unknown; readonly usage?: unknown };
  return (
    Array.isArray(chunk.choices) &&
    chunk.choices.length === 0 &&
    typeof chunk.usage === 'object' &&
    chunk.usage !== null
  );
}
