/**
 * vLLM's automatic prefix caching, modelled: a prompt is cut into blocks of `blockTokens` tokens,
 * each block identified by a hash of its tokens chained with the hash of the block before it (so a
 * block matches only after the same prefix). A request's leading blocks found in the cache need no
 * prefill. Only full blocks are cached, as in vLLM. The cache holds `capacityTokens` worth of blocks
 * and evicts the least recently used; of one prompt's blocks the last are evicted first (vLLM frees
 * a request's blocks in reverse order), so a shared prefix outlives the tails that follow it.
 */
import { createHash } from 'node:crypto';

export interface PrefixCacheConfig {
  readonly blockTokens: number;
  /** 0: no cache. */
  readonly capacityTokens: number;
}

/** The chained hashes of a prompt's full blocks, in order. */
export function blockHashes(tokens: readonly string[], blockTokens: number): string[] {
  const hashes: string[] = [];
  let previous = '';
  for (let start = 0; start + blockTokens <= tokens.length; start += blockTokens) {
    const hash = createHash('sha1').update(previous);
    for (let i = start; i < start + blockTokens; i++) hash.update('\u0000').update(tokens[i]!);
    previous = hash.digest('hex');
    hashes.push(previous);
  }
  return hashes;
}

export class PrefixCache {
  readonly blockTokens: number;
  private readonly capacityBlocks: number;
  /** Block hash -> present; Map order is recency (least recently used first). */
  private readonly blocks = new Map<string, true>();

  constructor(config: PrefixCacheConfig) {
    this.blockTokens = config.blockTokens;
    this.capacityBlocks = Math.floor(config.capacityTokens / config.blockTokens);
  }

  /** Tokens held, for the KV-cache usage gauge. */
  get cachedTokens(): number {
    return this.blocks.size * this.blockTokens;
  }

  get capacityTokens(): number {
    return this.capacityBlocks * this.blockTokens;
  }

  /**
   * Prefills a prompt: returns how many of its leading tokens were found in the cache, then caches
   * every full block of it, its first block the most recently used.
   */
  prefill(hashes: readonly string[]): number {
    let hits = 0;
    while (hits < hashes.length && this.blocks.has(hashes[hits]!)) hits++;
    for (let i = hashes.length - 1; i >= 0; i--) {
      this.blocks.delete(hashes[i]!);
      this.blocks.set(hashes[i]!, true);
    }
    while (this.blocks.size > this.capacityBlocks) this.blocks.delete(this.blocks.keys().next().value!);
    return hits * this.blockTokens;
  }
}
