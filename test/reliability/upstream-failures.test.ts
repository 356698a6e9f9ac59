import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { closedPort, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { extractSection, renderUpstreamFailures, type UpstreamFailureRow } from './report.ts';
import {
  INVALID_TLD_RESOLVER_ENV,
  alive,
  deltas,
  exchange,
  latency,
  postJson,
  scrape,
  simCapacity,
  simModels,
  sumOf,
  waitFor,
  writeResults,
  type Exchange,
  type Series,
} from './support.js';

/**
 * Upstreams that fail below the HTTP layer or refuse work: one that accepts and never answers, one
 * that sends response headers and then nothing, one that resets, a closed port, the simulator's
 * saturated queue (529) and stopped engine (503), and a name that does not resolve. Each alone
 * (what the client gets, and that nothing is held afterwards) and as the first provider of a pool
 * with a healthy second one (failover before anything reached the client).
 */

const GIVE_UP_MS = 2_000;
const DEADLINE_MS = 1_000;

/** A TCP server that runs `onData` for the first bytes of each connection; counts closes. */
interface FakeUpstream {
  server: Server;
  url: string;
  closed: number;
  sockets: Set<Socket>;
}

async function fakeUpstream(onData: (socket: Socket) => void): Promise<FakeUpstream> {
  const fake: FakeUpstream = { server: createServer(), url: '', closed: 0, sockets: new Set() };
  fake.server.on('connection', (socket) => {
    fake.sockets.add(socket);
    socket.on('error', () => {});
    socket.once('data', () => onData(socket));
    socket.on('close', () => {
      fake.closed++;
      fake.sockets.delete(socket);
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  const address = fake.server.address();
  fake.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return fake;
}

async function closeFake(fake: FakeUpstream | undefined): Promise<void> {
  if (!fake) return;
  for (const socket of fake.sockets) socket.destroy();
  await new Promise<void>((resolve) => fake.server.close(() => resolve()));
}

let silent: FakeUpstream;
let headersThenStall: FakeUpstream;
let resetter: FakeUpstream;
let refusedUrl: string;
let sim: StartedSim;
let backup: RecordingUpstream;
let gateway: StartedGateway;
let strictGateway: StartedGateway;

const BACKUP_TEXT = 'BACKUP-ANSWER';

beforeAll(async () => {
  const models = simModels({
    // One sequence at a time and one waiting: a third request is refused with 529 at once.
    slow: `${latency(0, 50, 200)}[scheduler]\nmax_num_seqs = 1\nmax_waiting = 1\n`,
    halted: latency(0, 1, 4),
  });
  [silent, headersThenStall, resetter, refusedUrl, sim, backup] = await Promise.all([
    fakeUpstream(() => {}),
    fakeUpstream((socket) => {
      socket.write(
        'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n',
      );
    }),
    fakeUpstream((socket) => socket.resetAndDestroy()),
    closedPort().then((port) => `http://127.0.0.1:${port}`),
    startSim(['--model', models.slow!, '--model', models.halted!]),
    startUpstream((req, res) => {
      const stream = (JSON.parse(req.body || '{}') as { stream?: boolean }).stream === true;
      const frame = {
        id: 'b',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'b',
        choices: [{ index: 0, delta: { content: BACKUP_TEXT }, finish_reason: 'stop' }],
      };
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(frame)}\n\ndata: [DONE]\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'b',
            object: 'chat.completion',
            created: 1,
            model: 'b',
            content: BACKUP_TEXT,
          }),
        );
      }
    }),
  ]);
  const stop = await postJson(sim.baseUrl, '/control/engine', { model: 'halted', state: 'stopped' });
  expect(stop.status).toBe(200);

  const failing: Record<string, { url: string; gateway_model?: string }> = {
    silent: { url: silent.url },
    'headers-stall': { url: headersThenStall.url },
    reset: { url: resetter.url },
    refused: { url: refusedUrl },
    saturated: { url: `${sim.baseUrl}/v1`, gateway_model: 'slow' },
    stopped: { url: `${sim.baseUrl}/v1`, gateway_model: 'halted' },
    dns: { url: 'http://upstream.invalid:8000' },
  };
  const targets: Record<string, unknown> = {};
  for (const [name, provider] of Object.entries(failing)) {
    targets[`${name}-single`] = { ...provider, concurrency_limit: { max_concurrent_requests: 1 } };
    targets[`${name}-pool`] = {
      strategy: 'priority',
      fallback: { on_status: [503, 529], first_token_timeout_ms: DEADLINE_MS, aimd: false },
      concurrency_limit: { max_concurrent_requests: 1 },
      providers: [
        { ...provider, name: 'failing', concurrency_limit: { max_concurrent_requests: 1 } },
        { url: backup.url, name: 'backup' },
      ],
    };
  }
  [gateway, strictGateway] = await Promise.all([
    startGateway({ targets }, { env: INVALID_TLD_RESOLVER_ENV }),
    startGateway(
      {
        strict_mode: true,
        targets: {
          'saturated-single': targets['saturated-single'],
          'stopped-single': targets['stopped-single'],
        },
      },
      { env: INVALID_TLD_RESOLVER_ENV },
    ),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([gateway?.stop(), strictGateway?.stop()]);
  await Promise.all([
    sim?.stop(),
    backup?.close(),
    closeFake(silent),
    closeFake(headersThenStall),
    closeFake(resetter),
  ]);
});

// --- one row -------------------------------------------------------------------------------------

const rows: UpstreamFailureRow[] = [];
let injected = 0;
let slowestMs = 0;
let dnsMs = 0;

interface Case {
  failure: string;
  target: string;
  strict?: boolean;
  stream?: boolean;
  /** Expected: status (null = none), the body's error code or a marker, failover. */
  expect: { status: number | null; client: string; failover: boolean; end?: Exchange['end'] };
  /** The upstream connection must be closed by the gateway once the client is gone. */
  upstreamClosed?: FakeUpstream;
}

function clientText(got: Exchange): string {
  if (got.status === null)
    return got.end === 'gave_up' ? 'nothing: client gave up' : `connection failed (${got.error})`;
  if (got.text.includes(BACKUP_TEXT))
    return `backup's answer${got.text.endsWith('data: [DONE]\n\n') ? ' with [DONE]' : ''}`;
  if (got.end === 'gave_up') return 'response head, then nothing: client gave up';
  try {
    const body = JSON.parse(got.text) as { error?: { code?: unknown; type?: unknown; message?: unknown } };
    return `error: code \`${String(body.error?.code)}\`, type \`${String(body.error?.type)}\``;
  } catch {
    return `unparsed body (${got.bytes.length} bytes)`;
  }
}

function attemptsText(before: Series, after: Series, model: string): string {
  const list = deltas(before, after, 'gateway_upstream_attempts_total').filter(
    (d) => d.labels.model === model,
  );
  list.sort((a, b) => Number(a.labels.outcome === 'committed') - Number(b.labels.outcome === 'committed'));
  return (
    list
      .map((d) => {
        const provider = d.labels.provider?.startsWith('http') ? 'single' : d.labels.provider;
        return `${provider}: ${d.labels.outcome}${d.delta > 1 ? ` x${d.delta}` : ''}`;
      })
      .join('; ') || '-'
  );
}

function errorsText(before: Series, after: Series, model: string): string {
  return (
    deltas(before, after, 'gateway_upstream_errors_total')
      .filter((d) => d.labels.model === model)
      .map((d) => `${d.labels.reason} x${d.delta}`)
      .join(', ') || '-'
  );
}

async function run(c: Case): Promise<void> {
  const g = c.strict ? strictGateway : gateway;
  const stream = c.stream ?? true;
  const model = c.target;
  const before = await scrape(g.adminUrl);
  const backupBefore = backup.requests.length;
  const closedBefore = c.upstreamClosed?.closed ?? 0;
  const body = { model, messages: [{ role: 'user', content: 'hi' }], stream };
  const got = await postJson(g.url, '/v1/chat/completions', body, {}, { giveUpMs: GIVE_UP_MS });
  injected++;
  const where = `${c.failure} / ${c.target}`;

  const gaugeZero = await waitFor('the in-flight gauge to return to 0', async () =>
    sumOf(await scrape(g.adminUrl), 'gateway_model_inflight', { model }) === 0 ? true : undefined,
  ).catch(() => false);
  if (c.upstreamClosed) {
    // The client left: the gateway must not keep the upstream connection (and its work) alive.
    await waitFor(`${where}: the gateway to close the upstream connection`, () =>
      c.upstreamClosed!.closed > closedBefore ? true : undefined,
    );
  }
  await sleep(100);
  const after = await scrape(g.adminUrl);
  // The next request must be admitted (not refused by the target's or provider's concurrency limit
  // of 1). It may well fail the same way; a refusal would come back at once as a 429.
  const probe = await postJson(g.url, '/v1/chat/completions', body, {}, { giveUpMs: 600 });
  const admitted = probe.status !== 429;
  await waitFor('the probe to finish', async () =>
    sumOf(await scrape(g.adminUrl), 'gateway_model_inflight', { model }) === 0 ? true : undefined,
  );
  const failedOver = backup.requests.length - backupBefore > (probe.text.includes(BACKUP_TEXT) ? 1 : 0);

  expect(got.status, `${where}: status`).toBe(c.expect.status);
  expect(clientText(got), `${where}: client`).toBe(c.expect.client);
  expect(failedOver, `${where}: failover`).toBe(c.expect.failover);
  if (c.expect.end) expect(got.end, `${where}: end`).toBe(c.expect.end);
  expect(gaugeZero && admitted, `${where}: slots (gauge ${gaugeZero}, probe ${probe.status})`).toBe(true);
  if (got.end !== 'gave_up') slowestMs = Math.max(slowestMs, got.ms);
  if (c.failure.startsWith('name does not resolve') && c.target.endsWith('single')) dnsMs = got.ms;

  rows.push({
    failure: c.failure,
    setup: `${c.target.endsWith('pool') ? 'pool' : 'single'}${c.strict ? ', strict' : ''}${stream ? '' : ', not streamed'}`,
    status: got.status === null ? 'none' : String(got.status),
    client: clientText(got),
    failover: failedOver ? 'yes: backup served' : 'no',
    attempts: attemptsText(before, after, model),
    upstreamErrors: errorsText(before, after, model),
    slots: gaugeZero && admitted ? 'yes' : 'NO',
  });
}

const BACKUP = "backup's answer with [DONE]";

describe('upstream failures', () => {
  it('accepts and never answers: the client decides how long to wait; pools fail over at the deadline', async () => {
    const failure = 'accepts, never answers';
    const gaveUp = {
      status: null,
      client: 'nothing: client gave up',
      failover: false,
      end: 'gave_up',
    } as const;
    await run({ failure, target: 'silent-single', expect: gaveUp, upstreamClosed: silent });
    await run({ failure, target: 'silent-single', stream: false, expect: gaveUp, upstreamClosed: silent });
    await run({ failure, target: 'silent-pool', expect: { status: 200, client: BACKUP, failover: true } });
    // The first-token deadline applies to streamed requests only (docs/architecture.md).
    await run({ failure, target: 'silent-pool', stream: false, expect: gaveUp, upstreamClosed: silent });
  });

  it('answers headers, then stalls: a lone provider passes the head on and the client waits; a pool holds the head and fails over', async () => {
    const failure = 'response head, then nothing';
    // An event stream's head is flushed at the commit point: the client knows the answer started.
    await run({
      failure,
      target: 'headers-stall-single',
      expect: {
        status: 200,
        client: 'response head, then nothing: client gave up',
        failover: false,
        end: 'gave_up',
      },
      upstreamClosed: headersThenStall,
    });
    await run({
      failure,
      target: 'headers-stall-pool',
      expect: { status: 200, client: BACKUP, failover: true },
    });
  });

  it('resets, refuses, does not resolve: 503 upstream_unavailable alone, failover in a pool', async () => {
    const unavailable = {
      status: 503,
      client: 'error: code `upstream_unavailable`, type `api_error`',
      failover: false,
    };
    for (const [failure, name] of [
      ['resets the connection', 'reset'],
      ['refuses the connection', 'refused'],
      ['name does not resolve (`.invalid`)', 'dns'],
    ] as const) {
      await run({ failure, target: `${name}-single`, expect: unavailable });
      await run({ failure, target: `${name}-pool`, expect: { status: 200, client: BACKUP, failover: true } });
    }
    expect(dnsMs).toBeGreaterThan(0);
    expect(dnsMs, 'a name that cannot resolve is answered within the client budget').toBeLessThan(GIVE_UP_MS);
  });

  it("saturated (the simulator's bounded queue): 529 passed through or standardized, failover in a pool", async () => {
    // Fill the queue: one request running, one waiting (max_num_seqs 1, max_waiting 1).
    const fillers = [0, 1].map(() => {
      const controller = new AbortController();
      const done = postJson(
        sim.baseUrl,
        '/v1/chat/completions',
        { model: 'slow', messages: [{ role: 'user', content: 'fill' }], stream: true },
        {},
        { giveUpMs: 60_000, signal: controller.signal },
      );
      return { controller, done };
    });
    try {
      await waitFor('the simulator queue to be full', async () => {
        const slow = (await simCapacity(sim.baseUrl)).find((r) => r.model === 'slow');
        return slow && slow.running === 1 && slow.waiting === 1 ? true : undefined;
      });
      const failure = 'saturated: 529 `queue_saturated`';
      await run({
        failure,
        target: 'saturated-single',
        expect: {
          status: 529,
          client: 'error: code `queue_saturated`, type `overloaded_error`',
          failover: false,
        },
      });
      await run({
        failure,
        target: 'saturated-single',
        strict: true,
        expect: { status: 529, client: 'error: code `null`, type `overloaded_error`', failover: false },
      });
      await run({
        failure,
        target: 'saturated-pool',
        expect: { status: 200, client: BACKUP, failover: true },
      });
    } finally {
      for (const filler of fillers) filler.controller.abort();
      await Promise.all(fillers.map((f) => f.done));
    }
  });

  it('engine stopped: 503 passed through or standardized, failover in a pool', async () => {
    const failure = 'engine stopped: 503 `engine_unavailable`';
    await run({
      failure,
      target: 'stopped-single',
      expect: {
        status: 503,
        client: 'error: code `engine_unavailable`, type `service_unavailable_error`',
        failover: false,
      },
    });
    await run({
      failure,
      target: 'stopped-single',
      strict: true,
      expect: { status: 503, client: 'error: code `null`, type `api_error`', failover: false },
    });
    await run({ failure, target: 'stopped-pool', expect: { status: 200, client: BACKUP, failover: true } });
  });

  it('leaves the gateway serving, logs no unexpected error, and matches docs/reliability.md', async () => {
    for (const g of [gateway, strictGateway]) {
      expect(alive(g.program.proc.pid)).toBe(true);
      expect((await exchange(`${g.adminUrl}/healthz`)).status).toBe(200);
      expect(g.program.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
    }
    writeResults('upstream-failures', {
      rows,
      figures: { failuresInjected: injected, slowestBoundedMs: slowestMs, dnsFailureMs: dnsMs },
    });
    let committed = '';
    try {
      committed = readFileSync(join(ROOT, 'docs/reliability.md'), 'utf8');
    } catch {
      // missing: reported below
    }
    expect(
      extractSection(committed, 'upstream-failures') === renderUpstreamFailures(rows),
      'docs/reliability.md does not show these upstream failures: run node test/reliability/render-report.ts',
    ).toBe(true);
  });
});
