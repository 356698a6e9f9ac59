import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ThinkingSigner,
  isGatewaySignature,
  thinkingSignature,
} from '../../src/gateway/anthropic/signature.js';

describe('thinkingSignature', () => {
  it('is the prefix and the base64url SHA-256 of the text', () => {
    const text = 'Let me think about 😀 this.';
    const digest = createHash('sha256').update(Buffer.from(text, 'utf8')).digest('base64url');
    expect(thinkingSignature(text)).toBe(`lgw1.${digest}`);
  });

  it('is deterministic and differs for different texts', () => {
    expect(thinkingSignature('a')).toBe(thinkingSignature('a'));
    expect(thinkingSignature('a')).not.toBe(thinkingSignature('b'));
    expect(thinkingSignature('')).toMatch(/^lgw1\.[A-Za-z0-9_-]{43}$/);
  });
});

describe('isGatewaySignature', () => {
  it('accepts the signature of the same text', () => {
    expect(isGatewaySignature('reasoning', thinkingSignature('reasoning'))).toBe(true);
  });

  it('refuses altered text, other signatures and malformed ones', () => {
    const signature = thinkingSignature('reasoning');
    expect(isGatewaySignature('reasoning.', signature)).toBe(false);
    expect(isGatewaySignature('reasoning', signature.slice(0, -1))).toBe(false);
    expect(isGatewaySignature('reasoning', `${signature}x`)).toBe(false);
    expect(isGatewaySignature('reasoning', 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds')).toBe(
      false,
    );
    expect(isGatewaySignature('reasoning', '')).toBe(false);
  });
});

describe('ThinkingSigner', () => {
  it('signs a text given in pieces as thinkingSignature signs it whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.array(fc.nat(), { maxLength: 8 }), (text, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const signer = new ThinkingSigner();
        let last = 0;
        for (const p of points) {
          signer.update(text.slice(last, p));
          last = p;
        }
        signer.update(text.slice(last));
        expect(signer.signature()).toBe(thinkingSignature(text));
      }),
    );
  });

  it('keeps a surrogate pair split between pieces whole', () => {
    const signer = new ThinkingSigner();
    signer.update('smile \ud83d');
    signer.update('\ude00 done');
    expect(signer.signature()).toBe(thinkingSignature('smile 😀 done'));
  });
});
