import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves once `check` holds, polling every `intervalMs`; throws after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms: ${check.toString()}`);
    await sleep(intervalMs);
  }
}
