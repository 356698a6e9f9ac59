import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, spawnGateway, type SpawnedGateway } from '../../test/helpers/gateway.js';
import { startSim, type StartedSim } from '../../test/helpers/sim.js';

/**
 * The lifecycle claims of the Kubernetes packaging, proved with processes on loopback: a
 * ConfigMap-style config directory, a rolling replacement under load, a drain during a long stream,
 * fault modes from the simulator, metrics scraped from the admin port.
 */

let fast: StartedSim;
let slow: StartedSim;
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'gateway-e2e-'));
  await writeFile(
    join(work, 'slow.toml'),
    'name = "slow"\noutput_tokens = 40\n[latency]\nprefill_ms = 20\nprefill_per_token_ms = 0\ndecode_ms = 40\ndecode_per_seq_ms = 0\n[scheduler]\nmax_num_seqs = 64\n',
  );
  [fast, slow] = await Promise.all([
    startSim(['--model', 'examples/sim/zero-latency.toml', '--enable-directives']),
    startSim(['--model', join(work, 'slow.toml')]),
  ]);
});
afterAll(async () => {
  await Promise.all([fast.stop(), slow.stop()]);
  await rm(work, { recursive: true, force: true });
});

type Gateway = SpawnedGateway;

function startGatewayOn(configPath: string, extra: string[] = []): Promise<Gateway> {
  return spawnGateway(configPath, ['--config-poll-secs', '30', ...extra]);
}

function config(extraAliases: Record<string, unknown> = {}): string {
  return stringify({
    targets: {
      chat: { url: `${fast.baseUrl}/v1`, gateway_model: 'zero' },
      long: { url: `${slow.baseUrl}/v1`, gateway_model: 'slow' },
      ...extraAliases,
    },
  });
}

/** A ConfigMap volume as the kubelet lays it out, with its atomic update. */
async function configMapDir(
  initial: string,
): Promise<{ path: string; update: (text: string) => Promise<void> }> {
  const dir = await mkdtemp(join(work, 'cm-'));
  let generation = 0;
  const write = async (text: string): Promise<void> => {
    const name = `..2026_01_01_00_00_${String(generation++).padStart(2, '0')}.000000000`;
    await mkdir(join(dir, name));
    await writeFile(join(dir, name, 'config.yaml'), text);
    await symlink(name, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  await write(initial);
  await symlink('..data/config.yaml', join(dir, 'config.yaml'));
  return { path: join(dir, 'config.yaml'), update: write };
}

function client(gateway: Gateway): OpenAI {
  return new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'none', maxRetries: 0 });
}

