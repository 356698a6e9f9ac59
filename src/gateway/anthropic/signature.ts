import { createHash, timingSafeEqual, type Hash } from 'node:crypto';

/**
 * Signatures of the thinking blocks the gateway makes from a chat provider's reasoning.
 *
 * A Messages client sends thinking blocks back on the next turn with their `signature`. A chat
 * provider cannot take reasoning back, so the gateway drops the blocks it made itself and refuses
 * any other (Anthropic's own signatures stand for reasoning that only Anthropic can restore). The
 * signature is a recognizable prefix and the SHA-256 of the thinking text (UTF-8), base64url: no
 * key, so every replica and every restart agree, and any change to the text breaks the match. It
 * authenticates nothing, and needs not: a block that matches is only ever dropped.
 */

const PREFIX = 'lgw1.';

export function thinkingSignature(thinking: string): string {
  return PREFIX + createHash('sha256').update(thinking, 'utf8').digest('base64url');
}

/** The signature is the one this gateway gives `thinking` (compared in constant time). */
export function isGatewaySignature(thinking: string, signature: string): boolean {
  const expected = Buffer.from(thinkingSignature(thinking), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

const HIGH_SURROGATE_FIRST = 0xd800;
const HIGH_SURROGATE_LAST = 0xdbff;

/**
 * `thinkingSignature` of a text that arrives in pieces, without keeping the text. A piece that
 * ends with the first half of a surrogate pair keeps that half back until the next piece: hashing
 * it alone would encode it as U+FFFD, while the whole text encodes the pair as one character.
 */
export class ThinkingSigner {
  readonly #hash: Hash = createHash('sha256');
  #heldHighSurrogate = '';

  update(piece: string): void {
    let text = this.#heldHighSurrogate === '' ? piece : this.#heldHighSurrogate + piece;
    this.#heldHighSurrogate = '';
    const last = text.charCodeAt(text.length - 1);
    if (last >= HIGH_SURROGATE_FIRST && last <= HIGH_SURROGATE_LAST) {
      this.#heldHighSurrogate = text.slice(-1);
      text = text.slice(0, -1);
    }
    if (text.length > 0) this.#hash.update(text, 'utf8');
  }

  /** The signature of everything updated so far; the signer is spent afterwards. */
  signature(): string {
    if (this.#heldHighSurrogate !== '') this.#hash.update(this.#heldHighSurrogate, 'utf8');
    return PREFIX + this.#hash.digest('base64url');
  }
}
