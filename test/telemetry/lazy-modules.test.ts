import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';

/**
 * Optional parts load only when configured: a gateway started without an OTLP endpoint and without
 * `--shared-state` never loads the OpenTelemetry SDK, the semantic conventions, ioredis or the
 * gateway's Redis store, nor Node's bundled undici (an ES import of `node:http` would); one
 * configured by a file never loads the Kubernetes client library nor resource mode. Each
 * costs resident memory in every process (docs/performance.md). The real program runs with a probe
 * (`node --import`) that lists every module it loaded when it exits.
 *
 * Nor, whatever is configured, the index modules of undici and prom-client (each loads far more than
 * the gateway uses; src/gateway/http/undici.ts, src/gateway/telemetry/prom-client.ts), nor
 * `@opentelemetry/api` (prom-client's own process CPU collector would), nor the YAML library while
 * the file is JSON.
 */
const PROBE = fileURLToPath(new URL('../fixtures/module-probe.mjs', import.meta.url));
const CONFIG = { targets: { m: { url: 'http://127.0.0.1:9' } } };

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function loadedBy(
  env: Record<string, string> = {},
  args: string[] = [],
): Promise<{ modules: string[]; builtins: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-modules-'));
  dirs.push(dir);
  const out = join(dir, 'modules.json');
  const gateway = await startGateway(CONFIG, {
    env: { ...env, MODULE_PROBE_OUT: out, NODE_OPTIONS: `--import ${PROBE}` },
    args,
  });
  // One request through the proxy, so modules loaded on first use are counted too.
  await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  // A clean exit (SIGTERM) runs the probe's exit handler; SIGKILL would not.
  gateway.program.proc.kill('SIGTERM');
  await gateway.program.exited;
  await gateway.stop();
  return JSON.parse(await readFile(out, 'utf8')) as { modules: string[]; builtins: string[] };
}

const optional = (modules: readonly string[]): string[] =>
  modules.filter(
    (url) =>
      url.includes('/node_modules/@opentelemetry/') ||
      url.includes('/node_modules/ioredis/') ||
      url.includes('/node_modules/yaml/') ||
      url.includes('/node_modules/@kubernetes/client-node/') ||
      url.includes('/gateway/kube/') ||
      /\/node_modules\/(undici|prom-client)\/index\.js$/.test(url) ||
      // The store and its client; the pure decision and URL helpers beside them load with the pipeline.
      /\/gateway\/limits\/redis\/(store|client)\.js$/.test(url),
  );

describe('modules a gateway loads', () => {
  it('without tracing or shared state, from a file: no OpenTelemetry, no Redis client, no YAML, no Kubernetes client, no package indexes, no bundled undici', async () => {
    const { modules, builtins } = await loadedBy({
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
    });
    // The probe saw the program: the gateway's own modules are on the list.
    expect(modules.some((url) => url.endsWith('/gateway/gateway.js'))).toBe(true);
    expect(modules.some((url) => url.endsWith('/node_modules/prom-client/lib/registry.js'))).toBe(true);
    expect(optional(modules)).toEqual([]);
    expect(builtins.filter((name) => name.includes('internal/deps/undici'))).toEqual([]);
  });

  it('with an OTLP endpoint the SDK loads (the probe sees dynamic imports)', async () => {
    const { modules } = await loadedBy({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(modules.some((url) => url.includes('/node_modules/@opentelemetry/sdk-node/'))).toBe(true);
  });
});
