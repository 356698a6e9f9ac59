/**
 * Resolving secret references (`{ from_file }`, `{ from_env }`) in a validated configuration. It runs
 * whenever a configuration is loaded (startup, `gateway validate`, every reload) and produces the
 * configuration with every key as a plain string, so the compiled runtime table, and with it the
 * request path, never sees a reference.
 *
 * A resolved value passes the checks a literal in the same field passes. Problems come back as
 * issues naming the field and the file or variable; the value itself never appears in an issue,
 * a log line or a metric.
 */
import { tokenProblem, type KeyEntry } from '../auth/keys.js';
import { formatPath, type ConfigIssue, type PathSegment } from './issues.js';
import type { ConfigResult } from './load.js';
import { readSecretFile, type SecretFileRead } from './secret-file.js';
import {
  tokenOwnershipIssues,
  UpstreamKeySchema,
  type AuthConfig,
  type GatewayConfig,
  type KeyDefinition,
  type ProviderConfig,
  type SecretReference,
  type TargetConfig,
} from './schema/index.js';

// ---------------------------------------------------------------------------------------------
// The configuration with references resolved: what `runtime/compile.ts` takes
// ---------------------------------------------------------------------------------------------

export type ResolvedKeyDefinition = Omit<KeyDefinition, 'key'> & { key: string };
export type ResolvedAuth = Omit<AuthConfig, 'global_keys' | 'key_definitions'> & {
  global_keys?: KeyEntry[] | undefined;
  key_definitions?: Record<string, ResolvedKeyDefinition> | undefined;
};
export type ResolvedProvider = Omit<ProviderConfig, 'gateway_key'> & { gateway_key?: string | undefined };
export type ResolvedTarget = Omit<TargetConfig, 'keys' | 'gateway_key' | 'providers'> & {
  keys?: KeyEntry[] | undefined;
  gateway_key?: string | undefined;
  providers?: ResolvedProvider[] | undefined;
};
export type ResolvedGatewayConfig = Omit<GatewayConfig, 'auth' | 'targets'> & {
  auth?: ResolvedAuth | undefined;
  targets: Record<string, ResolvedTarget>;
};

/** What a load referenced: the watcher watches the files; the log lists both. */
export interface SecretReferences {
  /**
   * Referenced files, path -> fingerprint of the content this load read (a sha256, or `!CODE` when it
   * could not be read). The watcher compares fingerprints to notice a rotation; they stay in memory.
   */
  readonly files: ReadonlyMap<string, string>;
  /** Referenced environment variables, by name. */
  readonly env: readonly string[];
}

export type ResolvedConfigResult =
  | {
      ok: true;
      config: ResolvedGatewayConfig;
      /** sha256 of the configuration file alone (referenced files are not part of it). */
      hash: string;
      references: SecretReferences;
    }
  /** `references` is undefined when the file itself was invalid, so its references are unknown. */
  | { ok: false; issues: ConfigIssue[]; references: SecretReferences | undefined };

export interface ResolveOptions {
  /** The environment `from_env` reads; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Read nothing: every reference stands for a distinct placeholder that passes every check, so a
   * file can be checked where the keys are not available (`gateway validate --skip-references`).
   */
  placeholders?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

type SecretKind = 'client' | 'upstream';

/** The rule a resolved value must pass: the rule its field applies to a literal. */
const VALUE_PROBLEM: Record<SecretKind, (value: string) => string | undefined> = {
  // A referenced client key is always a token, so the token rule of the key index applies in full.
  client: tokenProblem,
  upstream: (value) => {
    // Every message of this schema is a fixed text; the fallback keeps it so for any future check.
    const result = UpstreamKeySchema.safeParse(value, { error: () => 'is not a valid value for this field' });
    return result.success ? undefined : result.error.issues[0]?.message;
  },
};

/** One trailing newline is what `kubectl create secret --from-file`, `echo` and editors leave. */
function withoutTrailingNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

class Resolver {
  readonly issues: ConfigIssue[] = [];
  readonly files = new Map<string, string>();
  readonly envNames = new Set<string>();
  /** One read per file and load, so two fields referencing one file see the same content. */
  readonly #reads = new Map<string, Promise<SecretFileRead>>();
  readonly #env: NodeJS.ProcessEnv;
  readonly #placeholders: boolean;
  #placeholderCount = 0;

  constructor(options: ResolveOptions) {
    this.#env = options.env ?? process.env;
    this.#placeholders = options.placeholders ?? false;
  }

  /** The value of a secret field, or undefined after recording an issue. */
  async value(
    secret: string | SecretReference,
    path: PathSegment[],
    kind: SecretKind,
  ): Promise<string | undefined> {
    if (typeof secret === 'string') return secret;
    const source = await this.#read(secret, path);
    if (source === undefined) return undefined;
    const problem = VALUE_PROBLEM[kind](source.value);
    if (problem === undefined) return source.value;
    this.#issue(source.at, `${source.what}: ${problem}`);
    return undefined;
  }

  /** A `keys` or `global_keys` entry: a referenced value is marked as a token, never a name. */
  async keyEntry(entry: string | SecretReference, path: PathSegment[]): Promise<KeyEntry | undefined> {
    if (typeof entry === 'string') return entry;
    const token = await this.value(entry, path, 'client');
    return token === undefined ? undefined : { token };
  }

