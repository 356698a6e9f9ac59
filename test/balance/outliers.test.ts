import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  OutlierMetrics,
  OutlierRegistry,
  PoolOutliers,
  type OutlierSettings,
} from '../../src/gateway/balance/outliers.js';
import { createLogger } from '../../src/gateway/telemetry/logger.js';

/** Ejection bookkeeping of one pool: which answers count, and how many providers may be out. */

const SETTINGS: OutlierSettings = {
  consecutiveFailures: 3,
  baseEjectionMs: 60_000,
  maxEjectionMs: 60_000,
  maxEjectedPercent: 100,
};
const providers = (n: number) => Array.from({ length: n }, (_, index) => ({ index }));

let pools: PoolOutliers[] = [];
function pool(size: number, settings: Partial<OutlierSettings> = {}): PoolOutliers {
  const names = Array.from({ length: size }, (_, i) => ({ name: `p${i}`, url: `http://p${i}` }));
  const deps = {
    metrics: new OutlierMetrics(new Registry(), 'gateway'),
    logger: createLogger({ level: 'silent' }),
  };
  const created = new PoolOutliers('m', 'm', names, { ...SETTINGS, ...settings }, deps);
  created.activate();
  pools.push(created);
  return created;
}
afterEach(() => {
  for (const created of pools) created.stop();
  pools = [];
});

const selected = (outliers: PoolOutliers, size: number): number[] =>
  outliers.withoutEjected(providers(size)).map((p) => p.index);

describe('PoolOutliers', () => {
  it('ejects after consecutive failures only: a success in between starts the count again', () => {
    const outliers = pool(3);
    outliers.record(0, 'failure');
    outliers.record(0, 'failure');
    outliers.record(0, 'success');
    outliers.record(0, 'failure');
    outliers.record(0, 'failure');
    expect(selected(outliers, 3)).toEqual([0, 1, 2]);
    outliers.record(0, 'failure');
    expect(selected(outliers, 3)).toEqual([1, 2]);
  });

  it('a neutral answer (a 429, a client that left) neither counts nor clears', () => {
    const outliers = pool(2);
    outliers.record(1, 'failure');
    outliers.record(1, undefined);
    outliers.record(1, 'failure');
    outliers.record(1, undefined);
    outliers.record(1, 'failure');
    expect(selected(outliers, 2)).toEqual([0]);
  });

  it('ejects at most max_ejected_percent of the pool, rounded down, and never its last provider', () => {
    const half = pool(4, { consecutiveFailures: 1, maxEjectedPercent: 50 });
    for (let i = 0; i < 4; i++) half.record(i, 'failure');
    expect(selected(half, 4)).toEqual([2, 3]);

    const all = pool(2, { consecutiveFailures: 1, maxEjectedPercent: 100 });
    all.record(0, 'failure');
    all.record(1, 'failure');
    expect(selected(all, 2)).toEqual([1]);

    const small = pool(3, { consecutiveFailures: 1, maxEjectedPercent: 10 });
    small.record(0, 'failure');
    expect(selected(small, 3)).toEqual([0, 1, 2]);
  });

  it('once stopped (its pool left the configuration), answers change nothing', () => {
    const outliers = pool(2, { consecutiveFailures: 1 });
    outliers.stop();
    outliers.record(0, 'failure');
    expect(selected(outliers, 2)).toEqual([0, 1]);
  });

  it('with none ejected, selection hands back the order itself (no copy)', () => {
    const outliers = pool(2);
    const order = providers(2);
    expect(outliers.withoutEjected(order)).toBe(order);
  });
});

