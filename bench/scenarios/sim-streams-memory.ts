/**
 * Gateway RSS with N concurrent live streams from the simulator (default 1,000 streams, 80 tokens
 * at 50 ms each: about 4 s on a quiet machine; use `--tokens 120` on a busy one so that every
 * stream is still open when the last one starts: check `maxOpen` in the output).
 *
 *   node bench/scenarios/sim-streams-memory.ts [--runs 3] [--streams 1000] [--ramp-ms 0]
 *        [--tokens 80] [--decode-ms 50] [--json FILE]
 *        --variant 'name=base' --variant 'name=arena1;env=MALLOC_ARENA_MAX=1' ...
 *
 * A variant is `;`-separated `key=value` pairs: `name` (required), `node` (space-separated node flags;
 * default the shipped ones, SHIPPED_NODE_ARGS), `env` (space-separated NAME=VALUE words on top of
 * the shipped environment, SHIPPED_ENV, e.g. glibc's MALLOC_* tunables, read at process start),
 * `bin` (another build's bin/gateway.js; default this checkout's), `floor=1` (bench/floor-proxy.ts,
 * bare Node + undici, instead of the gateway). Proxies start as every benchmark starts them
 * (bench/support/services.ts: the gateway's access log to /dev/null). Runs alternate variants
 * (v1 v2 ... v1 v2 ...), each with a fresh simulator and gateway.
 *
 * Per run: the simulator with one model (`max_num_seqs` 2 x streams, unbounded queue, no per-sequence
 * decode cost), the gateway with one alias pointing at it, and every stream opened at once through
 * an undici Pool of streams + 8 connections. The gateway's VmRSS is sampled from /proc every 100 ms.
 * Idle is the RSS 1 s after the gateway listened, before any request; peak is the largest sample,
 * hwm is VmHWM (reset just before the streams); held is the largest sample while at least 95% of
 * the streams were open. While they are, the gateway's /metrics nodejs_* gauges are read once.
 * Every stream must end with `[DONE]` (ok) and status 200. Units: MiB (KiB from /proc / 1024).
 * Loopback only; every child is killed at the end, on error and on Ctrl-C (support/process.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool, request } from 'undici';
import { ROOT, resetPeakRss, spawnService } from '../support/process.ts';
import { startFloor, startGateway, type RunningProxy } from '../support/services.ts';

/** VmRSS / VmHWM of a process in MiB (KiB from /proc divided by 1024). */
function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}
const rssMB = (pid: number): number => statusMiB(pid, 'VmRSS');
const peakRssMB = (pid: number): number => statusMiB(pid, 'VmHWM');

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    runs: { type: 'string', default: '3' },
    streams: { type: 'string', default: '1000' },
    'ramp-ms': { type: 'string', default: '0' },
    tokens: { type: 'string', default: '80' },
    'decode-ms': { type: 'string', default: '50' },
    json: { type: 'string' },
  },
});

interface Variant {
  name: string;
  /** Node flags; the shipped ones unless given. */
  node: string[] | undefined;
  /** Environment on top of the shipped one (SHIPPED_ENV, and the benchmark's access log to /dev/null). */
  env: Record<string, string>;
  /** Another build's `bin/gateway.js`; this checkout's unless given. */
  bin: string | undefined;
  /** Run bench/floor-proxy.ts (bare Node + undici) instead of the gateway. */
  floor: boolean;
}

function parseVariant(text: string): Variant {
  const v: Variant = {
    name: '',
    node: undefined,
    env: {},
    bin: undefined,
    floor: false,
  };
  for (const part of text.split(';')) {
    const at = part.indexOf('=');
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 'name') v.name = value;
    else if (key === 'node') v.node = value === '' ? [] : value.split(/\s+/);
    else if (key === 'env')
      for (const word of value.split(/\s+/).filter(Boolean)) {
        const eq = word.indexOf('=');
        v.env[word.slice(0, eq)] = word.slice(eq + 1);
      }
    else if (key === 'bin') v.bin = value;
    else if (key === 'floor') v.floor = value !== '0' && value !== 'false';
    else throw new Error(`unknown variant key ${key}`);
  }
  if (!v.name) throw new Error(`variant without name: ${text}`);
  return v;
}

