import { openLoop, type OpenLoopResult } from '../drivers/open-loop.ts';
import { manyAliasesConfig } from '../support/configs.ts';
import type { RunningGateway } from '../support/services.ts';
import type { Target } from '../support/target.ts';

export interface ReloadRunResult {
  load: OpenLoopResult;
  /** Rewrites of the config file during the window. */
  rewrites: number;
  /** Reloads the gateway logged during the window. */
  reloads: number;
}

/**
 * One window of the reload row: open-loop load on the benchmarked alias while (when `rewrite` is
 * set) the 1,000-alias config file is rewritten once a second by write-to-temp-and-rename, each
 * time with a new generation so the gateway really recompiles. Without `rewrite` the same
 * configuration stays put: the baseline the reload latency is compared against.
 */
export async function reloadWindow(
  gateway: RunningGateway,
  target: Target,
  upstreamPid: number,
  options: {
    rewrite: boolean;
    upstreamPort: number;
    aliases: number;
    ratePerSecond: number;
    durationSeconds: number;
    firstGeneration: number;
  },
): Promise<ReloadRunResult> {
  const reloadsBefore = gateway.reloads();
  let rewrites = 0;
  let generation = options.firstGeneration;
  let writing: Promise<void> = Promise.resolve();
  const timer = options.rewrite
    ? setInterval(() => {
        rewrites++;
        writing = writing.then(() =>
          gateway.writeConfig(manyAliasesConfig(options.upstreamPort, options.aliases, ++generation)),
        );
      }, 1000)
    : undefined;
  const load = await openLoop(target, upstreamPid, {
    ratePerSecond: options.ratePerSecond,
    durationSeconds: options.durationSeconds,
  });
  if (timer) clearInterval(timer);
  await writing;
  return { load, rewrites, reloads: gateway.reloads() - reloadsBefore };
}
