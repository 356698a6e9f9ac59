import type { IncomingHttpHeaders } from 'node:http';
import { hash, timingSafeEqual } from 'node:crypto';

/*
 * Client authentication (spec 5): which bearer tokens each target accepts, and who they belong to.
 *
 * Input types are structural and minimal: the config schema is written elsewhere and has exactly
 * these field names (spec 2.2, 2.4), so its parsed output can be passed in as is.
 */

export interface RateLimitInput {
  readonly requests_per_second: number;
  readonly burst_size: number;
}

export interface ConcurrencyLimitInput {
  readonly max_concurrent_requests: number;
}

export interface TokenLimitInput {
  readonly tokens_per_minute: number;
  readonly burst_tokens?: number | undefined;
}

export interface KeyDefinitionInput {
  readonly key: string;
  readonly rate_limit?: RateLimitInput | undefined;
  readonly concurrency_limit?: ConcurrencyLimitInput | undefined;
  readonly token_limit?: TokenLimitInput | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
}

/**
 * A value read from a secret reference (a file or an environment variable): always a bearer token,
 * never taken for the name of a key definition, whatever its content.
 */
export interface TokenEntry {
  readonly token: string;
}

/** An entry of `keys` or `global_keys`: a definition name or a literal token, or a referenced token. */
export type KeyEntry = string | TokenEntry;

export interface AuthConfigInput {
  readonly global_keys?: readonly KeyEntry[] | undefined;
  readonly key_definitions?: Readonly<Record<string, KeyDefinitionInput>> | undefined;
}

export interface TargetKeysInput {
  readonly keys?: readonly KeyEntry[] | undefined;
}

/**
 * Who a request authenticated as. Never contains the token. Built once per configuration and shared
 * by every request with that key, so identity checks are reference-cheap and authenticate allocates
 * nothing for it.
 */
export interface KeyIdentity {
  /**
   * Stable, non-secret identifier for logs and per-key limiter identities: the definition name for
   * named keys, otherwise `sha256:` and the first 8 hex digits of the key's SHA-256 (a 32-bit
   * fingerprint: fine for telling keys apart in logs; keys themselves must be high-entropy, as any
   * fingerprint of a guessable key lets it be guessed offline).
   */
  readonly keyId: string;
  /** Name in `key_definitions`, when the key is a named key. */
  readonly definitionName: string | undefined;
  /** The `account` label: all keys with the same account share one in-flight count. */
  readonly account: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** Per-key limits (spec 5 rule 4: keys without them are limited only by target limits). */
  readonly rateLimit: RateLimitInput | undefined;
  readonly concurrencyLimit: ConcurrencyLimitInput | undefined;
  readonly tokenLimit: TokenLimitInput | undefined;
}

export type AuthFailureReason = 'missing' | 'malformed' | 'invalid';

/** Result of `authenticate`. `identity` is null on an open target (no keys configured). */
export type AuthResult =
  | { readonly ok: true; readonly identity: KeyIdentity | null }
  | { readonly ok: false; readonly reason: AuthFailureReason };

export interface KeyIndexProblem {
  /** Config path of the offending value, e.g. `auth.key_definitions.team-a.key`. */
  readonly path: string;
  readonly message: string;
}

export type KeyIndexBuild =
  | { readonly ok: true; readonly index: KeyIndex }
  | { readonly ok: false; readonly problems: readonly KeyIndexProblem[] };

/**
 * One accepted token: its digest, its identity, and the targets it opens. The result objects are
 * preallocated so a successful authentication allocates only the presented token's digest (its
 * text, and its bytes for the comparison).
 */
interface KeyRecord {
  readonly digest: Buffer;
  readonly identity: KeyIdentity;
  readonly success: AuthResult;
  /** Aliases listed by `GET /v1/models` for this key: open targets and the targets accepting it. */
  visible: readonly string[];
}