  async #read(
    reference: SecretReference,
    path: PathSegment[],
  ): Promise<{ value: string; what: string; at: PathSegment[] } | undefined> {
    if (reference.from_file !== undefined) {
      const file = reference.from_file;
      const at = [...path, 'from_file'];
      const read = await this.#readFile(file);
      this.files.set(file, read.fingerprint);
      if (this.#placeholders) return { value: this.#placeholder(), what: `content of ${file}`, at };
      if (!read.ok) {
        const code = read.reason === read.code ? '' : ` (${read.code})`;
        return this.#issue(at, `cannot read ${file}: ${read.reason}${code}`);
      }
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes);
      } catch {
        return this.#issue(at, `cannot read ${file}: the file is not valid UTF-8`);
      }
      const value = withoutTrailingNewline(text);
      if (value === '') return this.#issue(at, `${file} is empty`);
      return { value, what: `content of ${file}`, at };
    }
    const name = reference.from_env!;
    const at = [...path, 'from_env'];
    this.envNames.add(name);
    if (this.#placeholders) return { value: this.#placeholder(), what: `environment variable ${name}`, at };
    const raw = this.#env[name];
    if (raw === undefined) return this.#issue(at, `environment variable ${name} is not set`);
    const value = withoutTrailingNewline(raw);
    if (value === '') return this.#issue(at, `environment variable ${name} is empty`);
    return { value, what: `environment variable ${name}`, at };
  }

  #readFile(file: string): Promise<SecretFileRead> {
    let read = this.#reads.get(file);
    if (read === undefined) {
      // Placeholders read nothing; the file is still listed, without a fingerprint to compare.
      read = this.#placeholders
        ? Promise.resolve({ ok: false, code: 'UNREAD', reason: 'not read', fingerprint: '!UNREAD' })
        : readSecretFile(file);
      this.#reads.set(file, read);
    }
    return read;
  }

  #placeholder(): string {
    return `unresolved-reference-${++this.#placeholderCount}`;
  }

  #issue(at: PathSegment[], message: string): undefined {
    this.issues.push({ path: formatPath(at), message });
    return undefined;
  }
}

async function resolveAll<T, R>(
  items: readonly T[],
  each: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = [];
  for (const [index, item] of items.entries()) out.push(await each(item, index));
  return out;
}

async function resolveAuth(auth: AuthConfig, resolver: Resolver): Promise<ResolvedAuth> {
  const global = auth.global_keys;
  const definitions = auth.key_definitions;
  return {
    ...auth,
    global_keys:
      global &&
      (await resolveAll(global, (entry, i) => resolver.keyEntry(entry, ['auth', 'global_keys', i]))).filter(
        (entry): entry is KeyEntry => entry !== undefined,
      ),
    key_definitions:
      definitions &&
      Object.fromEntries(
        await resolveAll(Object.entries(definitions), async ([name, definition]) => [
          name,
          {
            ...definition,
            key:
              (await resolver.value(definition.key, ['auth', 'key_definitions', name, 'key'], 'client')) ??
              '',
          },
        ]),
      ),
  };
}

async function resolveTarget(
  alias: string,
  target: TargetConfig,
  resolver: Resolver,
): Promise<ResolvedTarget> {
  const at = ['targets', alias];
  const upstream = (key: string | SecretReference | undefined, path: PathSegment[]) =>
    key === undefined ? undefined : resolver.value(key, path, 'upstream');
  return {
    ...target,
    keys:
      target.keys &&
      (await resolveAll(target.keys, (entry, i) => resolver.keyEntry(entry, [...at, 'keys', i]))).filter(
        (entry): entry is KeyEntry => entry !== undefined,
      ),
    gateway_key: await upstream(target.gateway_key, [...at, 'gateway_key']),
    providers:
      target.providers &&
      (await resolveAll(target.providers, async (provider, i) => ({
        ...provider,
        gateway_key: await upstream(provider.gateway_key, [...at, 'providers', i, 'gateway_key']),
      }))),
  };
}

/**
 * Resolves every secret reference of a validated configuration. Files are read once per load; the
 * result lists every referenced file with the fingerprint of what was read, on failure too, so the
 * watcher notices when a missing key file appears.
 */
export async function resolveSecrets(
  config: GatewayConfig,
  options: ResolveOptions = {},
): Promise<
  | { ok: true; config: ResolvedGatewayConfig; references: SecretReferences }
  | {
      ok: false;
      issues: ConfigIssue[];
      references: SecretReferences;
    }
> {
  const resolver = new Resolver(options);
  const auth = config.auth && (await resolveAuth(config.auth, resolver));
  const targets = Object.fromEntries(
    await resolveAll(Object.entries(config.targets), async ([alias, target]) => [
      alias,
      await resolveTarget(alias, target, resolver),
    ]),
  ) as Record<string, ResolvedTarget>;
  const references: SecretReferences = { files: resolver.files, env: [...resolver.envNames] };
  if (resolver.issues.length > 0) return { ok: false, issues: resolver.issues, references };

  // A resolved key may repeat another one: the ownership rule again, now on the actual tokens.
  const ownership = tokenOwnershipIssues(
    (auth?.global_keys ?? []).map((entry) => (typeof entry === 'string' ? entry : entry.token)),
    Object.entries(auth?.key_definitions ?? {}).map(([name, definition]) => [name, definition.key]),
  );
  if (ownership.length > 0)
    return {
      ok: false,
      issues: ownership.map((issue) => ({
        path: formatPath(['auth', ...issue.path]),
        message: issue.message,
      })),
      references,
    };
  return { ok: true, config: { ...config, auth, targets }, references };
}

/** The load of a file or text, followed by the resolution of its references. */
export async function resolveLoaded(
  loaded: ConfigResult,
  options: ResolveOptions = {},
): Promise<ResolvedConfigResult> {
  if (!loaded.ok) return { ok: false, issues: loaded.issues, references: undefined };
  const resolved = await resolveSecrets(loaded.config, options);
  return resolved.ok ? { ...resolved, hash: loaded.hash } : resolved;
}
