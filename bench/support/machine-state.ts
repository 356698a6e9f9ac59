/**
 * How well this machine relays a message between two processes right now, and how much CPU time
 * its hypervisor took from it over a run.
 *
 * A proxy's added latency is mostly wake-ups: the request wakes the proxy, its upstream write wakes
 * the upstream, and so on back. On a shared virtual machine the time from "runnable" to "running"
 * for an idle virtual CPU moves from tens of microseconds to milliseconds with the host's load, and
 * it moves every row of a run together. A busy loop does not show it (it never idles), so the probe
 * is a paced one-byte ping-pong over loopback TCP with a child process, idling between round trips
 * as the benchmark's processes do between events.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { stealSeconds } from './process.ts';
import { Samples, sleep } from './stats.ts';

const ECHO_SERVER = `
const server = require('node:net').createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('data', (data) => socket.write(data));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

export interface RoundTrip {
  p50: number;
  p99: number;
  count: number;
}

/** `count` one-byte round trips with a child process, `gapMs` apart; ms. */
export async function loopbackRoundTrip(count = 500, gapMs = 2): Promise<RoundTrip> {
  const child = spawn(process.execPath, ['-e', ECHO_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (data: Buffer) => resolve(Number(data.toString().trim())));
      child.once('exit', (code) => reject(new Error(`echo server exited with ${code}`)));
    });
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const samples = new Samples();
    const byte = Buffer.from('x');
    for (let i = 0; i < count; i++) {
      const sentAt = performance.now();
      await new Promise<void>((resolve) => {
        socket.once('data', () => resolve());
        socket.write(byte);
      });
      samples.push(performance.now() - sentAt);
      await sleep(gapMs);
    }
    socket.destroy();
    return { p50: samples.percentile(50), p99: samples.percentile(99), count };
  } finally {
    child.stdin.end();
  }
}

export function renderRoundTrip(r: RoundTrip): string {
  return `p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms`;
}

/** A round trip now, and the steal (CPU seconds) while it was measured. */
export async function checkMachine(): Promise<{ trip: RoundTrip; stolen: number }> {
  const steal0 = stealSeconds();
  const trip = await loopbackRoundTrip();
  return { trip, stolen: stealSeconds() - steal0 };
}

/** Round trip p50 (ms) under which, with no steal during the check, the machine counts as quiet. */
export const QUIET_ROUND_TRIP_MS = 0.4;

export function isQuiet(check: { trip: RoundTrip; stolen: number }): boolean {
  return check.trip.p50 < QUIET_ROUND_TRIP_MS && check.stolen < 0.1;
}

/**
 * Waits (at most `minutes`, checking every `everyMs`) until a check finds the machine quiet,
 * logging each check. On a shared virtual machine a run started in a slow spell measures the spell.
 */
export async function waitForQuietMachine(
  minutes: number,
  log: (message: string) => void,
  everyMs = 20_000,
): Promise<void> {
  const deadline = performance.now() + minutes * 60_000;
  for (;;) {
    const check = await checkMachine();
    const quiet = isQuiet(check);
    log(
      `machine ${quiet ? 'quiet' : 'busy'}: round trip ${renderRoundTrip(check.trip)}, steal ${check.stolen.toFixed(2)} s`,
    );
    if (quiet) return;
    if (performance.now() + everyMs > deadline) {
      log(`no quiet spell within ${minutes} min; starting anyway`);
      return;
    }
    await sleep(everyMs);
  }
}

/**
 * The report's line on the machine's state around a run: latency figures on a shared virtual
 * machine move with the host's load, so a reader needs to see how fast a wake-up was and how much
 * CPU time the host took.
 */
export function machineStateLine(
  before: RoundTrip,
  after: RoundTrip,
  stolen: number,
  elapsedSeconds: number,
  cpus: number,
): string {
  const share = (stolen / (elapsedSeconds * cpus)) * 100;
  return (
    `Machine state: loopback round trip between two processes (one byte, paced 2 ms) ` +
    `${renderRoundTrip(before)} before, ${renderRoundTrip(after)} after; ` +
    `steal ${stolen.toFixed(0)} CPU-s over ${elapsedSeconds.toFixed(0)} s (${share.toFixed(1)}% of the machine's CPU time).`
  );
}

/** Command line: `node bench/support/machine-state.ts` prints the round trip now (about 1.5 s). */
if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const { trip, stolen } = await checkMachine();
  console.log(`loopback round trip ${renderRoundTrip(trip)}; steal ${stolen.toFixed(2)} s`);
}