const MISSING: AuthResult = Object.freeze({ ok: false as const, reason: 'missing' as const });
const MALFORMED: AuthResult = Object.freeze({ ok: false as const, reason: 'malformed' as const });
const INVALID: AuthResult = Object.freeze({ ok: false as const, reason: 'invalid' as const });
const OPEN: AuthResult = Object.freeze({ ok: true as const, identity: null });

/**
 * The key set of one target. `open` targets accept every request without looking at the header.
 *
 * Lookup is by the SHA-256 digest of the presented token. A Map lookup is not constant-time, but
 * what it could leak is how the presented token's *digest* relates to the stored digests (e.g. a
 * shared prefix). An attacker controls the token, not the digest: finding a token whose digest
 * matches a stored one more closely tells nothing about the stored token (preimage resistance), so
 * timing cannot be used to build a key up byte by byte, which is what comparing raw tokens would
 * allow. The `timingSafeEqual` confirmation after the hit is belt and braces: it makes the accept
 * decision itself a constant-time comparison of full digests, independent of how Map compares.
 */
export class TargetAuth {
  readonly alias: string;
  readonly open: boolean;
  readonly #byDigest: ReadonlyMap<string, KeyRecord>;

  constructor(alias: string, open: boolean, byDigest: ReadonlyMap<string, KeyRecord>) {
    this.alias = alias;
    this.open = open;
    this.#byDigest = byDigest;
  }

  authenticate(authorization: string | undefined): AuthResult {
    if (this.open) return OPEN;
    if (authorization === undefined) return MISSING;
    const token = parseBearer(authorization);
    if (token === null) return MALFORMED;
    const record = this.#lookup(token);
    return record === undefined ? INVALID : record.success;
  }

  /** Number of distinct tokens accepted (0 on an open target). */
  get keyCount(): number {
    return this.#byDigest.size;
  }

  #lookup(token: string): KeyRecord | undefined {
    return recordOf(this.#byDigest, token);
  }
}

/** Authenticates one request against a target's key set (spec 5 rules 1-3). */
export function authenticate(target: TargetAuth, authorization: string | undefined): AuthResult {
  return target.authenticate(authorization);
}

/**
 * The credential a request presents, as an `Authorization` value: its own, else the key in
 * `x-api-key` (the Anthropic clients' header) as a bearer token. `Authorization` wins when both are
 * sent.
 */
export function presentedAuthorization(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined) return authorization;
  const apiKey = headers['x-api-key'];
  return typeof apiKey === 'string' ? `Bearer ${apiKey}` : undefined;
}

/**
 * Extracts the token of `Bearer <token>`: scheme case-insensitive, spaces or tabs around and
 * between tolerated, token without whitespace. Returns null when the value is not of that form.
 * Written without a regex: it runs on every authenticated request.
 */
export function parseBearer(value: string): string | null {
  let i = 0;
  const end = trimmedEnd(value);
  while (i < end && isBlank(value.charCodeAt(i))) i++;
  if (end - i < 8 || value.slice(i, i + 6).toLowerCase() !== 'bearer') return null;
  i += 6;
  if (!isBlank(value.charCodeAt(i))) return null;
  while (i < end && isBlank(value.charCodeAt(i))) i++;
  if (i === end) return null;
  for (let j = i; j < end; j++) if (isBlank(value.charCodeAt(j))) return null;
  return value.slice(i, end);
}

