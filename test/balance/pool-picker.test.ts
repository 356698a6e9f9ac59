import { describe, expect, it } from 'vitest';
import { affinityKey } from '../../src/gateway/balance/affinity-key.js';
import {
  PickerMetrics,
  PickerRegistry,
  PoolPicker,
  type AffinitySettings,
} from '../../src/gateway/balance/pool-picker.js';
import { Registry } from '../../src/gateway/telemetry/prom-client.js';
import { scripted, seeded } from './helpers.js';

const MEMBERS = ['a', 'b', 'c', 'd'];
const SETTINGS: AffinitySettings = { loadBound: 1.25, tableEntries: 1000, blockChars: 32, maxBlocks: 64 };

function picker(strategy: 'round_robin' | 'least_request' | 'prefix_affinity', settings = SETTINGS) {
  const registry = new Registry();
  const metrics = new PickerMetrics(registry, 'gateway');
  const pool = new PoolPicker(
    'm',
    'm',
    strategy,
    MEMBERS,
    strategy === 'prefix_affinity' ? settings : undefined,
    metrics,
  );
  metrics.pools.add(pool);
  return { pool, registry };
}

const noInput = { json: undefined, sessionHeader: undefined };
const chat = (system: string, ...turns: string[]) => ({
  json: {
    messages: [
      { role: 'system', content: system },
      ...turns.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content })),
    ],
  },
  sessionHeader: undefined,
});
const LONG_SYSTEM = 'You answer questions about the billing system of a large retailer. '.repeat(4);

