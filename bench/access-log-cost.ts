/**
 * What one access-log line costs, written two ways into the same destination, alternating rounds:
 *
 * - `shipped`: the gateway's access log (src/gateway/telemetry/access-log.ts): the line built by
 *   hand in a fixed field order, copied into a pre-sized 256 KiB batch buffer, batches written
 *   asynchronously;
 * - `pino-child`: a pino child logger (`log: "access"` bound once) given the entry's fields as an
 *   object, through pino's asynchronous destination (it gathers lines while a write is in
 *   flight; `--pino-min-length` makes it gather that many bytes before writing).
 *
 * Every variant writes the same fields for the same entries (a realistic served request: ids,
 * model, provider, token counts, cost, account, key, client address) to `--dest` (default
 * /dev/null) and waits for its writes before the round ends. The figure is CPU time per line
 * (`process.cpuUsage`, user + system, the thread pool's writes included), median over rounds. The
 * loop lets the event loop turn every 32 lines, as requests finishing over time would.
 *
 *   node bench/access-log-cost.ts [--lines 200000] [--rounds 6] [--dest /dev/null] [--pino-min-length 0]
 *
 * `--dest` is a file path (appended to). `--pino-min-length` sets the pino destination's
 * `minLength`, the bytes it gathers before a write (0: its default). A line the gateway's writer
 * drops (more than 8 MiB queued) or a round whose writes it cannot finish within 2 s fails the run:
 * it would have done less work than pino in that round.
 */
import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { accessLine, createAccessLog, type AccessLogEntry } from '../src/gateway/telemetry/access-log.ts';
import { median } from './support/stats.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '6' },
    dest: { type: 'string', default: '/dev/null' },
    'pino-min-length': { type: 'string', default: '0' },
  },
});