const variants = (values.variant ?? ['name=base']).map(parseVariant);
const RUNS = Number(values.runs);
const STREAMS = Number(values.streams);
const RAMP_MS = Number(values['ramp-ms']);
const ALIAS = 'mem';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const dir = mkdtempSync(join(tmpdir(), 'sim-streams-mem-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
const modelFile = join(dir, `${ALIAS}.toml`);
writeFileSync(
  modelFile,
  `name = "${ALIAS}"
output_tokens = ${Number(values.tokens)}
[latency]
prefill_ms = 10
prefill_per_token_ms = 0
decode_ms = ${Number(values['decode-ms'])}
decode_per_seq_ms = 0
[scheduler]
max_num_seqs = ${STREAMS * 2}
max_waiting = 0
`,
);

const BODY = JSON.stringify({
  model: ALIAS,
  stream: true,
  messages: [
    { role: 'system', content: 'You are a concise assistant.' },
    { role: 'user', content: 'Say hello to the benchmark in one short sentence.' },
  ],
});

interface RunResult {
  variant: string;
  run: number;
  idle: number;
  peakSampled: number;
  hwm: number;
  held: number;
  maxOpen: number;
  ok: number;
  failed: number;
  seconds: number;
  /** Stream durations at the client, min/median/max ms. */
  streamMs: string;
  gauges: Record<string, number>;
}

function gaugesOf(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m =
      /^(nodejs_(?:heap_size_used_bytes|heap_size_total_bytes|external_memory_bytes)|process_resident_memory_bytes) (\S+)/.exec(
        line,
      );
    if (m) out[m[1]!] = Math.round(Number(m[2]) / 104857.6) / 10;
  }
  return out;
}

async function oneRun(variant: Variant, run: number): Promise<RunResult> {
  const stops: (() => Promise<void>)[] = [];
  try {
    const sim = spawnService(
      'sim',
      join(ROOT, 'dist/simulator/cli.js'),
      ['serve', '--host', '127.0.0.1', '--port', '0', '--model', modelFile],
      { env: { LOG_LEVEL: 'info' }, keep: () => false },
    );
    stops.push(() => sim.stop(5_000));
    const simPort = (await sim.waitForLine((l) => l.msg === 'listening')).port as number;
    const processOptions = { ...(variant.node ? { nodeArgs: variant.node } : {}), env: variant.env };
    let gw: RunningProxy;
    if (variant.floor) {
      const floor = await startFloor(simPort, processOptions);
      stops.push(() => floor.service.stop(5_000));
      gw = floor;
    } else {
      const gateway = await startGateway(
        'gateway',
        { targets: { [ALIAS]: { url: `http://127.0.0.1:${simPort}/v1` } } },
        { ...processOptions, ...(variant.bin ? { bin: variant.bin } : {}) },
      );
      stops.push(() => gateway.stop());
      gw = gateway;
    }
    const proxyPort = Number(new URL(gw.origin).port);
    const adminPort = gw.adminOrigin === undefined ? 0 : Number(new URL(gw.adminOrigin).port);
    const pid = gw.service.pid;
    await sleep(1000);
    const idle = rssMB(pid);
    resetPeakRss(pid);

    const pool = new Pool(`http://127.0.0.1:${proxyPort}`, {
      connections: STREAMS + 8,
      keepAliveTimeout: 60_000,
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    let open = 0;
    let maxOpen = 0;
    let ok = 0;
    let failed = 0;
    const durations: number[] = [];
    const one = async (): Promise<void> => {
      const t0 = performance.now();
      try {
        const res = await pool.request({
          path: '/v1/chat/completions',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: BODY,
        });
        open++;
        maxOpen = Math.max(maxOpen, open);
        let last: Buffer = Buffer.alloc(0);
        await new Promise<void>((resolve) => {
          res.body.on('data', (chunk: Buffer) => {
            last = chunk;
          });
          res.body.on('end', resolve);
          res.body.on('error', resolve);
        });
        const tail = last.toString('latin1');
        open--;
        durations.push(performance.now() - t0);
        if (res.statusCode === 200 && tail.includes('[DONE]')) ok++;
        else failed++;
      } catch {
        failed++;
      }
    };

    let peakSampled = idle;
    let held = 0;
    let gauges: Record<string, number> = {};
    let sampling = true;
    const started = performance.now();
    const sampler = (async () => {
      let scraped = false;
      while (sampling) {
        const now = rssMB(pid);
        peakSampled = Math.max(peakSampled, now);
        if (open >= STREAMS * 0.95) held = Math.max(held, now);
        if (!scraped && adminPort > 0 && open >= STREAMS * 0.95 && performance.now() - started > 1500) {
          scraped = true;
          try {
            const r = await request(`http://127.0.0.1:${adminPort}/metrics`);
            gauges = gaugesOf(await r.body.text());
          } catch {
            // no metrics
          }
        }
        await sleep(100);
      }
    })();

    const all: Promise<void>[] = [];
    for (let i = 0; i < STREAMS; i++) {
      all.push(one());
      if (RAMP_MS > 0 && i % 50 === 49) await sleep((RAMP_MS * 50) / STREAMS);
    }
    const deadline = sleep(60_000).then(() => {
      throw new Error('streams did not end within 60 s');
    });
    await Promise.race([Promise.all(all), deadline]);
    const seconds = (performance.now() - started) / 1000;
    await sleep(300);
    sampling = false;
    await sampler;
    const hwm = peakRssMB(pid);
    await pool.destroy();
    durations.sort((a, b) => a - b);
    const p = (q: number): number => Math.round(durations[Math.floor(q * (durations.length - 1))] ?? 0);
    const streamMs = `${p(0)}/${p(0.5)}/${p(1)}`;
    return {
      variant: variant.name,
      run,
      idle,
      peakSampled,
      hwm,
      held,
      maxOpen,
      ok,
      failed,
      seconds,
      streamMs,
      gauges,
    };
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

const results: RunResult[] = [];
const f = (n: number): string => n.toFixed(1);
try {
  for (let run = 1; run <= RUNS; run++) {
    for (const variant of variants) {
      const r = await oneRun(variant, run);
      results.push(r);
      console.log(
        `${r.variant.padEnd(24)} run ${run}: idle ${f(r.idle)} peak ${f(r.peakSampled)} hwm ${f(r.hwm)} held ${f(r.held)} ` +
          `maxOpen ${r.maxOpen} ok ${r.ok} failed ${r.failed} ${r.seconds.toFixed(1)} s streams ${r.streamMs} ms ${JSON.stringify(r.gauges)}`,
      );
    }
  }
} finally {
  console.log('\nsummary (MiB = VmRSS kB / 1024; peak = max of 100 ms samples, hwm = VmHWM)');
  for (const variant of variants) {
    const rs = results.filter((r) => r.variant === variant.name);
    if (rs.length === 0) continue;
    const med = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(
      `${variant.name.padEnd(24)} idle ${rs.map((r) => f(r.idle)).join('/')}  peak ${rs.map((r) => f(r.peakSampled)).join('/')}` +
        `  hwm ${rs.map((r) => f(r.hwm)).join('/')}  median peak ${f(med(rs.map((r) => r.peakSampled)))} hwm ${f(med(rs.map((r) => r.hwm)))}`,
    );
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2));
}
