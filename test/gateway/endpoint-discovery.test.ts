/**
 * Endpoint discovery (`service:` provider entries) through a real gateway process and an API server
 * on loopback (test/helpers/kube-api.ts) whose EndpointSlices name "pods" that are upstreams on
 * 127.0.0.1-4 with one port: members that spread the load, a pod picked soon after it is ready, a
 * terminating pod that finishes its stream and gets nothing new, the API server gone (the last
 * endpoints keep serving), a 410 relist, a Service with no ready pod, no credentials. The same on a
 * real cluster: e2e/k8s/endpoint-discovery.k8s.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { startFakeKubeApi, type FakeKubeApi, type SliceEndpoint } from '../helpers/kube-api.js';
import {
  chatChunkEvent,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { spawnProgram } from '../helpers/process.js';
import { until } from '../helpers/wait.js';

const NS = 'team';
const SERVICE = 'vllm';
const PODS = ['vllm-a', 'vllm-b', 'vllm-c', 'vllm-d'];

/** Streams six chunks `gapMs` apart, each naming the pod: a slow stream, to be in flight on purpose. */
const streamFrom =
  (pod: string, gapMs: number): UpstreamHandler =>
  async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 6; i++) {
      if (res.destroyed) return;
      res.write(chatChunkEvent(pod));
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    res.end('data: [DONE]\n\n');
  };

let pods: RecordingUpstream[] = [];
let port = 0;
let api: FakeKubeApi;
let gateway: StartedGateway | undefined;

beforeAll(async () => {
  const first = await startUpstream(streamFrom(PODS[0]!, 0));
  port = first.port;
  pods = [first];
  for (let i = 1; i < PODS.length; i++)
    pods.push(await startUpstream(streamFrom(PODS[i]!, 0), { host: `127.0.0.${i + 1}`, port }));
});
afterAll(async () => {
  await Promise.all(pods.map((pod) => pod.close()));
});
beforeEach(async () => {
  api = await startFakeKubeApi();
  for (const pod of pods) pod.requests.length = 0;
  pods.forEach((pod, i) => pod.respondWith(streamFrom(PODS[i]!, 0)));
});
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  await api.close();
});

const endpoint = (i: number, state: Partial<SliceEndpoint> = {}): SliceEndpoint => ({
  pod: PODS[i]!,
  address: `127.0.0.${i + 1}`,
  ...state,
});

const config = (strategy = 'round_robin', extra: Record<string, unknown> = {}) => ({
  targets: {
    llama: {
      strategy,
      providers: [{ name: 'vllm', service: { name: SERVICE, namespace: NS, port, path: '/v1' } }],
      ...extra,
    },
  },
});

async function start(cfg: unknown = config(), args: string[] = []): Promise<StartedGateway> {
  gateway = await startGateway(cfg, {
    args: ['--access-log', 'stdout', ...args],
    env: { KUBECONFIG: api.kubeconfig },
  });
  return gateway;
}

/** One streamed chat completion; resolves with its status and the pod named by its chunks. */
async function chat(gw: StartedGateway): Promise<{ status: number; pod: string | undefined; done: boolean }> {
  const response = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llama', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await response.text();
  const pod = /"content":"(vllm-[a-d])"/.exec(text)?.[1];
  return { status: response.status, pod, done: text.includes('data: [DONE]') };
}

const served = (i: number): number => pods[i]!.requests.length;

