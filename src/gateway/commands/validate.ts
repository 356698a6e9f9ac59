/**
 * `gateway validate <file>`: loads the file exactly as the gateway would (parse, resolve the secret
 * references, compile) and reports every problem, so a configuration can be checked in CI or before
 * a ConfigMap rollout. `--skip-references` checks a file whose key files or variables are not on this
 * machine: references are checked for their shape only.
 */
import { compileRuntime } from '../runtime/compile.js';
import { formatIssue } from '../config/issues.js';
import { loadConfigFile } from '../config/load.js';
import { resolveLoaded, type ResolvedGatewayConfig, type SecretReferences } from '../config/secrets.js';
import {
  aimdApplies,
  DEFAULT_STRATEGY,
  isPoolTarget,
  requestClassOf,
  type GatewayConfig,
} from '../config/schema/index.js';

const plural = (count: number, noun: string, nouns = `${noun}s`): string =>
  `${count} ${count === 1 ? noun : nouns}`;

/** A few lines a person can compare with what they meant to configure. */
export function summarizeConfig(config: GatewayConfig | ResolvedGatewayConfig): string[] {
  const keys = Object.keys(config.targets);
  const aliases = new Set(keys.map((key) => requestClassOf(key, keys)?.alias ?? key));
  const pools = keys.filter((key) => isPoolTarget(config.targets[key]!));
  const lines = [
    `${plural(aliases.size, 'alias', 'aliases')}, ${plural(keys.length, 'target')}: ${plural(keys.length - pools.length, 'single-provider target')}, ${plural(pools.length, 'pool')}`,
  ];
  for (const key of pools) {
    const target = config.targets[key]!;
    const fallback = target.fallback;
    const details = [
      target.strategy ?? DEFAULT_STRATEGY,
      plural(target.providers?.length ?? 0, 'provider'),
      fallback === undefined || !fallback.enabled ? 'no fallback' : 'fallback',
    ];
    if (aimdApplies(target)) details.push('share controller');
    lines.push(`pool ${key}: ${details.join(', ')}`);
  }
  const keyCount =
    Object.keys(config.auth?.key_definitions ?? {}).length + (config.auth?.global_keys?.length ?? 0);
  if (keyCount > 0) lines.push(`auth: ${plural(keyCount, 'key')}`);
  lines.push(`strict mode: ${config.strict_mode ? 'on' : 'off'}`);
  return lines;
}

/** Where the keys come from: paths and names only. */
function summarizeReferences(references: SecretReferences, skipped: boolean): string[] {
  const count = references.files.size + references.env.length;
  if (count === 0) return [];
  const sources = [
    ...[...references.files.keys()].map((path) => `file ${path}`),
    ...references.env.map((name) => `env ${name}`),
  ];
  const state = skipped ? 'not read (--skip-references)' : 'resolved';
  return [`key references: ${sources.length} ${state}: ${sources.join(', ')}`];
}

export interface ValidateOptions {
  /** Check references for their shape only: read no key file and no environment variable. */
  skipReferences?: boolean;
  /** The environment `from_env` references read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

export async function runValidate(
  file: string,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  options: ValidateOptions = {},
): Promise<number> {
  const skipped = options.skipReferences ?? false;
  const result = await resolveLoaded(await loadConfigFile(file), { placeholders: skipped, env: options.env });
  // Compiling finds what only the key index can (a key that can never be presented, one key defined
  // twice), so a file that validates is a file the gateway accepts.
  const compiled = result.ok
    ? compileRuntime(result.config, result.hash, undefined, {
        enforceBatchInflight: false,
        batchLimiter: undefined,
        aimd: undefined,
        sharedLimits: undefined,
      })
    : result;
  if (result.ok && compiled.ok) {
    out.write(`${file}: valid\n`);
    for (const line of summarizeConfig(result.config)) out.write(`  ${line}\n`);
    for (const line of summarizeReferences(result.references, skipped)) out.write(`  ${line}\n`);
    return 0;
  }
  const issues = compiled.ok ? [] : compiled.issues;
  err.write(`${file}: ${plural(issues.length, 'problem')}\n`);
  for (const issue of issues) err.write(`${formatIssue(issue)}\n`);
  return 1;
}
