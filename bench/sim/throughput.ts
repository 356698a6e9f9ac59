/**
 * How much one simulator process sustains with zero latency: concurrent streaming clients (each
 * streams a 64-token chat completion, then starts the next) and non-streaming requests per second
 * (autocannon). Run after `make build`:
 *
 *   node bench/sim/throughput.ts            full run (about a minute)
 *   node bench/sim/throughput.ts --quick    short run (about 20 seconds)
 *
 * Clients run in this process on the same host, so at high concurrency the client can be the limit:
 * the "sim CPU" column shows how busy the simulator itself was (100% = one core).
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startBenchSim, writeZeroLatencyModel, type BenchSim } from './spawn-sim.ts';
import { streamLoop, streamRequest } from './stream-client.ts';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
  },
});
const QUICK = values.quick === true;
const DURATION_S = values.duration !== undefined ? Number(values.duration) : QUICK ? 3 : 10;
const STREAM_CONCURRENCY = QUICK ? [64, 512] : [64, 256, 1024, 2048];
const RPS_CONNECTIONS = QUICK ? [16, 128] : [16, 64, 256];
const STREAM_TOKENS = 64;
const MODEL = 'bench';

interface Row {
  scenario: string;
  concurrency: number;
  completed: number;
  errors: number;
  perSecond: number;
  tokensPerSecond: number | undefined;
  p50: number;
  p99: number;
  simCpu: number | undefined;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** C closed-loop streaming clients for DURATION_S; a stream counts only if it ends with [DONE]. */
async function streams(sim: BenchSim, concurrency: number): Promise<Row> {
  const request = streamRequest(
    sim.port,
    JSON.stringify({
      model: MODEL,
      stream: true,
      max_tokens: STREAM_TOKENS,
      messages: [{ role: 'user', content: 'benchmark' }],
    }),
  );
  const cpuBefore = sim.cpuSeconds();
  const started = performance.now();
  const deadline = started + DURATION_S * 1000;
  const results = await Promise.all(
    Array.from({ length: concurrency }, () => streamLoop(sim.port, request, deadline)),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = sim.cpuSeconds();
  const durations = results.flatMap((r) => r.durations).sort((a, b) => a - b);
  const errors = results.reduce((sum, r) => sum + r.errors, 0);
  return {
    scenario: 'chat stream, 64 tokens',
    concurrency,
    completed: durations.length,
    errors,
    perSecond: durations.length / elapsed,
    tokensPerSecond: (durations.length * STREAM_TOKENS) / elapsed,
    p50: percentile(durations, 50),
    p99: percentile(durations, 99),
    simCpu:
      cpuBefore !== undefined && cpuAfter !== undefined
        ? ((cpuAfter - cpuBefore) / elapsed) * 100
        : undefined,
  };
}

/** Non-streaming chat completions (16 tokens) with autocannon's closed-loop connections. */
async function requests(sim: BenchSim, connections: number): Promise<Row> {
  const cpuBefore = sim.cpuSeconds();
  const started = performance.now();
  const result = await autocannon({
    url: `${sim.baseUrl}/v1/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'benchmark' }],
    }),
    connections,
    duration: DURATION_S,
  });
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = sim.cpuSeconds();
  const completed = result['2xx'];
  return {
    scenario: 'chat, non-streaming, 16 tokens',
    concurrency: connections,
    completed,
    errors: result.errors + result.timeouts + result.non2xx,
    perSecond: completed / result.duration,
    tokensPerSecond: (completed * 16) / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    simCpu:
      cpuBefore !== undefined && cpuAfter !== undefined
        ? ((cpuAfter - cpuBefore) / elapsed) * 100
        : undefined,
  };
}

function fmt(n: number | undefined, digits = 0): string {
  if (n === undefined || Number.isNaN(n)) return 'n/a';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function table(rows: Row[]): string {
  // "per sim CPU-s" divides by the simulator's own CPU time: steadier than wall-clock rates when
  // the client or other processes compete for the same cores.
  const header =
    '| scenario | concurrency | completed | errors | per second | tokens/s | p50 ms | p99 ms | sim CPU % | per sim CPU-s |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
  const body = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.concurrency} | ${fmt(r.completed)} | ${r.errors} | ${fmt(r.perSecond)} | ${fmt(r.tokensPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.simCpu)} | ${fmt(r.simCpu ? (r.perSecond * 100) / r.simCpu : undefined)} |`,
  );
  return [header, ...body].join('\n');
}

async function main(): Promise<void> {
  const model = writeZeroLatencyModel(MODEL, STREAM_TOKENS);
  const sim = await startBenchSim(['--model', model]);
  const rows: Row[] = [];
  try {
    // A short warm-up so JIT compilation does not land in the first measurement.
    await streams(sim, 8).catch(() => undefined);
    for (const c of STREAM_CONCURRENCY) {
      process.stderr.write(`streams: ${c} concurrent for ${DURATION_S} s\n`);
      rows.push(await streams(sim, c));
    }
    for (const c of RPS_CONNECTIONS) {
      process.stderr.write(`requests: ${c} connections for ${DURATION_S} s\n`);
      rows.push(await requests(sim, c));
    }
  } finally {
    await sim.stop();
  }
  const sustained = rows.filter((r) => r.scenario.startsWith('chat stream') && r.errors === 0);
  const best = rows
    .filter((r) => !r.scenario.startsWith('chat stream'))
    .sort((a, b) => b.perSecond - a.perSecond)[0];
  process.stdout.write(`## Simulator throughput (zero latency, one process, ${DURATION_S} s per row)\n\n`);
  process.stdout.write(`${table(rows)}\n\n`);
  process.stdout.write(
    `Concurrent streams sustained without errors: up to ${fmt(Math.max(0, ...sustained.map((r) => r.concurrency)))}; ` +
      `peak non-streaming rate: ${fmt(best?.perSecond)} requests/s.\n`,
  );
}

await main();
