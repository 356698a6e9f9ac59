import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import type { LoadLifecycleResults } from './report.ts';
import {
  SOAK,
  alive,
  exchange,
  latency,
  postJson,
  rssMiB,
  scrape,
  simCapacity,
  simModels,
  sumOf,
  waitFor,
  waitSimIdle,
  writeResults,
  type Exchange,
} from './support.js';

/**
 * Load and lifecycle with nothing lost: hot reloads every few hundred milliseconds under sustained
 * load, a SIGTERM drain with streams open and requests still arriving, clients that vanish at every
 * stage of a stream, and the gateway's memory before, during and after load. Bounded in `make test`;
 * `make soak` runs each longer.
 */

let sim: StartedSim;
let backup: RecordingUpstream;
const started: StartedGateway[] = [];
const results: Partial<LoadLifecycleResults> = {};

beforeAll(async () => {
  const models = simModels({
    fast: latency(0, 1, 8),
    'fast-b': latency(0, 1, 8),
    // About 1.2 s per stream: long enough to be open across a signal or a disconnect.
    slow: latency(10, 30, 40),
    // Seconds before the first token: a client can leave before any byte.
    'late-start': latency(3_000, 10, 10),
  });
  [sim, backup] = await Promise.all([
    startSim(Object.values(models).flatMap((path) => ['--model', path])),
    startUpstream(),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((g) => g.stop()));
  await Promise.all([sim?.stop(), backup?.close()]);
  // The report reads whatever ran; a partial run writes what it has.
  writeResults('load-lifecycle', results);
});

async function gatewayFor(config: unknown, args: string[] = []): Promise<StartedGateway> {
  const gateway = await startGateway(config, { args });
  started.push(gateway);
  return gateway;
}

const chatBody = (model: string, stream: boolean, padding = 0): string =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: padding > 0 ? 'x'.repeat(padding) : 'hi' }],
    stream,
  });

/** A response is complete: a streamed one ends with the provider's [DONE], a JSON one parses. */
function complete(got: Exchange, stream: boolean): boolean {
  if (got.status !== 200 || got.end !== 'clean') return false;
  if (stream) return got.text.endsWith('data: [DONE]\n\n');
  try {
    const body = JSON.parse(got.text) as { choices?: unknown[] };
    return Array.isArray(body.choices) && body.choices.length === 1;
  } catch {
    return false;
  }
}

/** Closed-loop clients: each sends its next request when the previous one is answered. */
async function closedLoop(
  workers: number,
  until: () => boolean,
  send: (worker: number, n: number) => Promise<boolean>,
): Promise<{ sent: number; ok: number }> {
  let sent = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      for (let n = 0; !until(); n++) {
        sent++;
        if (await send(worker, n)) ok++;
      }
    }),
  );
  return { sent, ok };
}

