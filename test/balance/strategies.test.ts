import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  attemptOrder,
  deferPreferred,
  priorityOrder,
  weightedRandomOrder,
  type PriorityReorder,
  type Random,
} from '../../src/gateway/balance/strategies.js';
import { scripted, seeded } from './helpers.js';

interface P {
  readonly name: string;
  readonly weight: number;
}

const pool = (...weights: number[]): P[] =>
  weights.map((weight, i) => ({ name: String.fromCharCode(65 + i), weight }));
const names = (order: readonly P[]): string => order.map((p) => p.name).join('');
const noInput = () => ({ json: undefined, sessionHeader: undefined });

describe('priority', () => {
  it('is definition order, returned without copying', () => {
    const providers = pool(1, 5, 1);
    expect(priorityOrder(providers)).toBe(providers);
    expect(attemptOrder('priority', providers, scripted([]), {}, noInput)).toBe(providers);
    expect(names(attemptOrder('priority', providers, scripted([]), {}, noInput))).toBe('ABC');
  });

  it('asks the share controller for the order when one runs', () => {
    const providers = pool(1, 1, 1);
    const share: PriorityReorder = { orderFor: (p) => deferPreferred(p) };
    expect(names(attemptOrder('priority', providers, scripted([]), { share }, noInput))).toBe('BAC');
  });

  it('leaves a single-provider target alone', () => {
    const providers = pool(1);
    expect(attemptOrder('single', providers, scripted([]), {}, noInput)).toBe(providers);
  });
});

describe('deferPreferred', () => {
  it('starts at the next provider and keeps the preferred one second', () => {
    const providers = pool(1, 1, 1, 1);
    expect(names(deferPreferred(providers))).toBe('BACD');
    expect(names(providers)).toBe('ABCD');
    expect(names(deferPreferred(pool(1, 1)))).toBe('BA');
    expect(names(deferPreferred(pool(1)))).toBe('A');
  });
});

describe('weighted_random', () => {
  it('maps each draw onto the cumulative weights of the providers not yet picked', () => {
    // Weights 1, 2, 1 (total 4). 0.6 * 4 = 2.4 falls in B's interval [1, 3); then A (1) and C (1)
    // remain, and 0 * 2 falls in A's.
    const providers = pool(1, 2, 1);
    const random = scripted([0.6, 0]);
    expect(names(weightedRandomOrder(providers, random))).toBe('BAC');
    expect(random.drawn()).toBe(2);
    // 0.9 * 4 = 3.6 -> C; then 0.9 * 3 = 2.7 in B's [1, 3) of A, B.
    expect(names(weightedRandomOrder(providers, scripted([0.9, 0.9])))).toBe('CBA');
    // Interval edges belong to the next provider: 0.25 * 4 = 1 is the start of B.
    expect(names(weightedRandomOrder(providers, scripted([0.25, 0.5])))).toBe('BCA');
    expect(names(providers)).toBe('ABC');
  });

  it('draws nothing for a pool of one', () => {
    const providers = pool(3);
    expect(weightedRandomOrder(providers, scripted([]))).toBe(providers);
  });

  it('picks the first provider exactly in proportion to weight', () => {
    // Evenly spaced draws (interval midpoints) measure each provider's interval exactly.
    const providers = pool(1, 2, 5);
    const grid = 800;
    const counts = new Map<string, number>();
    for (let i = 0; i < grid; i++) {
      const first = weightedRandomOrder(providers, scripted([(i + 0.5) / grid, 0]))[0]!;
      counts.set(first.name, (counts.get(first.name) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ A: 100, B: 200, C: 500 });
  });

  it('continues without replacement in proportion to the remaining weights', () => {
    // P(second = j) = sum over i != j of w_i / T * w_j / (T - w_i). For weights 1, 2, 5:
    // A: 2/8*1/6 + 5/8*1/3 = 1/4, B: 1/8*2/7 + 5/8*2/3, C: 1/8*5/7 + 2/8*5/6.
    const providers = pool(1, 2, 5);
    const firstGrid = 800;
    const secondGrid = 42; // multiple of 7, 6 and 3, the remaining totals
    const counts = new Map<string, number>();
    for (let i = 0; i < firstGrid; i++) {
      for (let j = 0; j < secondGrid; j++) {
        const order = weightedRandomOrder(
          providers,
          scripted([(i + 0.5) / firstGrid, (j + 0.5) / secondGrid]),
        );
        counts.set(order[1]!.name, (counts.get(order[1]!.name) ?? 0) + 1);
      }
    }
    const total = firstGrid * secondGrid;
    expect(counts.get('A')).toBe(total / 4);
    expect(counts.get('B')).toBe(total * (1 / 28 + 5 / 12));
    expect(counts.get('C')).toBe(total * (5 / 56 + 5 / 24));
  });

  it('matches the weights over a seeded random sequence', () => {
    const providers = pool(1, 3, 6);
    const random = seeded(20240611);
    const runs = 60_000;
    const counts = [0, 0, 0];
    for (let i = 0; i < runs; i++) counts[providers.indexOf(weightedRandomOrder(providers, random)[0]!)]!++;
    expect(counts[0]! / runs).toBeCloseTo(0.1, 2);
    expect(counts[1]! / runs).toBeCloseTo(0.3, 2);
    expect(counts[2]! / runs).toBeCloseTo(0.6, 2);
  });

  it('never falls off the end when rounding leaves the sum short of the draw', () => {
    // 0.1 + 0.2 + 0.3 sums to 0.6000000000000001 in floating point.
    const providers = pool(0.1, 0.2, 0.3);
    expect(names(weightedRandomOrder(providers, scripted([1 - Number.EPSILON, 1 - Number.EPSILON])))).toBe(
      'CBA',
    );
  });

  it('is a permutation: every provider exactly once, for any weights and draws', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 1e-9, max: 1e9, noNaN: true }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
          minLength: 1,
          maxLength: 8,
        }),
        (weights, draws) => {
          const providers = pool(...weights);
          let k = 0;
          const random: Random = () => draws[k++ % draws.length]!;
          const order = weightedRandomOrder(providers, random);
          expect(order).toHaveLength(providers.length);
          expect(new Set(order).size).toBe(providers.length);
          for (const p of providers) expect(order).toContain(p);
          expect(k).toBe(providers.length - 1);
        },
      ),
    );
  });
});
