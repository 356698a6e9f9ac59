import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, type Dispatcher } from 'undici';
import { ROOT, spawnService, type Service } from '../support/process.ts';

/** The served model's name, also the gateway alias the clients ask for. */
export const FLEET_MODEL = 'fleet';

/**
 * One replica's model: a mid-sized model on one accelerator, scaled so a laptop-sized host can run
 * four of them. Prefill is dear enough that a cached prefix matters (a 4,000-token prompt prefilled
 * from nothing costs 180 ms of the engine's time, every running stream waiting for it), and the
 * cache holds a few hundred conversations.
 */
export const REPLICA_MODEL = `name = "${FLEET_MODEL}"
output_tokens = 96
[latency]
prefill_ms = 20
prefill_per_token_ms = 0.02
decode_ms = 15
decode_per_seq_ms = 0.25
[scheduler]
max_num_seqs = 32
max_waiting = 0
[prefix_cache]
block_tokens = 16
capacity_tokens = 400000
`;

export interface PrefixCounters {
  queries: number;
  hits: number;
}

/** Simulator replicas on loopback, each its own process with a cold cache. */
export class Replicas {
  private readonly services: Service[];
  readonly ports: number[];
  private readonly dir: string;

  private constructor(services: Service[], ports: number[], dir: string) {
    this.services = services;
    this.ports = ports;
    this.dir = dir;
  }

  static async start(count: number): Promise<Replicas> {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-bench-'));
    const model = join(dir, `${FLEET_MODEL}.toml`);
    await writeFile(model, REPLICA_MODEL);
    const services = Array.from({ length: count }, (_, i) =>
      spawnService(
        `replica-${i + 1}`,
        join(ROOT, 'bin/sim.js'),
        ['serve', '--host', '127.0.0.1', '--port', '0', '--model', model],
        {
          env: { LOG_LEVEL: 'info' },
          keep: (line) => line.msg === 'listening',
        },
      ),
    );
    const ports: number[] = [];
    for (const service of services) {
      const line = await service.waitForLine((l) => l.msg === 'listening', 15_000);
      ports.push(line.port as number);
    }
    return new Replicas(services, ports, dir);
  }

  /** Each replica's prefix-cache counters (tokens looked up, tokens found), from its `/metrics`. */
  async prefixCounters(dispatcher: Dispatcher): Promise<PrefixCounters[]> {
    return Promise.all(
      this.ports.map(async (port) => {
        const response = await request(`http://127.0.0.1:${port}/metrics`, { dispatcher });
        const text = await response.body.text();
        return {
          queries: counter(text, 'vllm:prefix_cache_queries_total'),
          hits: counter(text, 'vllm:prefix_cache_hits_total'),
        };
      }),
    );
  }

  /** Each replica's requests running plus waiting, from its `/control/capacity`. */
  async busy(dispatcher: Dispatcher): Promise<number[]> {
    return Promise.all(
      this.ports.map(async (port) => {
        const response = await request(`http://127.0.0.1:${port}/control/capacity`, { dispatcher });
        const records = (await response.body.json()) as { running: number; waiting: number }[];
        return records.reduce((total, record) => total + record.running + record.waiting, 0);
      }),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.services.map((service) => service.stop()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The sum of a metric's samples in Prometheus text (every label set). */
function counter(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