describe('hot reloads under sustained load', () => {
  it('drop no request', { timeout: 180_000 }, async () => {
    const durationMs = SOAK ? 60_000 : 6_000;
    const reloadEveryMs = 400;
    const concurrency = SOAK ? 16 : 8;
    const configFor = (generation: number) => ({
      targets: {
        chat: {
          url: `${sim.baseUrl}/v1`,
          // Alternating models: each reload really changes where requests go.
          gateway_model: generation % 2 === 0 ? 'fast' : 'fast-b',
          response_headers: { 'x-generation': String(generation) },
        },
      },
    });
    const gateway = await gatewayFor(configFor(0));
    const agent = new Agent({ connections: concurrency });
    const generations = new Set<string>();
    const failures: string[] = [];
    let written = 0;
    let stop = false;
    const reloader = (async () => {
      while (!stop) {
        await sleep(reloadEveryMs);
        if (stop) break;
        written++;
        await gateway.writeConfig(configFor(written));
      }
    })();
    const timer = setTimeout(() => (stop = true), durationMs);
    const load = await closedLoop(
      concurrency,
      () => stop,
      async (worker, n) => {
        const stream = (worker + n) % 2 === 0;
        const got = await postJson(
          gateway.url,
          '/v1/chat/completions',
          chatBody('chat', stream),
          {},
          { dispatcher: agent },
        );
        const generation = got.headers['x-generation'];
        if (typeof generation === 'string') generations.add(generation);
        const ok = complete(got, stream);
        if (!ok && failures.length < 5)
          failures.push(`${got.status} ${got.end} ${got.error} ${got.text.slice(0, 200)}`);
        return ok;
      },
    );
    clearTimeout(timer);
    await reloader;
    await agent.close();
    // The last writes are applied within the debounce and the 1 s poll.
    await sleep(1_500);
    const applied = gateway.program.logs.filter((l) => l.msg === 'configuration reloaded').length;
    const metrics = await scrape(gateway.adminUrl);

    expect(failures, 'failed requests').toEqual([]);
    expect(load.ok).toBe(load.sent);
    expect(load.sent).toBeGreaterThan(concurrency * 10);
    expect(written).toBeGreaterThanOrEqual(Math.floor(durationMs / reloadEveryMs / 2));
    // Writes closer together than the watcher's debounce may be applied as one; most are applied.
    expect(applied).toBeGreaterThanOrEqual(Math.floor(written / 2));
    expect(sumOf(metrics, 'gateway_config_reloads_total', { result: 'success' })).toBe(applied);
    expect(sumOf(metrics, 'gateway_config_reloads_total', { result: 'failure' })).toBe(0);
    expect(generations.size, 'configurations that served requests').toBeGreaterThanOrEqual(3);
    expect(sumOf(metrics, 'gateway_model_inflight')).toBe(0);
    expect(sumOf(metrics, 'gateway_requests_total', { status: '200' })).toBe(load.sent);
    // Every answered request is one duration observation, in the +Inf bucket and the count.
    expect(sumOf(metrics, 'gateway_request_duration_seconds_count')).toBe(load.sent);
    expect(sumOf(metrics, 'gateway_request_duration_seconds_bucket', { le: '+Inf' })).toBe(load.sent);
    results.reload = {
      durationSeconds: durationMs / 1000,
      concurrency,
      requests: load.sent,
      completed: load.ok,
      lost: load.sent - load.ok,
      reloadsWritten: written,
      reloadsApplied: applied,
      generationsServed: generations.size,
    };
  });
});

describe('SIGTERM', () => {
  it('drains every accepted request and stream; nothing accepted is cut', { timeout: 120_000 }, async () => {
    const streams = SOAK ? 60 : 12;
    const gateway = await gatewayFor(
      {
        targets: {
          slow: { url: `${sim.baseUrl}/v1`, gateway_model: 'slow' },
          fast: { url: `${sim.baseUrl}/v1`, gateway_model: 'fast' },
        },
      },
      ['--shutdown-delay-secs', '1', '--shutdown-timeout-secs', '60'],
    );
    const agent = new Agent({ connections: streams + 8 });

    // Streams open at the signal: each has its head and first bytes.
    const open = await Promise.all(
      Array.from({ length: streams }, async () => {
        const response = await request(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: chatBody('slow', true),
          dispatcher: agent,
        });
        const chunks: Buffer[] = [];
        const iterator = response.body[Symbol.asyncIterator]();
        const first = await iterator.next();
        if (!first.done) chunks.push(first.value as Buffer);
        const rest = (async () => {
          try {
            for (let next = await iterator.next(); !next.done; next = await iterator.next())
              chunks.push(next.value as Buffer);
            return Buffer.concat(chunks).toString('utf8');
          } catch (error) {
            return `CUT: ${String(error)}`;
          }
        })();
        return { status: response.statusCode, rest };
      }),
    );
    expect(open.every((s) => s.status === 200)).toBe(true);

    gateway.program.proc.kill('SIGTERM');
    const signalledAt = Date.now();
    await waitFor('readiness to fail', async () =>
      (await exchange(`${gateway.adminUrl}/readyz`)).status === 503 ? true : undefined,
    );

    // Requests keep arriving: during the delay they are served; after admission closes they are
    // refused at connect. A response that has started must always complete.
    const arrivals: { sentAt: number; got: Exchange }[] = [];
    const closedLog = gateway.program.waitForLog(
      (l) => l.msg === 'shutdown: admission closed, draining',
      10_000,
    );
    closedLog.catch(() => undefined);
    let refusedSeen = 0;
    while (refusedSeen < 5 && Date.now() - signalledAt < 8_000) {
      const sentAt = Date.now();
      // A fresh connection per request, as a client that was just routed here would open.
      const fresh = new Agent({ connections: 1 });
      const got = await postJson(
        gateway.url,
        '/v1/chat/completions',
        chatBody('fast', false),
        {},
        { dispatcher: fresh, giveUpMs: 10_000 },
      );
      await fresh.close().catch(() => undefined);
      arrivals.push({ sentAt, got });
      if (got.status === null) refusedSeen++;
      await sleep(50);
    }
    const closedAt = Date.parse(String((await closedLog).time));

    const bodies = await Promise.all(open.map((s) => s.rest));
    const exit = await gateway.program.exited;
    await agent.close();

    const beforeClose = arrivals.filter((a) => a.sentAt < closedAt - 20);
    const afterClose = arrivals.filter((a) => a.sentAt > closedAt + 20);
    const accepted = arrivals.filter((a) => a.got.status !== null);
    const partial = accepted.filter((a) => !complete(a.got, false));
    const cutStreams = bodies.filter((b) => !b.endsWith('data: [DONE]\n\n'));

    expect(cutStreams, 'streams open at the signal that did not end with [DONE]').toEqual([]);
    expect(
      partial.map((a) => `${a.got.status} ${a.got.end}`),
      'responses started but not completed',
    ).toEqual([]);
    expect(beforeClose.length, 'requests sent during the delay').toBeGreaterThan(3);
    for (const a of beforeClose)
      expect(complete(a.got, false), 'a request sent before admission closed').toBe(true);
    for (const a of afterClose) {
      // Never a half answer: either served whole (a connection accepted just before) or refused.
      if (a.got.status === null) expect(a.got.error).toBe('ECONNREFUSED');
    }
    expect(
      afterClose.some((a) => a.got.status === null),
      'admission closed',
    ).toBe(true);
    expect(exit.code).toBe(0);
    expect(gateway.program.logs.some((l) => l.msg === 'shutdown: every accepted request finished')).toBe(
      true,
    );
    results.drain = {
      streamsAtSignal: streams,
      acceptedDuringDelay: accepted.length,
      accepted: streams + accepted.length,
      completed: streams - cutStreams.length + accepted.length - partial.length,
      cut: cutStreams.length + partial.length,
      refusedAfterClose: arrivals.filter((a) => a.got.status === null).length,
      exitCode: exit.code,
    };
  });
});