describe('OutlierRegistry: ejection state across reloads and members', () => {
  const registry = (metrics = new OutlierMetrics(new Registry(), 'gateway')) =>
    new OutlierRegistry({ metrics, logger: createLogger({ level: 'silent' }) });
  const at = (...names: string[]) => names.map((name) => ({ name, url: `http://${name}` }));
  const compile = (
    r: OutlierRegistry,
    members: { name: string; url: string; label?: string }[],
    settings = SETTINGS,
  ): PoolOutliers => {
    r.begin();
    const state = r.pool('m', 'pool', members, settings);
    r.commit();
    return state;
  };
  const eager = { ...SETTINGS, consecutiveFailures: 1 };

  it('keeps the state of an unchanged pool; a changed setting starts afresh, and the old state stops', () => {
    const r = registry();
    const first = compile(r, at('a', 'b'), eager);
    first.record(0, 'failure');
    expect(selected(first, 2)).toEqual([1]);
    expect(compile(r, at('a', 'b'), eager)).toBe(first);
    const changed = compile(r, at('a', 'b'), { ...eager, baseEjectionMs: 1000 });
    expect(selected(changed, 2)).toEqual([0, 1]);
    // The replaced state was stopped: answers from requests still on the old table change nothing.
    first.record(1, 'failure');
    expect(selected(first, 2)).toEqual([1]);
    expect(selected(changed, 2)).toEqual([0, 1]);
    r.stop();
  });

  it('when members come and go, the ones kept keep their records: an ejected pod stays ejected', () => {
    const metrics = new OutlierMetrics(new Registry(), 'gateway');
    const r = registry(metrics);
    const three = compile(r, at('a', 'b', 'c'), { ...eager, maxEjectedPercent: 50 });
    three.record(1, 'failure');
    expect(selected(three, 3)).toEqual([0, 2]);
    // A fourth pod joins: b (now at index 1 still) stays out; the new pod is in selection.
    const four = compile(r, at('a', 'b', 'c', 'd'), { ...eager, maxEjectedPercent: 50 });
    expect(four).not.toBe(three);
    expect(selected(four, 4)).toEqual([0, 2, 3]);
    // With four members, half may be out: a second ejection is allowed now.
    four.record(3, 'failure');
    expect(selected(four, 4)).toEqual([0, 2]);
    // An attempt still running on the old table reports on a pod both tables have: it counts.
    three.record(0, 'success');
    // b leaves while ejected: its place under the cap is free again, and its gauge series goes.
    const without = compile(r, at('a', 'c', 'd'), { ...eager, maxEjectedPercent: 50 });
    expect(selected(without, 3)).toEqual([0, 1]);
    without.record(0, 'failure');
    expect(selected(without, 3)).toEqual([0, 1]);
    const series = metrics.ejected.get() as unknown as Promise<{
      values: { labels: { provider: string } }[];
    }>;
    return series.then((gauge) => {
      expect(gauge.values.map((v) => v.labels.provider).sort()).toEqual(['a', 'c', 'd']);
      // Answers about the pod that left change nothing any more.
      three.record(1, 'success');
      r.stop();
    });
  });

  it("labels a pod's gauge by the pod and its ejection count by its entry", async () => {
    const metrics = new OutlierMetrics(new Registry(), 'gateway');
    const r = registry(metrics);
    const pods = ['vllm/a', 'vllm/b'].map((name) => ({ name, url: `http://${name}`, label: 'vllm' }));
    compile(r, pods, eager).record(0, 'failure');
    const gauge = await metrics.ejected.get();
    expect(gauge.values.map((v) => [v.labels.provider, v.value])).toEqual([
      ['vllm/a', 1],
      ['vllm/b', 0],
    ]);
    const counter = await metrics.ejections.get();
    expect(counter.values.map((v) => [v.labels.provider, v.value])).toEqual([['vllm', 1]]);
    r.stop();
  });

  it('a provider whose address changed is a new one', () => {
    const r = registry();
    const first = compile(r, at('a', 'b'), eager);
    first.record(0, 'failure');
    const moved = compile(r, [{ name: 'a', url: 'http://a2' }, ...at('b')], eager);
    expect(selected(moved, 2)).toEqual([0, 1]);
    r.stop();
  });

  it('a compile that is never used leaves the live state alone', () => {
    const r = registry();
    const live = compile(r, at('a', 'b'));
    r.begin();
    r.pool('m', 'pool', [{ name: 'a', url: 'http://other' }, ...at('b')], SETTINGS);
    // No commit: the next compile starts from the live state again.
    expect(compile(r, at('a', 'b'))).toBe(live);
    r.stop();
  });
});