describe('round_robin', () => {
  it('takes the providers in turn and fails over to the next ones', () => {
    const { pool } = picker('round_robin');
    const firsts = Array.from({ length: 8 }, () => pool.order(MEMBERS, noInput, Math.random)[0]);
    expect(firsts).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']);
    expect(pool.order(MEMBERS, noInput, Math.random)).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('least_request', () => {
  it('of two providers drawn at random, sends to the one with fewer attempts in flight', () => {
    const { pool } = picker('least_request');
    for (let i = 0; i < 3; i++) pool.started(1); // b busy
    // Draws: a position 1 (b), then position 0 of the three others (a).
    expect(pool.order(MEMBERS, noInput, scripted([0.3, 0.1]))[0]).toBe('a');
    pool.ended(1);
    pool.ended(1);
    pool.ended(1);
    for (let i = 0; i < 2; i++) pool.started(0); // now a busy
    expect(pool.order(MEMBERS, noInput, scripted([0.3, 0.1]))[0]).toBe('b');
  });

  it('spreads a steady load evenly where random picking does not', () => {
    const { pool } = picker('least_request');
    const random = seeded(7);
    const open: string[] = [];
    // Each request holds its provider for 8 picks: in-flight counts stay close.
    for (let i = 0; i < 400; i++) {
      const chosen = pool.order(MEMBERS, noInput, random)[0]!;
      pool.started(MEMBERS.indexOf(chosen));
      open.push(chosen);
      if (open.length > 8) pool.ended(MEMBERS.indexOf(open.shift()!));
    }
    const loads = MEMBERS.map((_, i) => pool.inflightOf(i));
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(2);
  });
});

describe('prefix_affinity', () => {
  it('keeps a conversation on the provider that served its earlier turns', () => {
    const { pool } = picker('prefix_affinity');
    const first = pool.order(
      MEMBERS,
      chat(LONG_SYSTEM, 'How do refunds work for orders paid by card?'),
      Math.random,
    )[0];
    const second = pool.order(
      MEMBERS,
      chat(
        LONG_SYSTEM,
        'How do refunds work for orders paid by card?',
        'They go back to the card.',
        'And for gift cards?',
      ),
      Math.random,
    )[0];
    expect(second).toBe(first);
  });

  it('sends a session key to the same provider, prompt_cache_key first, then user, then the header', () => {
    const { pool } = picker('prefix_affinity');
    const withKey = (json: Record<string, unknown>, header?: string) => ({ json, sessionHeader: header });
    const a = pool.order(
      MEMBERS,
      withKey({ prompt_cache_key: 'team-7', user: 'u1', messages: [] }),
      Math.random,
    )[0];
    for (let i = 0; i < 5; i++)
      expect(
        pool.order(
          MEMBERS,
          withKey({ prompt_cache_key: 'team-7', messages: [{ role: 'user', content: String(i) }] }),
          Math.random,
        )[0],
      ).toBe(a);
    expect(affinityKey({ user: 'u1' }, 'h', 32, 4).sessionSource).toBe('user');
    expect(affinityKey({}, 'h', 32, 4).sessionSource).toBe('header');
    expect(affinityKey({ prompt_cache_key: 'k', user: 'u' }, 'h', 32, 4).sessionSource).toBe(
      'prompt_cache_key',
    );
  });

  it('spills a hot prefix to the next provider once its provider is over the load bound', () => {
    const { pool, registry } = picker('prefix_affinity');
    const input = chat(LONG_SYSTEM, 'the same question, over and over');
    const home = MEMBERS.indexOf(pool.order(MEMBERS, input, Math.random)[0]!);
    pool.started(home);
    const chosen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const pick = pool.order(MEMBERS, input, Math.random)[0]!;
      pool.started(MEMBERS.indexOf(pick));
      chosen.push(pick);
    }
    // With 1.25 x the average, no provider holds more than ceil(1.25 x 9 / 4) = 3 of 9.
    const loads = MEMBERS.map((_, i) => pool.inflightOf(i));
    expect(Math.max(...loads)).toBeLessThanOrEqual(3);
    expect(new Set(chosen).size).toBeGreaterThan(1);
    return registry.metrics().then((text) => {
      expect(text).toMatch(/gateway_pool_picks_total\{model="m",pool="m",reason="spill"\} [1-9]/);
      expect(text).toMatch(/gateway_pool_picks_total\{model="m",pool="m",reason="affinity"\} [1-9]/);
    });
  });

  it('spreads new conversations of different tenants over the ring, and forgets the least recently used', () => {
    const { pool } = picker('prefix_affinity', { ...SETTINGS, tableEntries: 10 });
    const firsts = new Set<string>();
    for (let tenant = 0; tenant < 40; tenant++)
      firsts.add(pool.order(MEMBERS, chat(`tenant ${tenant}: ${LONG_SYSTEM}`, 'hello'), Math.random)[0]!);
    expect(firsts.size).toBe(4);
    expect(pool.affinityEntries).toBe(10);
  });

  it('spreads conversations whose prompts differ in one character evenly, wherever that character is', () => {
    // Each character feeds one of the hasher's lanes: a difference in any position must move the
    // whole hash, or prompts that differ late (an id) would crowd one arc of the ring.
    for (const at of [0, 1, 2, 3]) {
      const { pool } = picker('prefix_affinity', { ...SETTINGS, blockChars: 256 });
      const counts = new Map<string, number>();
      for (let id = 0; id < 400; id++) {
        const system = `${'x'.repeat(40 + at)}${String(id).padStart(3, '0')} ${LONG_SYSTEM}`;
        const first = pool.order(MEMBERS, chat(system, 'hello'), Math.random)[0]!;
        counts.set(first, (counts.get(first) ?? 0) + 1);
      }
      for (const member of MEMBERS) expect(counts.get(member) ?? 0).toBeGreaterThan(50);
    }
  });

  it('hashes only full blocks, and at most max_blocks of them', () => {
    const key = affinityKey({ messages: [{ role: 'user', content: 'x'.repeat(100) }] }, undefined, 32, 2);
    // "user" + 100 characters = 104: three full blocks of 32, cut at two.
    expect(key.blocks).toHaveLength(2);
    expect(affinityKey({ messages: [{ role: 'user', content: 'short' }] }, undefined, 32, 8).blocks).toEqual(
      [],
    );
  });
});

describe('PickerRegistry: members that come and go', () => {
  const compile = (registry: PickerRegistry, members: string[]): PoolPicker => {
    registry.begin();
    const pool = registry.pool('m', 'm', 'prefix_affinity', members, SETTINGS);
    registry.commit();
    return pool;
  };

  it('keeps the conversations of the members that stay, and their in-flight counts', () => {
    const registry = new PickerRegistry(new PickerMetrics(new Registry(), 'gateway'));
    const three = compile(registry, ['a', 'b', 'c']);
    const homes = new Map<number, string>();
    for (let tenant = 0; tenant < 30; tenant++)
      homes.set(
        tenant,
        three.order(['a', 'b', 'c'], chat(`tenant ${tenant}: ${LONG_SYSTEM}`, 'hello'), Math.random)[0]!,
      );
    three.started(0);
    three.started(0);

    // d joins: every conversation whose member stayed goes where it went before.
    const four = compile(registry, ['a', 'b', 'c', 'd']);
    expect(four).not.toBe(three);
    expect(four.inflightOf(0)).toBe(2);
    // The attempts started on the old table end there: the count is shared.
    three.ended(0);
    expect(four.inflightOf(0)).toBe(1);
    three.ended(0);
    for (const [tenant, home] of homes) {
      const turn = chat(`tenant ${tenant}: ${LONG_SYSTEM}`, 'hello', 'hi there, how can I help?', 'more');
      expect(four.order(['a', 'b', 'c', 'd'], turn, Math.random)[0]).toBe(home);
    }

    // b leaves: its conversations go elsewhere, the others stay.
    const without = compile(registry, ['a', 'c', 'd']);
    for (const [tenant, home] of homes) {
      const turn = chat(`tenant ${tenant}: ${LONG_SYSTEM}`, 'hello', 'hi there, how can I help?', 'more');
      const now = without.order(['a', 'c', 'd'], turn, Math.random)[0];
      if (home === 'b') expect(now).not.toBe('b');
      else expect(now).toBe(home);
    }
    // The same members again: the same picker.
    expect(compile(registry, ['a', 'c', 'd'])).toBe(without);
  });
});