function positiveInteger(flag: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${flag} must be a positive integer, not ${raw}`);
  return value;
}
const LINES = positiveInteger('lines', values.lines);
const ROUNDS = positiveInteger('rounds', values.rounds);
const DEST = values.dest;
if (DEST === '' || DEST === 'off' || DEST === 'stdout' || DEST === 'stderr')
  throw new Error(`--dest is a file path (default /dev/null), not ${JSON.stringify(DEST)}`);
const PINO_MIN_LENGTH = Number(values['pino-min-length']);
if (!Number.isInteger(PINO_MIN_LENGTH) || PINO_MIN_LENGTH < 0)
  throw new Error(`--pino-min-length is a number of bytes >= 0, not ${values['pino-min-length']}`);
/**
 * Lines written per turn of the event loop (a power of two, less one): a gateway finishes a few
 * requests per turn, and a destination's write callbacks only run between turns.
 */
const TURN_MASK = 31;

/** Entries that differ as real ones do (ids, durations, counts), made before any round. */
const ENTRIES: AccessLogEntry[] = Array.from({ length: 1024 }, (_, i) => ({
  requestId: `0f6c1a52-6a1e-4c2b-9a53-${String(100000000000 + i)}`,
  method: 'POST',
  path: '/v1/chat/completions',
  model: 'chat',
  provider: 'primary',
  status: 200,
  outcome: 'success',
  attempts: 1,
  durationMs: 1.37 + i / 1000,
  ttftMs: null,
  promptTokens: 24 + (i % 7),
  completionTokens: 12 + (i % 11),
  reasoningTokens: null,
  cachedPromptTokens: null,
  cacheWriteTokens: null,
  cost: 0.000042,
  account: 'team-a',
  key: 'ci',
  traffic: 'interactive',
  traceId: null,
  client: '127.0.0.1',
}));

const PINO_OPTIONS = { base: null, timestamp: pino.stdTimeFunctions.isoTime };

/** The entry as the object a pino call takes (durations to a tenth, as the shipped line has them). */
function pinoFields(e: AccessLogEntry): object {
  return {
    requestId: e.requestId,
    method: e.method,
    path: e.path,
    model: e.model,
    provider: e.provider,
    status: e.status,
    outcome: e.outcome,
    attempts: e.attempts,
    durationMs: Math.round(e.durationMs * 10) / 10,
    ttftMs: e.ttftMs,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    reasoningTokens: e.reasoningTokens,
    cachedPromptTokens: e.cachedPromptTokens,
    cacheWriteTokens: e.cacheWriteTokens,
    cost: e.cost,
    account: e.account,
    key: e.key,
    traffic: e.traffic,
    traceId: e.traceId,
    client: e.client,
  };
}

/** Bytes of one pino line for `entry`, written to a stream that keeps it. */
function pinoLineBytes(entry: AccessLogEntry): number {
  let line = '';
  pino(PINO_OPTIONS, { write: (text: string) => void (line = text) })
    .child({ log: 'access' })
    .info(pinoFields(entry), 'request finished');
  return Buffer.byteLength(line);
}

interface Variant {
  readonly name: string;
  /** Writes `lines` entries and resolves once they are written out. */
  run(lines: number): Promise<void>;
}

const SLOW_DEST =
  "--dest cannot keep up with the gateway's writer (it dropped lines or left writes pending): its figures would not be comparable";
let droppedLines = 0;
// One writer (one open file) for every round: `flush` writes out each round's lines.
const shippedLog = createAccessLog(DEST, (lines) => {
  droppedLines += lines;
})!;

const shipped: Variant = {
  name: 'shipped',
  async run(lines) {
    const log = shippedLog;
    for (let i = 0; i < lines; i++) {
      log.write(ENTRIES[i % ENTRIES.length]!);
      if ((i & TURN_MASK) === TURN_MASK) await setImmediate();
    }
    const flushStarted = performance.now();
    await log.flush();
    // The writer waits at most 2 s for its last batches: a round that long left writes behind,
    // whose CPU the next round would be charged with.
    if (performance.now() - flushStarted >= 2_000) throw new Error(SLOW_DEST);
  },
};

const pinoChild: Variant = {
  name: 'pino-child',
  async run(lines) {
    const destination = pino.destination({
      dest: DEST,
      sync: false,
      // sonic-boom requires minLength below maxWrite (16 KiB by default).
      ...(PINO_MIN_LENGTH > 0
        ? { minLength: PINO_MIN_LENGTH, maxWrite: Math.max(16_384, 2 * PINO_MIN_LENGTH) }
        : {}),
    });
    await once(destination, 'ready');
    const logger = pino(PINO_OPTIONS, destination).child({
      log: 'access',
    });
    for (let i = 0; i < lines; i++) {
      logger.info(pinoFields(ENTRIES[i % ENTRIES.length]!), 'request finished');
      if ((i & TURN_MASK) === TURN_MASK) await setImmediate();
    }
    // Ending the destination writes out what it buffers.
    destination.end();
    await once(destination, 'close');
  },
};

/** CPU microseconds per line of one round of `variant`. */
async function measure(variant: Variant): Promise<number> {
  const before = process.cpuUsage();
  await variant.run(LINES);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / LINES;
}

const variants = [shipped, pinoChild];
// One unmeasured round each: the first lines of any variant pay for compiling its code.
for (const variant of variants) await variant.run(Math.min(LINES, 20_000));
const perLine = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) perLine.get(variant.name)!.push(await measure(variant));
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}

if (droppedLines > 0) throw new Error(SLOW_DEST);
const base = median(perLine.get('shipped')!);
process.stdout.write(
  `| variant | CPU µs / line (median of ${ROUNDS} rounds of ${LINES} lines) | × shipped | line bytes |\n|---|---:|---:|---:|\n`,
);
const bytes = {
  shipped: Buffer.byteLength(accessLine(ENTRIES[0]!)),
  'pino-child': pinoLineBytes(ENTRIES[0]!),
};
for (const variant of variants) {
  const us = median(perLine.get(variant.name)!);
  process.stdout.write(
    `| ${variant.name} | ${us.toFixed(2)} | ${(us / base).toFixed(2)} | ${bytes[variant.name as keyof typeof bytes]} |\n`,
  );
}