describe('clients that disconnect mid-stream', () => {
  it(
    'free every slot: gauges return to zero, upstream work ends, the limit admits again',
    { timeout: 120_000 },
    async () => {
      const perPhase = SOAK ? 20 : 5;
      const limit = perPhase * 3;
      const key = 'sk-disconnect-7d21';
      const limits = {
        keys: ['k'],
        concurrency_limit: { max_concurrent_requests: limit },
        inflight_limit: limit,
      };
      const provider = { url: `${sim.baseUrl}/v1`, gateway_model: 'slow' };
      const auth = { key_definitions: { k: { key, labels: { account: 'acme' } } } };
      const targets = {
        raw: { ...provider, ...limits },
        late: { url: `${sim.baseUrl}/v1`, gateway_model: 'late-start', ...limits },
        pool: {
          strategy: 'priority',
          fallback: { on_status: [5], first_token_timeout_ms: 10_000, aimd: false },
          providers: [
            { ...provider, name: 'sim', concurrency_limit: { max_concurrent_requests: limit } },
            { url: backup.url, name: 'backup' },
          ],
          ...limits,
        },
      };
      const [plain, strict] = await Promise.all([
        gatewayFor({ auth, targets }),
        gatewayFor({ strict_mode: true, auth, targets: { raw: targets.raw, late: targets.late } }),
      ]);
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };

      /** Opens a stream and drops the connection after `frames` body chunks (0: before any byte). */
      async function dropAfter(gateway: StartedGateway, model: string, frames: number): Promise<void> {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), frames === 0 ? 300 : 20_000);
        try {
          const response = await request(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers,
            body: chatBody(model, true),
            signal: controller.signal,
          });
          let seen = 0;
          for await (const chunk of response.body) {
            void chunk;
            if (++seen >= frames) break;
          }
          controller.abort();
        } catch {
          // the abort itself
        } finally {
          clearTimeout(timer);
        }
      }

      let dropped = 0;
      for (const [gateway, models] of [
        [plain, ['raw', 'pool']],
        [strict, ['raw']],
      ] as const) {
        for (const model of models) {
          // Three stages at once, so the limit is full: before the first byte, after the first
          // frame, in the middle of the stream.
          await Promise.all([
            ...Array.from({ length: perPhase }, () =>
              dropAfter(gateway, model === 'raw' ? 'late' : model, 0),
            ),
            ...Array.from({ length: perPhase }, () => dropAfter(gateway, model, 1)),
            ...Array.from({ length: perPhase }, () => dropAfter(gateway, model, 8)),
          ]);
          dropped += perPhase * 3;
        }
      }

      let inflightAfter = -1;
      for (const gateway of [plain, strict]) {
        inflightAfter = await waitFor('in-flight gauges to return to zero', async () => {
          const value = sumOf(await scrape(gateway.adminUrl), 'gateway_model_inflight');
          return value === 0 ? value : undefined;
        });
      }
      await waitSimIdle(sim.baseUrl, 15_000);
      const running = (await simCapacity(sim.baseUrl)).reduce((sum, r) => sum + r.running + r.waiting, 0);

      // The whole limit is free again: `limit` concurrent streams are all admitted (none gets 429).
      let readmitted = 0;
      for (const [gateway, model] of [
        [plain, 'raw'],
        [plain, 'pool'],
        [strict, 'raw'],
      ] as const) {
        const again = await Promise.all(
          Array.from({ length: limit }, () =>
            postJson(gateway.url, '/v1/chat/completions', chatBody(model, true), headers, {
              giveUpMs: 30_000,
            }),
          ),
        );
        expect(
          again.map((g) => g.status).filter((s) => s !== 200),
          `${model}: refused after the disconnects`,
        ).toEqual([]);
        expect(again.every((g) => complete(g, true))).toBe(true);
        readmitted += again.length;
      }
      expect(inflightAfter).toBe(0);
      expect(running).toBe(0);
      for (const gateway of [plain, strict]) {
        expect(gateway.program.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
      }
      results.disconnects = { streams: dropped, inflightAfter, upstreamRunningAfter: running, readmitted };
    },
  );
});

