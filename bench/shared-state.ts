/**
 * What sharing the limits through Redis (`--shared-state`) adds to a request: the same limited
 * configuration (the `limits` row of bench/run.ts: key and target rate limits, key and target
 * concurrency limits, account in-flight limit; five shared decisions per request) served by two
 * gateways, one with per-process limits and one with `--shared-state` on a local redis-server, both
 * in front of the fixed-response upstream. Prints a markdown table with the added p50; the budget
 * is 0.5 ms on loopback.
 *
 *   node bench/shared-state.ts [--requests 4000] [--rounds 5] [--json <file>]
 *
 * Latency is measured one request at a time on one keep-alive connection (the added latency of a
 * request, not throughput under contention), in rounds that alternate which gateway goes first, and
 * the added p50 is the median over rounds of (shared p50 - local p50) of the same round.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { startRedis, type RedisServer } from '../test/helpers/redis.ts';
import { BENCH_TOKEN, gatewayConfig } from './support/configs.ts';
import { ALIAS, CHAT_PATH, chatRequestBody } from './support/payloads.ts';
import { fmt } from './support/report.ts';
import { startGateway, startUpstream, type RunningGateway } from './support/services.ts';
import { Samples, median } from './support/stats.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

const BUDGET_MS = 0.5;

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2000' },
    json: { type: 'string' },
  },
});
const requestsPerRound = Number(args.requests);
const rounds = Number(args.rounds);
const warmup = Number(args.warmup);

const log = (message: string): void => void process.stderr.write(`${message}\n`);

const body = chatRequestBody(ALIAS, false);
const headers = { 'content-type': 'application/json', authorization: `Bearer ${BENCH_TOKEN}` };

/** Sequential requests on one connection; milliseconds per request. Throws on any non-200. */
async function measure(gateway: RunningGateway, count: number, agent: Agent): Promise<Samples> {
  const samples = new Samples();
  const url = `${gateway.origin}${CHAT_PATH}`;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await request(url, { method: 'POST', headers, body, dispatcher: agent });
    await response.body.text();
    samples.push(performance.now() - started);
    if (response.statusCode !== 200)
      throw new Error(`${gateway.service.name}: status ${response.statusCode}`);
  }
  return samples;
}

interface Result {
  name: string;
  p50: number;
  p99: number;
  rate: number;
}

async function main(): Promise<void> {
  let redis: RedisServer | undefined;
  const started: { stop(): Promise<void> }[] = [];
  try {
    redis = await startRedis();
    const upstream = await startUpstream(1);
    started.push({ stop: () => upstream.service.stop() });
    const config = gatewayConfig('limits', upstream.ports);
    const local = await startGateway('local', config);
    started.push(local);
    const shared = await startGateway('shared', config, {
      args: ['--shared-state', redis.url, '--shared-state-prefix', 'bench:'],
    });
    started.push(shared);
    const gateways = [local, shared];
    const agents = new Map(gateways.map((g) => [g, new Agent({ connections: 1, pipelining: 1 })]));

    log(`warm-up: ${warmup} requests each`);
    for (const gateway of gateways) await measure(gateway, warmup, agents.get(gateway)!);

    const all = new Map(gateways.map((g) => [g, new Samples()]));
    const seconds = new Map(gateways.map((g) => [g, 0]));
    const added: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? gateways : [...gateways].reverse();
      const p50 = new Map<RunningGateway, number>();
      for (const gateway of order) {
        const begin = performance.now();
        const samples = await measure(gateway, requestsPerRound, agents.get(gateway)!);
        seconds.set(gateway, seconds.get(gateway)! + (performance.now() - begin) / 1000);
        p50.set(gateway, samples.percentile(50));
        all.get(gateway)!.addAll(samples);
      }
      added.push(p50.get(shared)! - p50.get(local)!);
      log(
        `round ${round + 1}/${rounds}: local p50 ${fmt(p50.get(local), 3)} ms, shared p50 ${fmt(p50.get(shared), 3)} ms`,
      );
    }

    const results: Result[] = gateways.map((g) => ({
      name: g === local ? 'per-process limits' : '--shared-state (Redis on loopback)',
      p50: all.get(g)!.percentile(50),
      p99: all.get(g)!.percentile(99),
      rate: all.get(g)!.count / seconds.get(g)!,
    }));
    const addedP50 = median(added);
    const addedP99 = results[1]!.p99 - results[0]!.p99;
    const lines = [
      `Limited configuration (\`limits\` row: key + target rate, key + target concurrency, account in-flight), one request at a time on one connection, ${rounds} rounds x ${requestsPerRound} requests.`,
      '',
      '| limits | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms |',
      '|---|---|---|---|---|---|',
      `| ${results[0]!.name} | ${fmt(results[0]!.rate, 0)} | ${fmt(results[0]!.p50, 3)} | ${fmt(results[0]!.p99, 3)} | | |`,
      `| ${results[1]!.name} | ${fmt(results[1]!.rate, 0)} | ${fmt(results[1]!.p50, 3)} | ${fmt(results[1]!.p99, 3)} | ${fmt(addedP50, 3)} | ${fmt(addedP99, 3)} |`,
      '',
      `Budget: added p50 <= ${BUDGET_MS} ms: ${addedP50 <= BUDGET_MS ? 'pass' : 'FAIL'} (median over rounds of the per-round difference).`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    if (args.json) {
      writeFileSync(args.json, JSON.stringify({ results, addedP50, addedP99, perRound: added }, null, 2));
    }
    for (const agent of agents.values()) await agent.close();
    if (addedP50 > BUDGET_MS) process.exitCode = 1;
  } finally {
    for (const service of started.reverse()) await service.stop();
    await redis?.close();
  }
}

await main();