function trimmedEnd(value: string): number {
  let end = value.length;
  while (end > 0 && isBlank(value.charCodeAt(end - 1))) end--;
  return end;
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Why a token could never be presented as `Authorization: Bearer <token>`, or undefined when it
 * can. The one rule for every client key, literal or read from a reference.
 */
export function tokenProblem(token: string): string | undefined {
  if (token.length === 0) return 'an empty key can never be presented';
  if (/\s/.test(token)) return 'a key containing whitespace can never be presented';
  return undefined;
}

/** A token's SHA-256 digest in base64: the key of the record maps. */
function digestId(token: string): string {
  // Made as a string: Node builds a digest Buffer at about three times the cost.
  return hash('sha256', token, 'base64');
}

/** The record a presented token opens, if any: found by its digest, confirmed in constant time. */
function recordOf(records: ReadonlyMap<string, KeyRecord>, token: string): KeyRecord | undefined {
  const id = digestId(token);
  const record = records.get(id);
  return record !== undefined && timingSafeEqual(Buffer.from(id, 'base64'), record.digest)
    ? record
    : undefined;
}

/**
 * All targets' key sets, plus what `GET /v1/models` needs: which aliases a presented token may use.
 */
export class KeyIndex {
  readonly #targets: ReadonlyMap<string, TargetAuth>;
  readonly #records: ReadonlyMap<string, KeyRecord>;
  readonly #openAliases: readonly string[];
  readonly #definitions: readonly KeyIdentity[];

  constructor(
    targets: ReadonlyMap<string, TargetAuth>,
    records: ReadonlyMap<string, KeyRecord>,
    openAliases: readonly string[],
    definitions: readonly KeyIdentity[],
  ) {
    this.#targets = targets;
    this.#records = records;
    this.#openAliases = openAliases;
    this.#definitions = definitions;
  }

  /** The key set of a target (alias or request-class pool key), or undefined if not configured. */
  target(alias: string): TargetAuth | undefined {
    return this.#targets.get(alias);
  }

  /**
   * Aliases to list for a request presenting `authorization`, in configuration order: open targets
   * always, plus every keyed target that accepts the token. A missing, malformed or unknown token
   * sees only the open targets. The returned array is shared; do not mutate it.
   */
  visibleAliases(authorization: string | undefined): readonly string[] {
    if (authorization === undefined) return this.#openAliases;
    const token = parseBearer(authorization);
    if (token === null) return this.#openAliases;
    return recordOf(this.#records, token)?.visible ?? this.#openAliases;
  }

  /**
   * The targets that require a key and accept the named key (directly, or as a global key), in
   * configuration order: where its per-key limits can apply.
   */
  keyedTargetsOf(definitionName: string): readonly string[] {
    for (const record of this.#records.values())
      if (record.identity.definitionName === definitionName)
        return record.visible.filter((alias) => !this.#openAliases.includes(alias));
    return [];
  }

  /**
   * Identities of all named keys (from `key_definitions`), whether or not a target lists them: the
   * runtime table creates per-key limiters from these (identity `key:<keyId>:...`).
   */
  definitions(): readonly KeyIdentity[] {
    return this.#definitions;
  }
}

/**
 * Builds the key index from the auth section and the targets' `keys` (spec 5):
 *
 * - A target with a `keys` array has authentication enabled, even when the array is empty (it then
 *   accepts only global keys; with none, nothing: an explicit empty list fails closed). A target
 *   without `keys` is open.
 * - Global keys are added to every target with authentication enabled.
 * - A `keys` or `global_keys` entry that names a `key_definitions` entry stands for that definition's
 *   key; any other entry is a literal key, and so is a `TokenEntry` (a referenced key) always.
 * - A token's identity does not depend on how a target listed it: a literal entry equal to some
 *   definition's key gets that definition's identity, limits and labels, so listing a key literally
 *   cannot bypass its per-key limits.
 *
 * Problems (two definitions with the same key, keys that can never be presented as a bearer token)
 * are returned as values with their config paths; the schema should reject them first.
 */
export function buildKeyIndex(
  auth: AuthConfigInput | undefined,
  targets: Readonly<Record<string, TargetKeysInput>>,
): KeyIndexBuild {
  const problems: KeyIndexProblem[] = [];
  const records = new Map<string, KeyRecord>();
  const definitions: KeyIdentity[] = [];
  const definitionEntries = Object.entries(auth?.key_definitions ?? {});

  const recordFor = (token: string, identity: () => KeyIdentity): KeyRecord => {
    const id = digestId(token);
    let record = records.get(id);
    if (record === undefined) {
      const ident = identity();
      record = {
        digest: Buffer.from(id, 'base64'),
        identity: ident,
        success: Object.freeze({ ok: true as const, identity: ident }),
        visible: [],
      };
      records.set(id, record);
    }
    return record;
  };

  const checkPresentable = (token: string, path: string): boolean => {
    const problem = tokenProblem(token);
    if (problem !== undefined) problems.push({ path, message: problem });
    return problem === undefined;
  };

  const definitionByName = new Map<string, KeyRecord>();
  for (const [name, def] of definitionEntries) {
    const path = `auth.key_definitions.${name}.key`;
    if (!checkPresentable(def.key, path)) continue;
    const existing = records.get(digestId(def.key));
    if (existing !== undefined) {
      problems.push({
        path,
        message: `the same key is already defined as "${existing.identity.definitionName ?? ''}"`,
      });
      continue;
    }
    const record = recordFor(def.key, () => definitionIdentity(name, def));
    definitionByName.set(name, record);
    definitions.push(record.identity);
  }

  const literal = (token: string, path: string): KeyRecord | undefined =>
    checkPresentable(token, path) ? recordFor(token, () => literalIdentity(token)) : undefined;
  const resolve = (entry: KeyEntry, path: string): KeyRecord | undefined => {
    if (typeof entry !== 'string') return literal(entry.token, path);
    const named = definitionByName.get(entry);
    if (named !== undefined) return named;
    // A name of a definition that was itself rejected above: already reported there.
    if (Object.hasOwn(auth?.key_definitions ?? {}, entry)) return undefined;
    return literal(entry, path);
  };

  const globals: KeyRecord[] = [];
  (auth?.global_keys ?? []).forEach((entry, i) => {
    const record = resolve(entry, `auth.global_keys[${i}]`);
    if (record !== undefined) globals.push(record);
  });

  const targetAuths = new Map<string, TargetAuth>();
  const openAliases: string[] = [];
  const acceptedBy = new Map<KeyRecord, string[]>();
  for (const [alias, target] of Object.entries(targets)) {
    if (target.keys === undefined) {
      openAliases.push(alias);
      targetAuths.set(alias, new TargetAuth(alias, true, new Map()));
      continue;
    }
    const byDigest = new Map<string, KeyRecord>();
    const accept = (record: KeyRecord): void => {
      const id = record.digest.toString('base64');
      if (byDigest.has(id)) return;
      byDigest.set(id, record);
      const list = acceptedBy.get(record);
      if (list === undefined) acceptedBy.set(record, [alias]);
      else list.push(alias);
    };
    target.keys.forEach((entry, i) => {
      const record = resolve(entry, `targets.${alias}.keys[${i}]`);
      if (record !== undefined) accept(record);
    });
    for (const record of globals) accept(record);
    targetAuths.set(alias, new TargetAuth(alias, false, byDigest));
  }

  if (problems.length > 0) return { ok: false, problems };

  // Models visible per key, in configuration order: open targets interleaved with accepting ones.
  const order = Object.keys(targets);
  const open = new Set(openAliases);
  for (const record of records.values()) {
    const accepted = new Set(acceptedBy.get(record) ?? []);
    record.visible = Object.freeze(order.filter((alias) => open.has(alias) || accepted.has(alias)));
  }
  const index = new KeyIndex(targetAuths, records, Object.freeze(openAliases), Object.freeze(definitions));
  return { ok: true, index };
}

function definitionIdentity(name: string, def: KeyDefinitionInput): KeyIdentity {
  const labels = Object.freeze({ ...(def.labels ?? {}) });
  return Object.freeze({
    keyId: name,
    definitionName: name,
    account: labels.account,
    labels,
    rateLimit: def.rate_limit,
    concurrencyLimit: def.concurrency_limit,
    tokenLimit: def.token_limit,
  });
}

function literalIdentity(token: string): KeyIdentity {
  return Object.freeze({
    keyId: `sha256:${hash('sha256', token, 'hex').slice(0, 8)}`,
    definitionName: undefined,
    account: undefined,
    labels: Object.freeze({}),
    rateLimit: undefined,
    concurrencyLimit: undefined,
    tokenLimit: undefined,
  });
}
