/**
 * How much of each request's memory a minimal proxy process promotes to the old generation, by the
 * way it calls undici: the evidence behind `src/gateway/http/upstream-exchange.ts`.
 *
 *   node bench/undici-promotion.ts [--seconds 8] [--warmup 3] [--rate 1000]
 *
 * Each variant is a child process (shipped Node flags plus `--trace-gc-nvp`) with a bare
 * `node:http` server; it reads the request body and answers:
 *
 * - `http`: by itself (no upstream): what Node's HTTP server costs alone;
 * - `request`: with the upstream's response through undici's `Agent.request()` and its body stream;
 * - `exchange`: the same through the gateway's `UpstreamClient.send()` (`dispatch` and
 *   `UpstreamExchange`; needs `make build`).
 *
 * The driver sends `--rate` requests a second, one at a time on one keep-alive connection (so at most
 * one request is ever in flight and nothing should outlive it), and prints per variant the bytes
 * allocated and promoted per request and the young-generation collection pauses over the measured
 * window. Loopback only; every loop is bounded by the request count.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, Client } from 'undici';
import { ALIAS, CHAT_PATH, chatRequestBody } from './support/payloads.ts';
import { ROOT } from './support/process.ts';
import { SHIPPED_NODE_ARGS, startUpstream } from './support/services.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

const VARIANTS = ['http', 'request', 'exchange'] as const;
type Variant = (typeof VARIANTS)[number];

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    upstream: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    rate: { type: 'string', default: '1000' },
  },
});

const ANSWER = Buffer.from('{"id":"x","object":"chat.completion","choices":[]}');

/** Child mode: the server of one variant. */
async function serve(variant: Variant, upstreamOrigin: string): Promise<void> {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  // Loaded only here: the built gateway module, so the variant runs exactly what the gateway runs.
  const { UpstreamClient, upstreamTimeouts } = (await import(
    join(ROOT, 'dist/gateway/http/upstream.js')
  )) as typeof import('../src/gateway/http/upstream.ts');
  const client = new UpstreamClient();
  // The gateway's defaults (docs/configuration.md, "Upstream timeouts").
  const TIMEOUTS = upstreamTimeouts({ connectMs: 10_000, headersMs: 300_000, idleMs: 300_000 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (variant === 'http') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length });
        res.end(ANSWER);
        return;
      }
      const options = {
        origin: upstreamOrigin,
        path: req.url ?? '/',
        method: 'POST' as const,
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      };
      const fail = (): void => {
        res.writeHead(502).end();
      };
      if (variant === 'request') {
        agent.request(options).then((upstream) => {
          res.writeHead(upstream.statusCode, { 'content-type': 'application/json' });
          upstream.body.on('data', (chunk: Buffer) => res.write(chunk));
          upstream.body.on('end', () => res.end());
        }, fail);
        return;
      }
      client.send(
        { ...options, headersTimeout: TIMEOUTS.headersTimeout, bodyTimeout: TIMEOUTS.bodyTimeout },
        TIMEOUTS,
        {
          headArrived: (upstream) => {
            res.writeHead(upstream.statusCode, { 'content-type': 'application/json' });
            upstream.consume({
              bodyData: (chunk) => res.write(chunk),
              bodyEnded: () => res.end(),
              bodyFailed: () => res.destroy(),
            });
          },
          headFailed: fail,
        },
      );
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`{"port":${(server.address() as AddressInfo).port}}\n`);
  });
}

interface GcFigures {
  allocatedBytes: number;
  promotedBytes: number;
  youngPausesMs: number[];
  fullCollections: number;
}

/** One numeric field of a `--trace-gc-nvp` line. */
function nvpField(line: string, name: string): number {
  const at = line.indexOf(` ${name}=`);
  return at < 0 ? 0 : Number.parseFloat(line.slice(at + name.length + 2));
}

async function measure(variant: Variant, upstreamOrigin: string): Promise<GcFigures & { requests: number }> {
  const child = spawn(
    process.execPath,
    [
      ...SHIPPED_NODE_ARGS,
      '--trace-gc-nvp',
      join(ROOT, 'bench/undici-promotion.ts'),
      '--serve',
      variant,
      '--upstream',
      upstreamOrigin,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const gc: GcFigures = { allocatedBytes: 0, promotedBytes: 0, youngPausesMs: [], fullCollections: 0 };
  let measuring = false;
  let pending = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`variant ${variant} exited with ${code}`)));
    child.stdout.on('data', (data: Buffer) => {
      pending += data.toString('utf8');
      for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.startsWith('{')) resolve((JSON.parse(line) as { port: number }).port);
        else if (measuring && line.includes(' pause=')) {
          gc.allocatedBytes += nvpField(line, 'allocated');
          gc.promotedBytes += nvpField(line, 'promoted');
          if (line.includes(' gc=s ')) gc.youngPausesMs.push(nvpField(line, 'pause'));
          else gc.fullCollections++;
        }
      }
    });
  });
  const client = new Client(`http://127.0.0.1:${port}`, { keepAliveTimeout: 60_000 });
  const rate = Number(values.rate);
  const body = chatRequestBody(ALIAS, false);
  const drive = async (seconds: number): Promise<number> => {
    const total = Math.round(rate * seconds);
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      const response = await client.request({
        path: CHAT_PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      await response.body.dump();
    }
    return total;
  };
  await drive(Number(values.warmup));
  measuring = true;
  const requests = await drive(Number(values.seconds));
  measuring = false;
  await client.close();
  child.kill('SIGKILL');
  return { ...gc, requests };
}

if (values.serve) {
  if (!VARIANTS.includes(values.serve as Variant)) throw new Error(`unknown variant ${values.serve}`);
  if (!values.upstream) throw new Error('--upstream is required with --serve');
  await serve(values.serve as Variant, values.upstream);
} else {
  const upstream = await startUpstream(1);
  const origin = `http://127.0.0.1:${upstream.ports[0]!}`;
  const lines = [
    '| variant | allocated KB / request | promoted KB / request | young collections | median young pause ms | longest young pause ms | full collections |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  try {
    for (const variant of VARIANTS) {
      process.stderr.write(`measuring ${variant}\n`);
      const r = await measure(variant, origin);
      const pauses = r.youngPausesMs.sort((a, b) => a - b);
      const kb = (bytes: number): string => (bytes / 1024 / r.requests).toFixed(2);
      lines.push(
        `| ${variant} | ${kb(r.allocatedBytes)} | ${kb(r.promotedBytes)} | ${pauses.length} | ` +
          `${(pauses[pauses.length >> 1] ?? 0).toFixed(1)} | ${(pauses.at(-1) ?? 0).toFixed(1)} | ${r.fullCollections} |`,
      );
    }
  } finally {
    await upstream.service.stop();
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
