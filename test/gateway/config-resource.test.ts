/**
 * Resource mode (`--config-resource NAMESPACE/NAME`) through a real gateway process against an API
 * server on loopback (test/helpers/kube-api.ts): loading and reloading generations, the status each
 * replica writes, and the faults that must never cost a request (the API server gone, a refused
 * verb, 410 Gone, the object deleted, a generation only the process refuses, nothing to load at
 * start). The same on a real cluster: e2e/k8s/config-resource.k8s.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metricValue, spawnGatewayFrom, type SpawnedGateway } from '../helpers/gateway.js';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { spawnProgram, type RunningProgram } from '../helpers/process.js';
import { jsonReply, sseReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

const NS = 'team';
const NAME = 'main';

let upstream: RecordingUpstream;
let api: FakeKubeApi;
const running: RunningProgram[] = [];

beforeAll(async () => {
  upstream = await startUpstream(jsonReply(200, { id: 'ok', object: 'chat.completion', choices: [] }));
});
afterAll(async () => {
  await upstream.close();
});
beforeEach(async () => {
  api = await startFakeKubeApi();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await api.close();
});

interface ResourceGateway extends SpawnedGateway {
  metrics: () => Promise<string>;
}

async function startResourceGateway(
  pod = 'gateway-0',
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ResourceGateway> {
  const gateway = await spawnGatewayFrom(
    ['--config-resource', `${NS}/${NAME}`],
    ['--access-log', 'off', ...args],
    {
      KUBECONFIG: api.kubeconfig,
      GATEWAY_POD_NAME: pod,
      ...env,
    },
  );
  running.push(gateway.program);
  return { ...gateway, metrics: async () => (await fetch(`${gateway.adminUrl}/metrics`)).text() };
}

const targets = (...aliases: string[]): unknown => ({
  targets: Object.fromEntries(aliases.map((alias) => [alias, { url: upstream.url }])),
});

async function statusOf(gateway: ResourceGateway, alias: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: alias, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

const ready = async (gateway: ResourceGateway): Promise<boolean> =>
  (await fetch(`${gateway.adminUrl}/readyz`)).status === 200;

const sourceUp = async (gateway: ResourceGateway): Promise<number | undefined> =>
  metricValue(await gateway.metrics(), 'gateway_config_source_up');

/** This replica's entry in the object's status, once it says `check`. */
async function entryOf(pod: string, check: (entry: Record<string, unknown>) => boolean, timeoutMs = 10_000) {
  let found: Record<string, unknown> | undefined;
  await until(
    () => {
      const entries = (api.get(NS, NAME)?.status?.replicas ?? []) as Record<string, unknown>[];
      found = entries.find((entry) => entry.pod === pod);
      return found !== undefined && check(found);
    },
    timeoutMs,
    50,
  );
  return found!;
}

