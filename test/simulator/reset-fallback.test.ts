import type { Server } from 'node:http';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinModel } from '../../src/simulator/config/load.js';
import { Engine } from '../../src/simulator/engine/engine.js';
import { createSimServer } from '../../src/simulator/http/server.js';
import { SimMetrics } from '../../src/simulator/metrics/metrics.js';
import type { SimContext } from '../../src/simulator/runtime.js';
import { rawRequest, sseFrames } from './support.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `reset` needs a TCP handle. Served over a Unix domain socket (no TCP, so no RST is possible) the
 * same handler degrades to a FIN and says so in a warning, instead of failing.
 */
const warnings: Record<string, unknown>[] = [];
let server: Server;
let path: string;

beforeAll(async () => {
  const log = pino(
    { level: 'warn' },
    { write: (line: string) => warnings.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const config = {
    ...builtinModel(),
    latency: { prefill_ms: 0, prefill_per_token_ms: 0, decode_ms: 0, decode_per_seq_ms: 0 },
  };
  const metrics = new SimMetrics();
  const engine = new Engine(config.name, config.latency, 4, 0, metrics.observerFor(config.name));
  const runtime = { config, engine };
  const ctx: SimContext = {
    models: new Map([[config.name, runtime]]),
    defaultModel: runtime,
    enableDirectives: true,
    reasoningField: 'reasoning_content',
    metrics,
    log,
    startedAt: 0,
  };
  server = createSimServer(ctx);
  path = join(tempDir('sim-uds-'), 'sim.sock');
  await new Promise<void>((resolve) => server.listen(path, resolve));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('reset without a TCP handle', () => {
  it('degrades to a FIN after the partial output, with a warning log', async () => {
    const res = await rawRequest(path, {
      path: '/v1/chat/completions',
      headers: { 'x-sim-fault': 'reset;after_chunks=2;delay_ms=0' },
      body: { stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.ending).toBe('fin');
    expect(res.terminated).toBe(false);
    expect(sseFrames(res.payload).data).toHaveLength(3);
    expect(warnings.some((w) => String(w.msg).includes('closing with FIN'))).toBe(true);
  });
});
