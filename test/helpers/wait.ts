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

/** Resolves once `probe()` returns `expected`; after `timeoutMs` throws naming `what` and the last value. */
export async function untilEquals<T>(
  probe: () => Promise<T>,
  expected: T,
  what = 'value',
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (last !== expected) {
    if (Date.now() > deadline)
      throw new Error(`${what}: expected ${String(expected)}, still ${String(last)}`);
    await sleep(50);
    last = await probe();
  }
}