describe('endpoint discovery', () => {
  it('spreads over the ready pods, picks a new pod within 2 s, drains a terminating one', async () => {
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0), endpoint(1), endpoint(2)]);
    const gw = await start();
    for (let i = 0; i < 6; i++) expect((await chat(gw)).status).toBe(200);
    expect([served(0), served(1), served(2), served(3)]).toEqual([2, 2, 2, 0]);

    // Metrics count the entry, never a pod; the access log names the pod that served.
    const text = await gw.metrics();
    expect(
      metricValue(text, 'gateway_upstream_attempts_total', {
        pool: 'llama',
        provider: 'vllm',
        outcome: 'committed',
      }),
    ).toBe(6);
    expect(text).not.toMatch(/gateway_upstream_attempts_total\{[^}]*provider="vllm\/vllm-a"/);
    expect(
      metricValue(text, 'gateway_service_endpoints', { pool: 'llama', provider: 'vllm', state: 'ready' }),
    ).toBe(3);
    expect(metricValue(text, 'gateway_service_discovery_up', { namespace: NS, service: SERVICE })).toBe(1);
    expect(
      metricValue(text, 'gateway_pool_provider_inflight', { pool: 'llama', provider: 'vllm/vllm-a' }),
    ).toBe(0);
    // Access lines are written in batches: wait for the six.
    const accessLines = () => gw.program.logs.filter((l) => l.log === 'access');
    await until(() => accessLines().length >= 6, 5000);
    const access = accessLines().map((l) => l.provider);
    expect(new Set(access)).toEqual(new Set(['vllm/vllm-a', 'vllm/vllm-b', 'vllm/vllm-c']));

    // A fourth pod becomes ready: picked within 2 s.
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0), endpoint(1), endpoint(2), endpoint(3)]);
    const readyAt = Date.now();
    await until(
      async () => {
        await chat(gw);
        return served(3) > 0;
      },
      2000,
      0,
    );
    expect(Date.now() - readyAt).toBeLessThan(2000);
    expect(
      gw.program.logs.some(
        (l) => l.msg === 'pool members changed' && (l.added as string[]).includes('vllm/vllm-d'),
      ),
    ).toBe(true);

    // Every pod streams slowly; b's stream is in flight when b becomes terminating.
    pods.forEach((pod, i) => pod.respondWith(streamFrom(PODS[i]!, 150)));
    const before = served(1);
    const streams = [chat(gw), chat(gw), chat(gw), chat(gw)];
    await until(() => served(1) > before, 5000);
    api.applySlice(NS, SERVICE, 'vllm-1', port, [
      endpoint(0),
      endpoint(1, { terminating: true }),
      endpoint(2),
      endpoint(3),
    ]);
    await gw.program.waitForLog(
      (l) => l.msg === 'pool members changed' && (l.removed as string[]).includes('vllm/vllm-b'),
      5000,
    );
    const drained = served(1);
    pods.forEach((pod, i) => pod.respondWith(streamFrom(PODS[i]!, 0)));
    for (let i = 0; i < 9; i++) expect((await chat(gw)).status).toBe(200);
    expect(served(1)).toBe(drained);
    // The stream that was on b finished whole.
    const finished = await Promise.all(streams);
    expect(finished.every((s) => s.status === 200 && s.done)).toBe(true);
    expect(finished.map((s) => s.pod)).toContain('vllm-b');
    const after = await gw.metrics();
    expect(metricValue(after, 'gateway_service_endpoints', { pool: 'llama', state: 'ready' })).toBe(3);
    expect(metricValue(after, 'gateway_service_endpoints', { pool: 'llama', state: 'terminating' })).toBe(1);
  });

  it('keeps the last endpoints while the API server is gone, and follows changes once it is back', async () => {
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0), endpoint(1), endpoint(2)]);
    const gw = await start();
    expect((await chat(gw)).status).toBe(200);

    await api.stop();
    await gw.program.waitForLog(
      (l) => typeof l.msg === 'string' && l.msg.includes('cannot be reached'),
      10_000,
    );
    await until(
      async () => metricValue(await gw.metrics(), 'gateway_service_discovery_up', { service: SERVICE }) === 0,
      10_000,
    );
    for (let i = 0; i < 6; i++) expect((await chat(gw)).status).toBe(200);
    expect([served(0), served(1), served(2)].every((n) => n >= 2)).toBe(true);

    await api.start();
    await until(
      async () => metricValue(await gw.metrics(), 'gateway_service_discovery_up', { service: SERVICE }) === 1,
      15_000,
    );
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0), endpoint(1)]);
    await gw.program.waitForLog((l) => l.msg === 'pool members changed', 5000);
    const c = served(2);
    for (let i = 0; i < 4; i++) expect((await chat(gw)).status).toBe(200);
    expect(served(2)).toBe(c);
  });

  it('answers 503 while no pod is ready; follows a relist after 410 Gone; says when the API refuses', async () => {
    const gw = await start(config('least_request'));
    const empty = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(empty.status).toBe(503);
    expect(((await empty.json()) as { error: { code: string } }).error.code).toBe('no_ready_endpoints');

    // The watch's resourceVersion is compacted away: the gateway lists again and sees the pods.
    const lists = () => api.calls.filter((c) => c.verb === 'list-slices').length;
    const listedBefore = lists();
    api.compact();
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0, { ready: false }), endpoint(1)]);
    await until(async () => (await chat(gw)).status === 200, 10_000, 50);
    expect(lists()).toBeGreaterThan(listedBefore);
    expect(served(0)).toBe(0);
    const text = await gw.metrics();
    expect(metricValue(text, 'gateway_service_endpoints', { pool: 'llama', state: 'not_ready' })).toBe(1);

    api.refuse('watch-slices', 403);
    api.compact();
    api.refuse('list-slices', 403);
    await gw.program.waitForLog(
      (l) => typeof l.msg === 'string' && l.msg.includes('403 Forbidden') && l.msg.includes('endpointslices'),
      10_000,
    );
    expect((await chat(gw)).status).toBe(200);
  });

  it('follows the Services the configuration names: a reload that drops them stops their watches and series', async () => {
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0)]);
    api.applySlice(NS, 'other', 'other-1', port, [endpoint(1)]);
    const both = config();
    (both.targets.llama.providers as unknown[]).push({
      name: 'other',
      service: { name: 'other', namespace: NS, port, path: '/v1' },
    });
    const gw = await start(both);
    expect(new Set([(await chat(gw)).pod, (await chat(gw)).pod])).toEqual(new Set(['vllm-a', 'vllm-b']));
    await until(() => api.openWatches() === 2, 5000);

    // A reload without the service entries: their watches close, their series go, the pool serves
    // its URL.
    await gw.writeConfig({ targets: { llama: { url: `${pods[2]!.url}/v1` } } });
    await gw.waitForReloads(1);
    await until(() => api.openWatches() === 0, 5000);
    const text = await gw.metrics();
    expect(text).not.toContain('gateway_service_discovery_up{');
    expect(text).not.toContain('gateway_service_endpoints{');
    expect((await chat(gw)).pod).toBe('vllm-c');
  });

  it('gives up a watch the API server never answers, and follows the slices once it does', async () => {
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(0)]);
    const gw = await start();
    expect((await chat(gw)).pod).toBe('vllm-a');
    const watches = () => api.calls.filter((c) => c.verb === 'watch-slices').length;
    // The running watch ends; the next one is accepted and never answered.
    api.hang('watch-slices', true);
    api.compact();
    const hungAt = watches();
    await until(() => watches() > hungAt, 5000);
    const firstHung = watches();
    api.applySlice(NS, SERVICE, 'vllm-1', port, [endpoint(1)]);
    api.hang('watch-slices', false);
    // Given up at its 10 s connect deadline (not at the idle limit, 90 s or more): then a watch
    // that answers brings the change.
    const since = Date.now();
    await until(async () => (await chat(gw)).pod === 'vllm-b', 20_000, 200);
    expect(watches()).toBeGreaterThan(firstHung);
    expect(Date.now() - since).toBeLessThan(20_000);
  }, 40_000);

  it('without Kubernetes credentials, refuses to start and names the entry', async () => {
    const home = mkdtempSync(join(tmpdir(), 'no-kube-'));
    const file = join(home, 'config.json');
    writeFileSync(file, JSON.stringify(config()));
    const program = spawnProgram('gateway', ['--targets', file, '--port', '0', '--metrics-port', '0'], {
      env: { KUBECONFIG: '', HOME: home, KUBERNETES_SERVICE_HOST: '', KUBERNETES_SERVICE_PORT: '' },
    });
    const exit = await program.exited;
    expect(exit.code).toBe(2);
    expect(program.text()).toContain('$.targets["llama"].providers[0].service: endpoint discovery');
    expect(program.text()).toContain('no Kubernetes credentials');
  });
});
