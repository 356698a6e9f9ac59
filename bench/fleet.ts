/**
 * `make bench-fleet`: four simulator replicas with prefix caches on loopback, an agent-shaped
 * workload (bench/fleet/workload.ts), and the ways of spreading it compared in one run at about 70%
 * and 90% of the fleet's capacity:
 *
 *   round_robin, least_request, prefix_affinity   the gateway's pool strategies, one provider per replica
 *   kube-proxy-like                               the gateway with one provider, a TCP balancer that
 *                                                 sends each kept-alive connection to a random replica
 *
 * The fleet's capacity is calibrated first: one replica saturated by conversations back to back
 * (every prefix it has seen still cached), times four. The same workload at the same load per
 * replica on a single replica gives the hit rate to hold prefix_affinity to. Each cell starts fresh
 * replicas (cold caches) and a fresh gateway; conversations under way at the start (a steady state's
 * population) bring the fleet to steady state during the warm-up.
 *
 *   node bench/fleet.ts            full run (about 12 minutes)
 *   node bench/fleet.ts --quick    short windows (about 6 minutes)
 *   node bench/fleet.ts --loads 0.7 --routing prefix_affinity,round_robin
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, spawnService, type Service } from './support/process.ts';
import { startGateway, type RunningGateway } from './support/services.ts';
import { runCell, type CellResult } from './fleet/cell.ts';
import { FLEET_MODEL, Replicas } from './fleet/replicas.ts';
import { AGENT_WORKLOAD, meanTurns } from './fleet/workload.ts';

const ROUTINGS = ['round_robin', 'kube-proxy-like', 'least_request', 'prefix_affinity'] as const;
type Routing = (typeof ROUTINGS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    loads: { type: 'string', default: '0.7,0.9' },
    routing: { type: 'string', default: ROUTINGS.join(',') },
    replicas: { type: 'string', default: '4' },
    seed: { type: 'string', default: '39' },
  },
});
const QUICK = values.quick === true;
const REPLICAS = Number(values.replicas);
const LOADS = values.loads!.split(',').map(Number);
const SEED = Number(values.seed);
const routings = values.routing!.split(',') as Routing[];
for (const routing of routings) {
  if (!ROUTINGS.includes(routing))
    throw new Error(`--routing: unknown "${routing}"; one of ${ROUTINGS.join(', ')}`);
}
if (!Number.isInteger(REPLICAS) || REPLICAS < 2)
  throw new Error('--replicas must be an integer of at least 2');
if (LOADS.some((load) => !(load > 0 && load < 2)))
  throw new Error('--loads must be fractions of capacity, e.g. 0.7,0.9');

const WARMUP_MS = QUICK ? 8_000 : 15_000;
const MEASURE_MS = QUICK ? 20_000 : 45_000;
/**
 * A replica saturated: a few more conversations than its batch holds, back to back, so its batch is
 * always full and a short queue lets prefills share steps, while their histories still fit its
 * cache. The warm-up absorbs the first turns, prefilled from nothing.
 */
const CALIBRATION = {
  warmupMs: QUICK ? 12_000 : 20_000,
  measureMs: QUICK ? 10_000 : 20_000,
  conversations: 40,
};
const shape = AGENT_WORKLOAD;

const progress = (message: string): void => console.error(`[fleet] ${message}`);

function poolConfig(strategy: string, ports: readonly number[]): Record<string, unknown> {
  return {
    targets: {
      [FLEET_MODEL]: {
        strategy,
        providers: ports.map((port, i) => ({ name: `replica-${i + 1}`, url: `http://127.0.0.1:${port}/v1` })),
      },
    },
  };
}

/** Starts what stands between the clients and the replicas for one routing; returns its origin and how to stop it. */
async function front(
  routing: Routing,
  replicas: Replicas,
): Promise<{ origin: string; stop: () => Promise<void> }> {
  let balancer: Service | undefined;
  let config: Record<string, unknown>;
  if (routing === 'kube-proxy-like') {
    balancer = spawnService('balancer', join(ROOT, 'bench/fleet/connection-balancer.ts'), [
      '--backends',
      replicas.ports.join(','),
    ]);
    const line = await balancer.waitForLine((l) => l.msg === 'listening');
    config = { targets: { [FLEET_MODEL]: { url: `http://127.0.0.1:${line.port as number}/v1` } } };
  } else {
    config = poolConfig(routing, replicas.ports);
  }
  const gateway: RunningGateway = await startGateway(`gateway-${routing}`, config);
  return {
    origin: gateway.origin,
    async stop() {
      await gateway.stop();
      await balancer?.stop();
    },
  };
}

/**
 * Open-loop arrivals for `load` of `capacity` turns per second spread over `replicas`. The
 * population under way at the start is a steady state's (Little's law) for turns of `turnMs`.
 */
function openArrivals(load: number, capacityPerReplica: number, replicas: number, turnMs: number) {
  const turnsPerSecond = load * capacityPerReplica * replicas;
  const conversationsPerSecond = turnsPerSecond / meanTurns(shape);
  const conversationSeconds = (meanTurns(shape) * (shape.thinkMeanMs + turnMs)) / 1000;
  return {
    kind: 'open' as const,
    conversationsPerSecond,
    underWay: Math.round(conversationsPerSecond * conversationSeconds),
  };
}