describe('local end to end', () => {
  it('serves completions and streams through the gateway to the simulator, with metrics', async () => {
    const cm = await configMapDir(config());
    const gateway = await startGatewayOn(cm.path);
    try {
      const sdk = client(gateway);
      const completion = await sdk.chat.completions.create({
        model: 'chat',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 8,
      });
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
      const stream = await sdk.chat.completions.create({
        model: 'chat',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 8,
        stream: true,
      });
      let chunks = 0;
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) chunks++;
      expect(chunks).toBe(8);
      const models = await sdk.models.list();
      expect(models.data.map((m) => m.id)).toEqual(['chat', 'long']);
      const metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
      expect(metricValue(metrics, 'gateway_requests_total', { model: 'chat', status: '200' })).toBe(2);
    } finally {
      await gateway.program.kill();
    }
  });

  it('picks up a ConfigMap edit live in the same process, and keeps serving through an invalid one', async () => {
    const cm = await configMapDir(config());
    const gateway = await startGatewayOn(cm.path);
    try {
      const pid = gateway.program.proc.pid;
      await expect(
        client(gateway).chat.completions.create({
          model: 'added',
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ).rejects.toThrow(/404/);
      await cm.update(config({ added: { url: `${fast.baseUrl}/v1`, gateway_model: 'zero' } }));
      await gateway.program.waitForLog((l) => l.msg === 'configuration reloaded');
      const added = await client(gateway).chat.completions.create({
        model: 'added',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 2,
      });
      expect(added.choices).toHaveLength(1);

      await cm.update('targets: { broken: { url: 42 } }\n');
      await gateway.program.waitForLog((l) => l.msg?.startsWith('configuration reload rejected') ?? false);
      const still = await client(gateway).chat.completions.create({
        model: 'added',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 2,
      });
      expect(still.choices).toHaveLength(1);
      expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200);
      expect(gateway.program.proc.pid).toBe(pid);
      expect(gateway.program.proc.exitCode).toBeNull();
    } finally {
      await gateway.program.kill();
    }
  });

  it('replaces a gateway under load (readiness-driven routing) without dropping a request or a stream', async () => {
    const cm = await configMapDir(config());
    const old = await startGatewayOn(cm.path, ['--shutdown-delay-secs', '1']);
    const replicas: Gateway[] = [old];
    let ready: Gateway[] = [old];
    // An endpoints controller: route only to replicas whose /readyz answers 200.
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const states = await Promise.all(
          replicas.map(async (r) => {
            try {
              return (await fetch(`${r.adminUrl}/readyz`)).status === 200;
            } catch {
              return false;
            }
          }),
        );
        ready = replicas.filter((_, i) => states[i]);
        await sleep(50);
      }
    })();

    const outcomes = { ok: 0, failed: 0, streams: 0, streamsComplete: 0 };
    const failures: string[] = [];
    // The load runs until shortly after the old replica was told to stop (set below), whatever
    // the machine's speed: a slow start of the new replica must not end the load before it serves.
    let loadUntil = Date.now() + 60_000;
    const worker = async (n: number): Promise<void> => {
      for (let i = 0; Date.now() < loadUntil; i++) {
        const target = ready[(n + i) % Math.max(ready.length, 1)];
        if (!target) {
          await sleep(10);
          continue;
        }
        const streaming = i % 2 === 0;
        try {
          const response = await fetch(`${target.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'chat',
              messages: [{ role: 'user', content: 'hi' }],
              max_tokens: 5,
              stream: streaming,
            }),
          });
          const text = await response.text();
          if (response.status !== 200) throw new Error(`status ${response.status}: ${text}`);
          if (streaming) {
            outcomes.streams++;
            if (text.trimEnd().endsWith('data: [DONE]')) outcomes.streamsComplete++;
          }
          outcomes.ok++;
        } catch (error) {
          outcomes.failed++;
          failures.push(String(error));
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, n) => worker(n)));
    try {
      await sleep(800);
      const next = await startGatewayOn(cm.path, ['--shutdown-delay-secs', '1']);
      replicas.push(next);
      const routedBy = Date.now() + 20_000;
      while (!ready.includes(next) && Date.now() < routedBy) await sleep(20);
      expect(ready).toContain(next);
      await sleep(300);
      old.program.proc.kill('SIGTERM');
      // The old replica's shutdown delay (1 s) and its drain, with the new one taking the traffic.
      loadUntil = Date.now() + 2_500;
      await load;

      expect(failures).toEqual([]);
      expect(outcomes.ok).toBeGreaterThan(100);
      expect(outcomes.streamsComplete).toBe(outcomes.streams);
      expect((await old.program.exited).code).toBe(0);
      const served = await (await fetch(`${next.adminUrl}/metrics`)).text();
      expect(metricValue(served, 'gateway_requests_total', { model: 'chat', status: '200' })).toBeGreaterThan(
        0,
      );
    } finally {
      loadUntil = 0;
      watching = false;
      await Promise.all([load, watcher]);
      await Promise.all(replicas.map((r) => r.program.kill()));
    }
  });

  it('lets a long stream finish after SIGTERM and exits 0', async () => {
    const cm = await configMapDir(config());
    const gateway = await startGatewayOn(cm.path, ['--shutdown-delay-secs', '0']);
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'long',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 40,
        stream: true,
      }),
    });
    expect(response.status).toBe(200);
    const body = response.text();
    await sleep(300);
    gateway.program.proc.kill('SIGTERM');
    const text = await body;
    expect(text.match(/"content":"[^"]+"/g)?.length).toBe(40);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect((await gateway.program.exited).code).toBe(0);
  });

  it('surfaces simulator faults as the spec says: a cut stream is an error, never a clean end', async () => {
    const cm = await configMapDir(config());
    const gateway = await startGatewayOn(cm.path);
    try {
      const cut = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-fault': 'cut_between_frames;after_chunks=2' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      });
      expect(cut.status).toBe(200);
      await expect(cut.text()).rejects.toThrow();

      const sdkStream = await client(gateway).chat.completions.create(
        { model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream: true },
        { headers: { 'x-sim-fault': 'reset;after_chunks=1' } },
      );
      await expect(
        (async () => {
          for await (const _ of sdkStream) void _;
        })(),
      ).rejects.toThrow();

      const noDone = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-fault': 'no_done' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      });
      // Without its [DONE] the stream is cut after the simulator's last byte, never ended cleanly.
      const reader = noDone.body!.getReader();
      let text = '';
      let broken = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += Buffer.from(value).toString('utf8');
        }
      } catch {
        broken = true;
      }
      expect(text).toContain('finish_reason');
      expect(text).not.toContain('[DONE]');
      expect(broken).toBe(true);
    } finally {
      await gateway.program.kill();
    }
  });
});
