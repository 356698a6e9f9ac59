import { describe, expect, it } from 'vitest';
import type { SlowStreamsResult } from '../../bench/scenarios/memory.ts';
import { headlineRows, renderHeadline } from '../../bench/support/headline.ts';
import type { Row } from '../../bench/support/report.ts';

function row(section: string, target: string, fields: Partial<Row>): Row {
  return {
    section,
    target,
    load: '',
    rate: undefined,
    p50: undefined,
    p99: undefined,
    addedP50: undefined,
    addedP99: undefined,
    ratioFloor: undefined,
    cpuPer10k: undefined,
    peakRss: undefined,
    failed: 0,
    others: undefined,
    notes: '',
    ...fields,
  };
}

function streams(peakRss: number, idleRss: number, maxOpen = 1000, incomplete = 0): SlowStreamsResult {
  return {
    idleRss,
    peakRss,
    heldRss: peakRss,
    maxOpen,
    gateway: undefined,
    complete: 1000 - incomplete,
    incomplete,
  };
}

const labels = new Map([
  ['direct', 'direct (no proxy)'],
  ['floor', 'floor'],
  ['slow', 'slow proxy'],
  ['gateway plain', 'gateway plain'],
  ['floor messages', 'floor, Messages API'],
  ['gateway messages', 'gateway messages'],
]);

const closed = [
  row('closed loop', 'direct', { rate: 40_000, others: 0.02 }),
  row('closed loop', 'floor', { rate: 20_000, cpuPer10k: 0.4, others: 0.05 }),
  row('closed loop', 'slow', { rate: 2_000, ratioFloor: 0.1, cpuPer10k: 4, others: 0.3 }),
  row('closed loop', 'gateway plain', { rate: 18_000, ratioFloor: 0.9, cpuPer10k: 0.45, failed: 1 }),
  row('closed loop', 'floor messages', { rate: 19_000, cpuPer10k: 0.42 }),
  row('closed loop', 'gateway messages', { rate: 17_100, ratioFloor: 0.9, cpuPer10k: 0.47 }),
];
const open = [
  row('open loop', 'direct', { rate: 999 }),
  row('open loop', 'floor', {
    rate: 999,
    addedP50: 0.2,
    addedP99: 1.5,
    addedP50Rounds: [0.1, 0.2, 0.3],
    addedP99Rounds: [1, 2, 9],
  }),
  row('open loop', 'slow', { rate: 600, addedP50: 900, addedP99: 2000, others: 0.1 }),
  row('open loop', 'gateway plain', { rate: 995, addedP50: 0.25, addedP99: 1.9, failed: 2 }),
];
const memory = new Map([
  ['floor', streams(172, 94)],
  ['slow', streams(244, 121, 451)],
  ['gateway plain', streams(180, 110, 1000, 3)],
]);

describe('the headline table', () => {
  const rows = headlineRows(labels, closed, open, 1000, memory, new Set(['floor', 'floor messages']));

  it('puts the floor at 1.00x and takes the open loop from the median of its rounds', () => {
    const floor = rows.find((r) => r.label === 'floor')!;
    expect(floor.ratioFloor).toBe(1);
    expect(floor.addedP50).toBe(0.2);
    expect(floor.addedP99).toBe(2);
  });

  it("puts each API's floor at 1.00x and keeps the other rows' own ratios", () => {
    expect(rows.find((r) => r.label === 'floor, Messages API')!.ratioFloor).toBe(1);
    expect(rows.find((r) => r.label === 'gateway messages')!.ratioFloor).toBe(0.9);
    expect(rows.find((r) => r.label === 'slow proxy')!.ratioFloor).toBe(0.1);
  });

  it('gives a floor that was not measured in the closed loop no ratio', () => {
    const table = headlineRows(
      new Map([['floor messages', 'floor, Messages API']]),
      [],
      [],
      1000,
      new Map(),
      new Set(['floor messages']),
    );
    expect(table[0]!.ratioFloor).toBeUndefined();
  });

  it('adds up failures over the sections and keeps the worst other load', () => {
    const gateway = rows.find((r) => r.label === 'gateway plain')!;
    expect(gateway.failed).toBe(6);
    expect(rows.find((r) => r.label === 'slow proxy')!.others).toBe(0.3);
  });

  it("says when a proxy could not keep the open loop's rate, and when streams were never all open", () => {
    const table = renderHeadline(rows, 1000, 1000);
    const line = (label: string): string => table.split('\n').find((l) => l.startsWith(`| ${label} |`))!;
    expect(line('slow proxy')).toContain('+2,000.00 (saturated: 600 of 1,000 req/s served)');
    expect(line('slow proxy')).toContain('| 121 | 244 (at most 451 open at once) |');
    expect(line('gateway plain')).not.toContain('saturated');
    expect(line('gateway plain')).toContain('| 18,000 | 0.90x | 0.45 | +0.25 | +1.90 | 110 | 180 | 6 |');
    expect(line('direct (no proxy)')).toBe(
      '| direct (no proxy) | 40,000 | – | – | – | – | – | – | 0 | 0.02 |',
    );
  });

  it('has one column per header cell on every line', () => {
    const table = renderHeadline(rows, 1000, 1000);
    const cells = table.split('\n').map((l) => l.split('|').length);
    expect(new Set(cells).size).toBe(1);
  });
});
