/**
 * What `prefix_affinity` routes a request by: an explicit session key when the client gives one,
 * else the hashes of its prompt's leading content in fixed-size blocks, each chained with the one
 * before (so a block stands for everything up to it). A request that extends an earlier one (the
 * next turn of a conversation: the same system prompt, tools and messages, then more) has that
 * request's blocks as its own leading blocks.
 *
 * Read from the body the request path has parsed already; nothing here parses or copies the body.
 * The hashes are 53-bit numbers (two 32-bit FNV-1a variants), cheap to compute and to key a Map by.
 */

/** Where a session key comes from, in the order they are read. */
export type SessionSource = 'prompt_cache_key' | 'user' | 'header';

export interface AffinityKey {
  /** An explicit session key's hash, when the request has one. */
  readonly session: number | undefined;
  readonly sessionSource: SessionSource | undefined;
  /** The chained hashes of the leading content's full blocks, in order (at most `maxBlocks`). */
  readonly blocks: readonly number[];
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** The second lane's start, and a session key's multiplier in it. */
const SECOND_OFFSET = 0x050c5d1f;
const SECOND_PRIME = 0x5bd1e995;

/**
 * MurmurHash3's finalizer: FNV-1a alone spreads a small difference (one character of a long
 * prompt) over few high bits, so similar prompts would crowd one arc of the ring.
 */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** 32 bits of one lane and 21 of the other, each mixed: a 53-bit number, exact as a JavaScript number. */
const combine = (a: number, b: number): number => (mix(a) >>> 0) * 0x200000 + ((mix(b) >>> 0) & 0x1fffff);

/**
 * A block's hash from the four lanes: each half of the result depends on every lane (a character
 * changes one lane only, and either half alone places a prompt on the ring or in the table).
 */
function blockHash(l0: number, l1: number, l2: number, l3: number): number {
  const high = l0 ^ mix(l1 ^ mix(l2 ^ mix(l3)));
  const low = l3 ^ mix(l2 ^ mix(l1 ^ mix(l0 ^ SECOND_OFFSET)));
  return combine(high, low);
}

/** A 53-bit hash of a string (a session key, a ring point). */
export function hashString(text: string): number {
  let a = FNV_OFFSET;
  let b = SECOND_OFFSET;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, FNV_PRIME);
    b = Math.imul(b ^ c, SECOND_PRIME);
  }
  return combine(a, b);
}

/**
 * Cuts the text fed to it into blocks of `blockChars` and keeps the chained hash of each full block.
 * Four FNV-1a lanes take every fourth character each (by position in the whole text, however it is
 * fed): one lane's multiplications wait on each other, four lanes' do not, so the loop runs about
 * three times faster than one lane over every character. A block's hash mixes the four lanes, which
 * carry on into the next block: it stands for the whole prefix up to it.
 */
class BlockHasher {
  readonly blocks: number[] = [];
  private readonly lanes = [FNV_OFFSET, SECOND_OFFSET, FNV_OFFSET ^ 0x5555, SECOND_OFFSET ^ 0x5555];
  private filled = 0;
  private position = 0;
  private readonly blockChars: number;
  private readonly maxBlocks: number;

  constructor(blockChars: number, maxBlocks: number) {
    this.blockChars = blockChars;
    this.maxBlocks = maxBlocks;
  }

  get full(): boolean {
    return this.blocks.length >= this.maxBlocks;
  }

