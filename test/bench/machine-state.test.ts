import { describe, expect, it } from 'vitest';
import {
  isQuiet,
  loopbackRoundTrip,
  machineStateLine,
  waitForQuietMachine,
} from '../../bench/support/machine-state.ts';

describe('the machine-state probe', () => {
  it('times one-byte round trips with a child process over loopback', async () => {
    const trip = await loopbackRoundTrip(20, 1);
    expect(trip.count).toBe(20);
    expect(trip.p50).toBeGreaterThan(0);
    expect(trip.p99).toBeGreaterThanOrEqual(trip.p50);
  });

  it('calls the machine quiet only with a fast round trip and no steal', () => {
    const trip = (p50: number) => ({ p50, p99: p50 * 3, count: 500 });
    expect(isQuiet({ trip: trip(0.3), stolen: 0 })).toBe(true);
    expect(isQuiet({ trip: trip(0.5), stolen: 0 })).toBe(false);
    expect(isQuiet({ trip: trip(0.3), stolen: 0.5 })).toBe(false);
  });

  it('gives up waiting for a quiet spell when the time is up, saying so', async () => {
    const lines: string[] = [];
    await waitForQuietMachine(0, (line) => lines.push(line));
    // One check, then either quiet or the notice that the run starts anyway.
    expect(lines[0]).toMatch(
      /^machine (quiet|busy): round trip p50 [\d.]+ ms, p99 [\d.]+ ms, steal [\d.]+ s$/,
    );
    if (lines[0]!.startsWith('machine busy'))
      expect(lines[1]).toBe('no quiet spell within 0 min; starting anyway');
    else expect(lines).toHaveLength(1);
  });

  it('reports the steal as a share of the CPU time over the run', () => {
    const trip = { p50: 0.34, p99: 0.79, count: 500 };
    const line = machineStateLine(trip, { p50: 0.944, p99: 78.015, count: 500 }, 274, 1010, 2);
    expect(line).toBe(
      'Machine state: loopback round trip between two processes (one byte, paced 2 ms) ' +
        'p50 0.340 ms, p99 0.790 ms before, p50 0.944 ms, p99 78.015 ms after; ' +
        "steal 274 CPU-s over 1010 s (13.6% of the machine's CPU time).",
    );
  });
});