describe('memory', () => {
  it('returns near the baseline after load', { timeout: SOAK ? 900_000 : 300_000 }, async () => {
    const concurrency = 8;
    const perRound = SOAK ? 6_000 : 1_200;
    const rounds = SOAK ? 8 : 2;
    // 32 KiB bodies: a request buffer kept per request would add tens of MiB per round.
    const padding = 32 * 1024;
    const marginMiB = 48;
    const gateway = await gatewayFor({
      targets: { chat: { url: `${sim.baseUrl}/v1`, gateway_model: 'fast' } },
    });
    const pid = gateway.program.proc.pid!;
    const agent = new Agent({ connections: concurrency });
    let failed = 0;
    const round = async (): Promise<void> => {
      let left = perRound;
      await closedLoop(
        concurrency,
        () => left <= 0,
        async (worker, n) => {
          left--;
          const stream = (worker + n) % 2 === 0;
          const got = await postJson(
            gateway.url,
            '/v1/chat/completions',
            chatBody('chat', stream, padding),
            {},
            { dispatcher: agent },
          );
          if (!complete(got, stream)) failed++;
          return true;
        },
      );
    };
    let peak = 0;
    const sampler = setInterval(() => {
      if (alive(pid)) peak = Math.max(peak, rssMiB(pid));
    }, 100);
    try {
      // Warm-up of the same shape (the heap grows to its working size over the first rounds), then
      // the baseline.
      await round();
      await round();
      await sleep(1_000);
      const baseline = rssMiB(pid);
      const afterRounds: number[] = [];
      for (let i = 0; i < rounds; i++) {
        await round();
        await sleep(1_000);
        afterRounds.push(rssMiB(pid));
      }
      const after = afterRounds.at(-1)!;
      expect(failed).toBe(0);
      expect(sumOf(await scrape(gateway.adminUrl), 'gateway_model_inflight')).toBe(0);
      expect(
        after,
        `RSS ${after.toFixed(1)} MiB after load vs baseline ${baseline.toFixed(1)} MiB`,
      ).toBeLessThan(baseline + marginMiB);
      if (afterRounds.length > 2) {
        // No steady climb across rounds.
        expect(after - afterRounds[0]!).toBeLessThan(marginMiB / 2);
      }
      results.memory = {
        requestsPerRound: perRound,
        rounds,
        baselineMiB: baseline,
        peakMiB: peak,
        afterMiB: after,
        marginMiB,
      };
    } finally {
      clearInterval(sampler);
      await agent.close();
    }
  });
});