interface Row {
  load: number;
  routing: string;
  result: CellResult;
}

const fixed = (value: number, digits = 0): string => (Number.isFinite(value) ? value.toFixed(digits) : '-');

async function main(): Promise<void> {
  progress(`calibrating: one replica, ${CALIBRATION.conversations} conversations back to back`);
  const single = await Replicas.start(1);
  let capacity: number;
  try {
    const calibration = await runCell(
      {
        origin: `http://127.0.0.1:${single.ports[0]}`,
        arrivals: { kind: 'closed', conversations: CALIBRATION.conversations },
        warmupMs: CALIBRATION.warmupMs,
        measureMs: CALIBRATION.measureMs,
        shape,
        seed: SEED,
      },
      single,
    );
    if (calibration.failures > 0)
      throw new Error(
        `calibration: ${calibration.failures} failed turns: ${calibration.failureExamples.join('; ')}`,
      );
    capacity = calibration.throughput;
    progress(
      `one replica sustains ${capacity.toFixed(1)} turns/s (prefix cache hit rate ${(calibration.hitRate * 100).toFixed(1)}%)`,
    );
  } finally {
    await single.stop();
  }

  const rows: Row[] = [];
  const baselines = new Map<number, CellResult>();
  for (const load of LOADS) {
    const replica = await Replicas.start(1);
    try {
      // A turn's time at this load on a replica alone is not known yet: one second is close.
      const arrivals = openArrivals(load, capacity, 1, 1000);
      progress(
        `load ${load}: one replica alone, ${arrivals.conversationsPerSecond.toFixed(2)} conversations/s`,
      );
      const result = await runCell(
        {
          origin: `http://127.0.0.1:${replica.ports[0]}`,
          arrivals,
          warmupMs: WARMUP_MS,
          measureMs: MEASURE_MS,
          shape,
          seed: SEED,
        },
        replica,
      );
      baselines.set(load, result);
      rows.push({ load, routing: 'one replica alone (¼ of the load)', result });
    } finally {
      await replica.stop();
    }
    for (const routing of routings) {
      const replicas = await Replicas.start(REPLICAS);
      const entry = await front(routing, replicas).catch(async (error: unknown) => {
        await replicas.stop();
        throw error;
      });
      try {
        const arrivals = openArrivals(load, capacity, REPLICAS, baselines.get(load)!.meanTurnMs);
        progress(
          `load ${load}: ${routing}, ${arrivals.conversationsPerSecond.toFixed(2)} conversations/s, ${arrivals.underWay} under way at the start`,
        );
        const result = await runCell(
          { origin: entry.origin, arrivals, warmupMs: WARMUP_MS, measureMs: MEASURE_MS, shape, seed: SEED },
          replicas,
        );
        progress(
          `  TTFT p90 ${fixed(result.ttft.percentile(90))} ms, ${result.throughput.toFixed(1)} turns/s, hit rate ${(result.hitRate * 100).toFixed(1)}%, imbalance ${result.imbalance.toFixed(2)}, failed ${result.failures}`,
        );
        rows.push({ load, routing, result });
      } finally {
        await entry.stop();
        await replicas.stop();
      }
    }
  }
  report(rows, baselines, capacity);
}

function report(rows: Row[], baselines: Map<number, CellResult>, capacity: number): void {
  const lines = [
    `Fleet: ${REPLICAS} simulator replicas, capacity ${(capacity * REPLICAS).toFixed(0)} turns/s (${capacity.toFixed(1)} per replica); ${shape.tenants} tenants with ${shape.systemTokens}-token system prompts, ${shape.turns[0]}-${shape.turns[1]} turns of ${shape.userTokens[0]}-${shape.userTokens[1]} tokens, ${shape.thinkMeanMs} ms mean think time; ${MEASURE_MS / 1000} s windows after ${WARMUP_MS / 1000} s of warm-up.`,
    '',
    '| load | routing | TTFT p50 (ms) | p90 | p99 | turns/s | prefix cache hits | vs one replica | imbalance | failed |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { load, routing, result } of rows) {
    const baseline = baselines.get(load)!;
    const alone = routing.startsWith('one replica');
    lines.push(
      `| ${Math.round(load * 100)}% | ${routing} | ${fixed(result.ttft.percentile(50))} | ${fixed(result.ttft.percentile(90))} | ${fixed(result.ttft.percentile(99))} | ${result.throughput.toFixed(1)} | ${(result.hitRate * 100).toFixed(1)}% | ${alone ? '' : `${((result.hitRate / baseline.hitRate) * 100).toFixed(0)}%`} | ${alone ? '' : result.imbalance.toFixed(2)} | ${result.failures} |`,
    );
  }
  console.log(lines.join('\n'));
  const failed = rows.filter((row) => row.result.failures > 0);
  for (const row of failed)
    console.log(
      `\n${row.routing} at ${row.load}: ${row.result.failures} failed, e.g. ${row.result.failureExamples.join('; ')}`,
    );
  if (failed.length > 0) process.exitCode = 1;
}

await main();
