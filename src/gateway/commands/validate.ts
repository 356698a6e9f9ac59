/**
 * `gateway validate <file>`: loads the file exactly as the gateway would and reports every problem,
 * so a configuration can be checked in CI or before a ConfigMap rollout.
 */
import { formatIssue } from '../config/issues.js';
import { loadConfigFile } from '../config/load.js';
import {
  aimdApplies,
  DEFAULT_STRATEGY,
  isPoolTarget,
  requestClassOf,
  type GatewayConfig,
} from '../config/schema.js';

const plural = (count: number, noun: string, nouns = `${noun}s`): string =>
  `${count} ${count === 1 ? noun : nouns}`;

/** A few lines a person can compare with what they meant to configure. */
export function summarizeConfig(config: GatewayConfig): string[] {
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

export async function runValidate(
  file: string,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const result = await loadConfigFile(file);
  if (result.ok) {
    out.write(`${file}: valid\n`);
    for (const line of summarizeConfig(result.config)) out.write(`  ${line}\n`);
    return 0;
  }
  err.write(`${file}: ${plural(result.issues.length, 'problem')}\n`);
  for (const issue of result.issues) err.write(`${formatIssue(issue)}\n`);
  return 1;
}