  feed(text: string): void {
    // Locals in the loop, fields written back once: this runs over every character of the prompt.
    let [l0, l1, l2, l3] = this.lanes as [number, number, number, number];
    let { filled, position } = this;
    const { blockChars, maxBlocks, blocks } = this;
    const length = text.length;
    let i = 0;
    while (i < length && blocks.length < maxBlocks) {
      const end = Math.min(length, i + blockChars - filled);
      filled += end - i;
      // Single characters up to a position that starts a round of four, then rounds, then the rest.
      for (; i < end && (position & 3) !== 0; i++, position++) {
        const c = text.charCodeAt(i);
        if ((position & 3) === 1) l1 = Math.imul(l1 ^ c, FNV_PRIME);
        else if ((position & 3) === 2) l2 = Math.imul(l2 ^ c, FNV_PRIME);
        else l3 = Math.imul(l3 ^ c, FNV_PRIME);
      }
      for (; i + 4 <= end; i += 4, position += 4) {
        l0 = Math.imul(l0 ^ text.charCodeAt(i), FNV_PRIME);
        l1 = Math.imul(l1 ^ text.charCodeAt(i + 1), FNV_PRIME);
        l2 = Math.imul(l2 ^ text.charCodeAt(i + 2), FNV_PRIME);
        l3 = Math.imul(l3 ^ text.charCodeAt(i + 3), FNV_PRIME);
      }
      for (; i < end; i++, position++) {
        const c = text.charCodeAt(i);
        if ((position & 3) === 0) l0 = Math.imul(l0 ^ c, FNV_PRIME);
        else if ((position & 3) === 1) l1 = Math.imul(l1 ^ c, FNV_PRIME);
        else l2 = Math.imul(l2 ^ c, FNV_PRIME);
      }
      if (filled === blockChars) {
        blocks.push(blockHash(l0, l1, l2, l3));
        filled = 0;
      }
    }
    this.lanes[0] = l0;
    this.lanes[1] = l1;
    this.lanes[2] = l2;
    this.lanes[3] = l3;
    this.filled = filled;
    this.position = position;
  }
}

/** A message's text: its string content, or the text of its parts (other parts are left out). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content)
    if (typeof part === 'object' && part !== null) {
      const value = (part as { text?: unknown }).text;
      if (typeof value === 'string') text += value;
    }
  return text;
}

/**
 * The affinity key of a request: `prompt_cache_key`, then `user` (both body fields of OpenAI's API),
 * then the `x-session-id` header name a session; then the prompt's leading content in the order a
 * model reads it: the system messages, the tools, then every message in order (chat), or the
 * prompt (text completions), or the input (Responses).
 */
export function affinityKey(
  json: Record<string, unknown> | undefined,
  sessionHeader: string | undefined,
  blockChars: number,
  maxBlocks: number,
): AffinityKey {
  let session: string | undefined;
  let sessionSource: SessionSource | undefined;
  if (typeof json?.prompt_cache_key === 'string' && json.prompt_cache_key !== '') {
    session = json.prompt_cache_key;
    sessionSource = 'prompt_cache_key';
  } else if (typeof json?.user === 'string' && json.user !== '') {
    session = json.user;
    sessionSource = 'user';
  } else if (sessionHeader !== undefined && sessionHeader !== '') {
    session = sessionHeader;
    sessionSource = 'header';
  }
  const hasher = new BlockHasher(blockChars, maxBlocks);
  if (json !== undefined) {
    const messages = Array.isArray(json.messages) ? (json.messages as unknown[]) : undefined;
    if (messages !== undefined) {
      for (const message of messages)
        if ((message as { role?: unknown } | null)?.role === 'system')
          hasher.feed(contentText((message as { content?: unknown }).content));
      if (json.tools !== undefined && !hasher.full) hasher.feed(JSON.stringify(json.tools));
      for (const message of messages) {
        if (hasher.full) break;
        const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown };
        if (role === 'system') continue;
        hasher.feed(typeof role === 'string' ? role : '');
        hasher.feed(contentText(content));
      }
    } else if (typeof json.prompt === 'string') hasher.feed(json.prompt);
    else if (typeof json.input === 'string') hasher.feed(json.input);
    else if (json.prompt !== undefined || json.input !== undefined)
      hasher.feed(JSON.stringify(json.prompt ?? json.input));
  }
  return {
    session: session === undefined ? undefined : hashString(session),
    sessionSource,
    blocks: hasher.blocks,
  };
}
