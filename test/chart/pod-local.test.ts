/**
 * The simulator scenario's pod, run on loopback without Kubernetes: the simulator and the gateway
 * are started with exactly the command lines the chart renders (paths mapped to a scratch directory
 * holding the rendered ConfigMaps, as the kubelet would mount them), and the `helm test` hook's
 * script runs against them. This proves the rendered flags, configuration and model files work
 * with the real programs, and that the test hook's checks pass against a healthy pod.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnProgram, type RunningProgram } from '../helpers/process.js';
import { ciCases, findObject, render, type K8sObject } from './helm.ts';

interface Container {
  name: string;
  command?: string[];
  args: string[];
}
interface PodSpec {
  initContainers: Container[];
  containers: Container[];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const waitForOk = async (url: string, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

let scratch = '';
let objects: K8sObject[] = [];
let sim: RunningProgram | undefined;
let gateway: RunningProgram | undefined;
const ports = { sim: 0, proxy: 0, admin: 0 };

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'gateway-pod-'));
  ports.sim = await freePort();
  ports.proxy = await freePort();
  ports.admin = await freePort();
  objects = render({
    valuesFiles: [ciCases().find((c) => c.name === 'simulator')!.file],
    setJson: {
      simulator: { sidecar: { port: ports.sim } },
      gateway: { port: ports.proxy, adminPort: ports.admin, shutdownDelaySecs: 1 },
    },
  });
  // The volumes, as the kubelet would mount them.
  const configDir = join(scratch, 'etc/gateway');
  const modelsDir = join(scratch, 'etc/sim/models');
  mkdirSync(configDir, { recursive: true });
  mkdirSync(modelsDir, { recursive: true });
  for (const [key, text] of Object.entries(
    findObject(objects, 'ConfigMap', 'gateway')!.data as Record<string, string>,
  ))
    writeFileSync(join(configDir, key), text);
  for (const [key, text] of Object.entries(
    findObject(objects, 'ConfigMap', 'gateway-sim-models')!.data as Record<string, string>,
  ))
    writeFileSync(join(modelsDir, key), text);
  const mapPaths = (arg: string): string => arg.replace('=/etc/', `=${scratch}/etc/`);

  const spec = (findObject(objects, 'Deployment')!.spec as { template: { spec: PodSpec } }).template.spec;
  const sidecar = spec.initContainers.find((c) => c.name === 'simulator')!;
  expect(sidecar.command).toEqual(['/nodejs/bin/node', '/app/bin/sim.js', 'serve']);
  sim = spawnProgram('sim', ['serve', ...sidecar.args.map(mapPaths)]);
  await waitForOk(`http://127.0.0.1:${ports.sim}/health`);

  const container = spec.containers.find((c) => c.name === 'gateway')!;
  expect(container.command).toBeUndefined(); // the image entrypoint: node /app/bin/gateway.js
  gateway = spawnProgram('gateway', container.args.map(mapPaths));
  await waitForOk(`http://127.0.0.1:${ports.admin}/readyz`);
}, 60_000);

afterAll(async () => {
  await gateway?.kill();
  await sim?.kill();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the rendered pod on loopback', () => {
  it('serves every alias the chart wired, through the simulator', async () => {
    for (const model of ['fast', 'slow']) {
      const res = await fetch(`http://127.0.0.1:${ports.proxy}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
      });
      expect(res.status, model).toBe(200);
      expect(((await res.json()) as { choices: unknown[] }).choices.length).toBeGreaterThan(0);
    }
  });

  it('applies the faulty model file: its streams are cut after the configured chunks', async () => {
    const res = await fetch(`http://127.0.0.1:${ports.proxy}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'faulty', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text().catch((error: unknown) => `transport error: ${String(error)}`);
    expect(text).not.toContain('[DONE]');
  });

  it("passes the helm test hook's checks", () => {
    const pod = findObject(objects, 'Pod')!;
    const script = (pod.spec as { containers: { args: string[] }[] }).containers[0]!.args[0]!.replace(
      'http://gateway-admin.llm-gateway.svc:9090',
      `http://127.0.0.1:${ports.admin}`,
    ).replaceAll('http://gateway.llm-gateway.svc:80', `http://127.0.0.1:${ports.proxy}`);
    const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('ok: readiness (200)');
    expect(result.stdout).toContain('ok: model list (200)');
    expect(result.stdout).toContain('ok: completion through the simulator (200)');
  });

  it('drains and exits 0 on SIGTERM, well inside the rendered termination budget', async () => {
    const budget = (
      findObject(objects, 'Deployment')!.spec as {
        template: { spec: { terminationGracePeriodSeconds: number } };
      }
    ).template.spec.terminationGracePeriodSeconds;
    const started = Date.now();
    gateway!.proc.kill('SIGTERM');
    const { code } = await gateway!.exited;
    expect(code).toBe(0);
    expect((Date.now() - started) / 1000).toBeLessThan(budget);
  }, 30_000);
});
