/**
 * The load-aware strategies through a real gateway in front of three recording upstreams: each
 * upstream says which it is, so the test reads where every request went.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewaysPerTest, metricValue } from '../helpers/gateway.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

let upstreams: RecordingUpstream[];
const startGateway = gatewaysPerTest();

beforeAll(async () => {
  upstreams = await Promise.all(
    ['u0', 'u1', 'u2'].map((name) =>
      startUpstream((_req, res) => {
        const body = JSON.stringify({ id: name, object: 'chat.completion', choices: [] });
        res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
        res.end(body);
      }),
    ),
  );
});
afterAll(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
});

const pool = (strategy: string, extra: Record<string, unknown> = {}) => ({
  targets: {
    m: {
      strategy,
      providers: upstreams.map((u, i) => ({ name: `u${i}`, url: u.url })),
      ...extra,
    },
  },
});

async function servedBy(
  gateway: { url: string },
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<string> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', ...body }),
  });
  await response.arrayBuffer();
  expect(response.status).toBe(200);
  return response.headers.get('x-upstream')!;
}

const SYSTEM = 'You are the support assistant of a shop that sells bicycles and their parts. '.repeat(6);

describe('picking within a pool', () => {
  it('round_robin takes the providers in turn', async () => {
    const gateway = await startGateway(pool('round_robin'));
    const served = [];
    for (let i = 0; i < 6; i++)
      served.push(await servedBy(gateway, { messages: [{ role: 'user', content: 'hi' }] }));
    expect(served).toEqual(['u0', 'u1', 'u2', 'u0', 'u1', 'u2']);
    // Every attempt that started has ended: nothing is left counted in flight.
    const metrics = await gateway.metrics();
    for (const provider of ['u0', 'u1', 'u2'])
      expect(metricValue(metrics, 'gateway_pool_provider_inflight', { pool: 'm', provider })).toBe(0);
    expect(metricValue(metrics, 'gateway_pool_picks_total', { pool: 'm', reason: 'round_robin' })).toBe(6);
  });

  it('prefix_affinity keeps each conversation on one provider, turn after turn, and spreads conversations', async () => {
    const gateway = await startGateway(pool('prefix_affinity'));
    const homes = new Set<string>();
    for (let tenant = 0; tenant < 12; tenant++) {
      const history: { role: string; content: string }[] = [
        { role: 'system', content: `${tenant} ${SYSTEM}` },
      ];
      const served = new Set<string>();
      for (let turn = 0; turn < 5; turn++) {
        history.push({
          role: 'user',
          content: `question ${turn} of conversation ${tenant}, with some detail`,
        });
        served.add(await servedBy(gateway, { messages: history }));
        history.push({ role: 'assistant', content: `answer ${turn}` });
      }
      expect(served.size, `conversation ${tenant}`).toBe(1);
      homes.add([...served][0]!);
    }
    expect(homes.size).toBeGreaterThan(1);
    const metrics = await gateway.metrics();
    expect(metricValue(metrics, 'gateway_pool_picks_total', { pool: 'm', reason: 'affinity' })).toBe(48);
    expect(metricValue(metrics, 'gateway_pool_picks_total', { pool: 'm', reason: 'new' })).toBe(12);
    // One entry per conversation and per turn that completed a block of its content (at most one each).
    const entries = metricValue(metrics, 'gateway_pool_affinity_entries', { pool: 'm' })!;
    expect(entries).toBeGreaterThanOrEqual(12);
    expect(entries).toBeLessThanOrEqual(12 * 5);
  });

  it('prefix_affinity follows a session key across unrelated prompts', async () => {
    const gateway = await startGateway(pool('prefix_affinity'));
    const served = new Set<string>();
    for (let i = 0; i < 5; i++)
      served.add(
        await servedBy(
          gateway,
          { messages: [{ role: 'user', content: `topic ${i}` }] },
          { 'x-session-id': 'agent-42' },
        ),
      );
    expect(served.size).toBe(1);
  });

  it('refuses affinity settings on another strategy, naming the field', async () => {
    const { parseConfigText } = await import('../../src/gateway/config/load.js');
    const result = parseConfigText(
      JSON.stringify(pool('least_request', { affinity: { load_bound: 2 } })),
      'c.json',
    );
    expect(result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      '$.targets.m.affinity: `affinity` configures `strategy: prefix_affinity`; this pool uses `least_request`',
    ]);
  });
});
