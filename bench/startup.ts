/**
 * Start-up time and idle memory of the gateway: the time from spawning `node bin/gateway.js` to its
 * first `200` on `/readyz`, and its resident set (VmRSS) two seconds after that, with nothing else
 * to do. File mode reads examples/quickstart/config.yaml; resource mode (`--config-resource`) reads
 * the same configuration as a GatewayConfig object from an API server on loopback
 * (test/helpers/kube-api.ts), so the Kubernetes client library's cost shows. With `--gateway-bin`
 * another build's file mode is measured in the same run, runs alternating, for a before/after.
 *
 *   node bench/startup.ts [--runs 15] [--gateway-bin /tmp/before/bin/gateway.js] [--json <file>]
 *
 * Prints a markdown table: median and 90th percentile of the start-up, median idle RSS.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { startFakeKubeApi, type FakeKubeApi } from '../test/helpers/kube-api.ts';
import { ROOT } from '../test/helpers/process.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '15' },
    'gateway-bin': { type: 'string' },
    json: { type: 'string' },
  },
});
const runs = Number(args.runs);
const CONFIG = join(ROOT, 'examples/quickstart/config.yaml');
const IDLE_MS = 2000;

interface Variant {
  name: string;
  bin: string;
  mode: 'file' | 'resource';
}

interface Sample {
  startMs: number;
  rssMb: number;
}

const log = (message: string): void => void process.stderr.write(`${message}\n`);

/** One start: spawn, wait for /readyz 200, idle, read VmRSS, stop. */
async function once(variant: Variant, api: FakeKubeApi | undefined): Promise<Sample> {
  const source = variant.mode === 'file' ? ['-f', CONFIG] : ['--config-resource', 'bench/quickstart'];
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      variant.bin,
      ...source,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--access-log',
      'off',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info', ...(api ? { KUBECONFIG: api.kubeconfig } : {}) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const adminPort = await new Promise<number>((resolve, reject) => {
      let buffered = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        buffered += chunk;
        const match = /"listener":"admin","host":"[^"]*","port":(\d+)/.exec(buffered);
        if (match) resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`${variant.name} exited (${code}) before listening`)));
    });
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (performance.now() - started > 30_000) throw new Error(`${variant.name}: not ready within 30 s`);
      await sleep(5);
    }
    const startMs = performance.now() - started;
    await sleep(IDLE_MS);
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
    return { startMs, rssMb: rssKb / 1024 };
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
  }
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
};

const variants: Variant[] = [
  { name: 'this build, file mode', bin: join(ROOT, 'bin/gateway.js'), mode: 'file' },
  ...(args['gateway-bin']
    ? [{ name: `${args['gateway-bin']}, file mode`, bin: args['gateway-bin'], mode: 'file' as const }]
    : []),
  { name: 'this build, resource mode', bin: join(ROOT, 'bin/gateway.js'), mode: 'resource' },
];

const api = await startFakeKubeApi();
const quickstart = parseYaml(readFileSync(CONFIG, 'utf8')) as { spec?: unknown };
api.apply('bench', 'quickstart', quickstart.spec ?? quickstart);
const samples = new Map<string, Sample[]>(variants.map((v) => [v.name, []]));
try {
  // One start of each first, not counted: the page cache holds the files afterwards for all of them.
  for (const variant of variants) await once(variant, api);
  for (let run = 0; run < runs; run++) {
    // Alternate the order every run, so neither build always starts first.
    const order = run % 2 === 0 ? variants : [...variants].reverse();
    for (const variant of order) samples.get(variant.name)!.push(await once(variant, api));
    log(`run ${run + 1}/${runs}`);
  }
} finally {
  await api.close();
}

const rows = variants.map((variant) => {
  const taken = samples.get(variant.name)!;
  const starts = taken.map((s) => s.startMs);
  const rss = taken.map((s) => s.rssMb);
  return {
    variant: variant.name,
    startMedianMs: percentile(starts, 0.5),
    startP90Ms: percentile(starts, 0.9),
    idleRssMedianMb: percentile(rss, 0.5),
  };
});
console.log(`| gateway | start-up to ready, median ms | p90 ms | idle RSS, median MB |`);
console.log(`|---|---|---|---|`);
for (const row of rows)
  console.log(
    `| ${row.variant} | ${row.startMedianMs.toFixed(0)} | ${row.startP90Ms.toFixed(0)} | ${row.idleRssMedianMb.toFixed(1)} |`,
  );
if (args.json) writeFileSync(args.json, JSON.stringify({ runs, rows }, null, 2));
