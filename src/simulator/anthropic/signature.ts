import { createHmac } from 'node:crypto';
import type { ThinkingBlock } from './requests.js';

/**
 * Thinking signatures. Anthropic signs every thinking block and refuses a request that hands one
 * back altered or unsigned; the simulator does the same with an HMAC-SHA256 of the thinking text.
 * The key is fixed, so a signature stays valid across restarts and the same script gives the same
 * bytes on every run; it proves only that the text came from a simulator unchanged.
 */
const SIGNATURE_KEY = 'sim-thinking-signature';

export function thinkingSignature(thinking: string): string {
  return createHmac('sha256', SIGNATURE_KEY).update(thinking, 'utf8').digest('base64');
}

/** The path of the first thinking block whose signature the simulator did not make, if any. */
export function invalidSignaturePath(blocks: readonly ThinkingBlock[]): string | undefined {
  for (const item of blocks) {
    const valid =
      typeof item.thinking === 'string' &&
      typeof item.signature === 'string' &&
      item.signature === thinkingSignature(item.thinking);
    if (!valid) return item.path;
  }
  return undefined;
}
