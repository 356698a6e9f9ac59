import { performance } from 'node:perf_hooks';

/** Time source and timer of an engine; replaceable so the scheduler can be tested step by step. */
export interface EngineClock {
  /** Monotonic milliseconds. */
  now: () => number;
  /** Runs `fn` after `delayMs`; zero or less means on the next turn of the event loop. */
  schedule: (fn: () => void, delayMs: number) => () => void;
}

/** Node's timers: setImmediate lets socket I/O run between back-to-back zero-latency steps. */
export const realClock: EngineClock = {
  now: () => performance.now(),
  schedule: (fn, delayMs) => {
    if (delayMs <= 0) {
      const handle = setImmediate(fn);
      return () => clearImmediate(handle);
    }
    const handle = setTimeout(fn, delayMs);
    return () => clearTimeout(handle);
  },
};