describe('resource mode', () => {
  it('serves each generation of the object and reports it in the status', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await sourceUp(gateway)).toBe(1);
    const first = await entryOf('gateway-0', (e) => e.servedGeneration === 1);
    expect(first).toMatchObject({ observedGeneration: 1, accepted: true });
    // The Lease holder (the only replica) writes the object-wide conditions.
    await until(() => api.get(NS, NAME)?.status?.serving === '1/1', 15_000, 50);
    const conditions = api.get(NS, NAME)?.status?.conditions as {
      type: string;
      status: string;
      message: string;
    }[];
    expect(conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True' });
    expect(conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      message: '1 of 1 replicas serve generation 1',
    });

    api.apply(NS, NAME, targets('a', 'b'));
    await until(async () => (await statusOf(gateway, 'b')) === 200, 5_000, 20);
    await entryOf('gateway-0', (e) => e.servedGeneration === 2);
    const loaded = gateway.program.logs.find((l) => l.msg === 'configuration reloaded');
    expect(loaded).toMatchObject({ resource: `${NS}/${NAME}`, generation: 2 });
    // Each replica writes its entry under a field manager of its own, by server-side apply.
    const applies = api.calls.filter(
      (c) => c.verb === 'patch-status' && c.contentType === 'application/apply-patch+yaml',
    );
    expect(applies.some((c) => c.fieldManager === 'llm-gateway/gateway-0')).toBe(true);
  });

  it('keeps the last good configuration when the process refuses a generation, says why in the status, and applies it once its key file appears', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await entryOf('gateway-0', (e) => e.servedGeneration === 1);
    // A rule the API server cannot check: a key file that does not exist (yet: a key Secret's
    // volume is synced by the kubelet later than the object reaches the gateway).
    const keyFile = join(mkdtempSync(join(tmpdir(), 'gateway-resource-keys-')), 'provider-b');
    api.apply(NS, NAME, {
      targets: {
        a: { url: upstream.url },
        b: { url: upstream.url, gateway_key: { from_file: keyFile } },
      },
    });
    const refused = await entryOf('gateway-0', (e) => e.observedGeneration === 2);
    expect(refused).toMatchObject({ accepted: false, servedGeneration: 1 });
    expect(String(refused.message)).toContain('spec.targets.b.gateway_key');
    expect(String(refused.message)).toContain(keyFile);
    expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await statusOf(gateway, 'b')).toBe(404);
    expect(await ready(gateway)).toBe(true);
    expect(metricValue(await gateway.metrics(), 'gateway_config_last_reload_successful')).toBe(0);
    await until(
      () =>
        (api.get(NS, NAME)?.status?.conditions as { type: string; status: string }[] | undefined)?.some(
          (c) => c.type === 'Accepted' && c.status === 'False',
        ) === true,
      15_000,
      50,
    );
    // The file appears: the same generation is applied, with no new object.
    writeFileSync(keyFile, 'sk-provider-b\n');
    expect(await entryOf('gateway-0', (e) => e.servedGeneration === 2)).toMatchObject({ accepted: true });
    expect(await statusOf(gateway, 'b')).toBe(200);
  });

  it('is not ready while there is nothing to load, says why every 10 s, and is ready once a valid object appears', async () => {
    const gateway = await startResourceGateway();
    const readyz = await fetch(`${gateway.adminUrl}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toContain('no configuration loaded yet');
    const early = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(early.status).toBe(503);
    expect(((await early.json()) as { error: { code: string } }).error.code).toBe(
      'configuration_unavailable',
    );
    const why = await gateway.program.waitForLog(
      (l) => l.msg === 'not ready: no configuration loaded yet',
      15_000,
    );
    expect(why.reason).toBe(`gatewayconfig ${NS}/${NAME} does not exist`);
    expect(await sourceUp(gateway)).toBe(0);
    // ...and again 10 s later, for as long as nothing loads.
    const again = await gateway.program.waitForLog(
      (l) => l.msg === 'not ready: no configuration loaded yet' && l !== why,
      12_000,
    );
    const gapMs = Date.parse(String(again.time)) - Date.parse(String(why.time));
    expect(gapMs).toBeGreaterThanOrEqual(9_500);
    expect(gapMs).toBeLessThanOrEqual(11_000);

    // An invalid first object keeps it unready, and the reason says so.
    api.apply(NS, NAME, {
      targets: { a: { url: upstream.url, gateway_key: { from_env: 'UNSET_KEY_VARIABLE' } } },
    });
    await entryOf('gateway-0', (e) => e.accepted === false);
    expect(await ready(gateway)).toBe(false);

    api.apply(NS, NAME, targets('a'));
    await until(() => ready(gateway), 5_000, 20);
    expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await sourceUp(gateway)).toBe(1);
  }, 60_000);

  it('keeps serving while the API server is gone, and picks up the edit made meanwhile once it is back', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    await api.stop();
    await until(async () => (await sourceUp(gateway)) === 0, 10_000, 50);
    const warned = await gateway.program.waitForLog(
      (l) => l.level === 'warn' && String(l.msg).includes('cannot be reached'),
    );
    // Whichever call finds it first (the watch, or a lease renewal falling due) names itself.
    expect(['watch', 'list', 'update', 'patch']).toContain(warned.verb);
    expect(String(warned.apiResource)).toMatch(/gatewayconfigs|leases/);
    for (let i = 0; i < 20; i++) expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await ready(gateway)).toBe(true);
    // Once per state change: the retries of every call while it stays down log nothing more.
    await sleep(3000);
    const unreachable = gateway.program.logs.filter((l) => String(l.msg).includes('cannot be reached'));
    expect(unreachable).toHaveLength(1);

    api.apply(NS, NAME, targets('a', 'edited-while-down'));
    await api.start();
    await until(async () => (await statusOf(gateway, 'edited-while-down')) === 200, 20_000, 100);
    expect(await sourceUp(gateway)).toBe(1);
  });

  it('names the verb and the resource when the API refuses it, and keeps serving', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    api.refuse('patch-status', 403);
    api.refuse('watch', 403);
    api.refuse('list', 403);
    // The running watch ends; its resume from the last resourceVersion is refused.
    api.compact();
    const line = await gateway.program.waitForLog(
      (l) => String(l.msg).includes('refused watch on gatewayconfigs.llm-gateway.dev'),
      15_000,
    );
    expect(line).toMatchObject({ status: 403, verb: 'watch' });
    expect(String(line.msg)).toContain('403 Forbidden');
    await gateway.program.waitForLog(
      (l) => String(l.msg).includes('refused patch on gatewayconfigs.llm-gateway.dev/status'),
      20_000,
    );
    expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await ready(gateway)).toBe(true);
    expect(await sourceUp(gateway)).toBe(0);

    for (const verb of ['list', 'watch', 'patch-status'] as const) api.refuse(verb, undefined);
    api.apply(NS, NAME, targets('a', 'after-rbac'));
    await until(async () => (await statusOf(gateway, 'after-rbac')) === 200, 20_000, 100);
    await gateway.program.waitForLog((l) =>
      String(l.msg).includes('answers watch on gatewayconfigs.llm-gateway.dev again'),
    );
  });

  it('lists again after 410 Gone and applies what changed meanwhile', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    const listsBefore = api.calls.filter((c) => c.verb === 'list').length;
    // The watch is cut; meanwhile the object changes and the history it would resume from is gone:
    // its resume gets 410, and only a new list can give the change.
    await api.stop();
    api.apply(NS, NAME, targets('a', 'after-compaction'));
    api.compact();
    await api.start();
    await until(async () => (await statusOf(gateway, 'after-compaction')) === 200, 20_000, 50);
    expect(api.calls.filter((c) => c.verb === 'list').length).toBe(listsBefore + 1);
    // A watch resumes from the last resourceVersion it saw.
    const watches = api.calls.filter((c) => c.verb === 'watch');
    expect(watches.at(-1)!.query.get('resourceVersion')).toMatch(/^\d+$/);
  });

  it('keeps serving when the object is deleted, and serves it again when it is created anew', async () => {
    api.apply(NS, NAME, targets('a'));
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    api.delete(NS, NAME);
    await gateway.program.waitForLog((l) =>
      String(l.msg).includes('does not exist; still serving the last good configuration'),
    );
    expect(await sourceUp(gateway)).toBe(0);
    expect(await statusOf(gateway, 'a')).toBe(200);
    expect(await ready(gateway)).toBe(true);
    api.apply(NS, NAME, targets('recreated'));
    await until(async () => (await statusOf(gateway, 'recreated')) === 200, 5_000, 20);
    expect(await statusOf(gateway, 'a')).toBe(404);
    expect(await sourceUp(gateway)).toBe(1);
  });

  it('applies a change as a file reload does: limiter state carried over, a running stream not cut', async () => {
    const limited = { url: upstream.url, rate_limit: { requests_per_second: 0.01, burst_size: 1 } };
    api.apply(NS, NAME, { targets: { limited } });
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    expect(await statusOf(gateway, 'limited')).toBe(200);
    expect(await statusOf(gateway, 'limited')).toBe(429);

    const stream = await startUpstream(
      sseReply(
        Array.from({ length: 20 }, (_, i) => ({ i })),
        50,
      ),
    );
    try {
      api.apply(NS, NAME, { targets: { limited, streamed: { url: stream.url } } });
      await until(async () => (await statusOf(gateway, 'streamed')) === 200, 5_000, 20);
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'streamed', stream: true, messages: [] }),
      });
      const reading = response.text();
      await sleep(200);
      api.apply(NS, NAME, {
        targets: { limited, streamed: { url: stream.url }, third: { url: upstream.url } },
      });
      const text = await reading;
      expect(text).toContain('"i":19');
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      // The bucket survived both reloads: still empty.
      expect(await statusOf(gateway, 'limited')).toBe(429);
    } finally {
      await stream.close();
    }
  });

  it('reloads when a key file the object references changes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-resource-keys-'));
    const keyFile = join(dir, 'team-a');
    writeFileSync(keyFile, 'sk-old\n');
    api.apply(NS, NAME, { targets: { a: { url: upstream.url, keys: [{ from_file: keyFile }] } } });
    const gateway = await startResourceGateway();
    await until(() => ready(gateway), 10_000, 50);
    const call = async (key: string): Promise<number> => {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'a', messages: [] }),
      });
      await response.arrayBuffer();
      return response.status;
    };
    expect(await call('sk-old')).toBe(200);
    writeFileSync(keyFile, 'sk-new\n');
    await until(async () => (await call('sk-new')) === 200, 10_000, 100);
    expect(await call('sk-old')).toBe(401);
  });

  it('hands the status over when the Lease holder is killed', async () => {
    api.apply(NS, NAME, targets('a'));
    const first = await startResourceGateway('gateway-0');
    await until(() => api.get(NS, NAME)?.status?.serving === '1/1', 20_000, 50);
    const second = await startResourceGateway('gateway-1');
    await until(() => api.get(NS, NAME)?.status?.serving === '2/2', 20_000, 50);
    // The first replica holds the Lease; killed outright, it neither withdraws nor releases anything.
    const lease = `gatewayconfig-${NAME}-status`;
    expect(api.leaseHolder(NS, lease)).toBe('gateway-0');
    first.program.proc.kill('SIGKILL');
    await first.program.exited;
    api.apply(NS, NAME, targets('a', 'b'));
    // Only a holder writes the object-wide fields: the second takes the Lease once it has expired.
    await until(
      () => {
        const status = api.get(NS, NAME)?.status as { observedGeneration?: number } | undefined;
        return status?.observedGeneration === 2;
      },
      40_000,
      100,
    );
    expect(api.leaseHolder(NS, lease)).toBe('gateway-1');
    expect(await statusOf(second, 'b')).toBe(200);
  });

  it('counts two replicas serving, and a replica that stops removes its entry', async () => {
    api.apply(NS, NAME, targets('a'));
    const first = await startResourceGateway('gateway-0');
    const second = await startResourceGateway('gateway-1');
    await until(() => api.get(NS, NAME)?.status?.serving === '2/2', 20_000, 50);
    // Only the Lease holder writes the object-wide fields.
    const summaryWriters = new Set(
      api.calls
        .filter((c) => c.verb === 'patch-status' && c.fieldManager === 'llm-gateway-status')
        .map((c) => c.fieldManager),
    );
    expect([...summaryWriters]).toEqual(['llm-gateway-status']);
    second.program.proc.kill('SIGTERM');
    await second.program.exited;
    await until(() => api.get(NS, NAME)?.status?.replicas?.length === 1, 5_000, 50);
    await until(() => api.get(NS, NAME)?.status?.serving === '1/1', 20_000, 50);
    expect(await statusOf(first, 'a')).toBe(200);
  });
});

describe('resource mode on the command line', () => {
  it('exits 2 when both a file and a resource are named, or without credentials', async () => {
    const both = spawnProgram('gateway', [
      '-f',
      'examples/quickstart/config.yaml',
      '--config-resource',
      'a/b',
    ]);
    expect((await both.exited).code).toBe(2);
    expect(both.text()).toContain('mutually exclusive');

    const malformed = spawnProgram('gateway', ['--config-resource', 'only-a-name']);
    expect((await malformed.exited).code).toBe(2);
    expect(malformed.text()).toContain('NAMESPACE/NAME');

    const noWatch = spawnProgram('gateway', ['--config-resource', 'a/b', '--watch', 'false']);
    expect((await noWatch.exited).code).toBe(2);
    expect(noWatch.text()).toContain('--watch false cannot be combined with --config-resource');

    // A kubeconfig the YAML parser refuses: the error names the place, never the lines (a token).
    const broken = join(mkdtempSync(join(tmpdir(), 'gateway-kubeconfig-')), 'config');
    writeFileSync(broken, 'users:\n- name: u\n  user:\n    token: sk-secret-token-1234\n   bad: [\n');
    const unreadable = spawnProgram(
      'gateway',
      ['--config-resource', 'a/b', '--port', '0', '--metrics-port', '0'],
      {
        env: { KUBECONFIG: broken },
      },
    );
    expect((await unreadable.exited).code).toBe(2);
    expect(unreadable.text()).toContain('not valid YAML (line 5');
    expect(JSON.stringify(unreadable.logs) + unreadable.text()).not.toContain('sk-secret-token-1234');

    const home = mkdtempSync(join(tmpdir(), 'gateway-home-'));
    const noCredentials = spawnProgram(
      'gateway',
      ['--config-resource', 'a/b', '--port', '0', '--metrics-port', '0'],
      {
        env: { HOME: home, KUBECONFIG: '' },
      },
    );
    expect((await noCredentials.exited).code).toBe(2);
    expect(noCredentials.text()).toContain('no Kubernetes credentials');
  });
});
