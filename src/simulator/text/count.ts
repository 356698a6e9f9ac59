/**
 * Prompt token estimate. The simulator has no tokenizer; about four characters per token is the
 * usual rule of thumb for English BPE vocabularies and is all the latency model needs.
 */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.ceil(text.length / 4);
}

/**
 * The tokens `estimateTokens` counts, as strings: the text in slices of four characters. Equal text
 * gives equal tokens, so two prompts that start alike share their leading tokens (the prefix cache's
 * blocks).
 */
export function textTokens(text: string, into: string[] = []): string[] {
  for (let i = 0; i < text.length; i += 4) into.push(text.slice(i, i + 4));
  return into;
}

/** Splits scripted text into frame-sized pieces: a word with its trailing space, long words cut. */
export function splitIntoPieces(text: string, maxChars = 16): string[] {
  const pieces: string[] = [];
  for (const match of text.matchAll(/\S+\s*|\s+/gu)) {
    const chars = Array.from(match[0]);
    for (let i = 0; i < chars.length; i += maxChars) pieces.push(chars.slice(i, i + maxChars).join(''));
  }
  return pieces;
}
