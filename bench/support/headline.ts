/**
 * The headline table (`node bench/run.ts --headline`): per proxy, one line from the closed loop,
 * the open loop and the 1,000-stream memory row of the same run.
 */
import type { SlowStreamsResult } from '../scenarios/memory.ts';
import { fmt, signed, type Row } from './report.ts';
import { median } from './stats.ts';

export interface HeadlineRow {
  /** Label in the table: `floor`, `nginx 1.22.1`, `gateway plain`, ... */
  label: string;
  /** Closed loop: requests per second (median over rounds) and its ratio to the floor's. */
  rate: number | undefined;
  ratioFloor: number | undefined;
  /** Closed loop: proxy CPU seconds per 10,000 requests. */
  cpuPer10k: number | undefined;
  /** Open loop: added p50 and p99 against direct, median over rounds of the per-round difference. */
  addedP50: number | undefined;
  addedP99: number | undefined;
  /**
   * Open loop: requests per second it completed, when that fell short of the rate sent (the proxy
   * could not keep up, and its latency is queueing).
   */
  saturatedAt: number | undefined;
  /**
   * RSS of the freshly started proxy before the first stream (idle), and its peak (`VmHWM`) while
   * the 1,000 streams are live, MB.
   */
  idleRss: number | undefined;
  streamsRss: number | undefined;
  /** Streams open at once at the most, of those asked for. */
  maxOpen: number | undefined;
  /** Failed requests and incomplete streams over every section. */
  failed: number;
  /** The most other programs used during any of its windows, cores. */
  others: number | undefined;
}

/**
 * Joins the rows of the three sections by target name. `labels` maps a target name to its label
 * (and gives the order); a target missing from a section gets dashes there. `floors` names the
 * floor targets (one per API the run sends), each the 1.00x its API's rows are compared with.
 */
export function headlineRows(
  labels: ReadonlyMap<string, string>,
  closed: readonly Row[],
  open: readonly Row[],
  openRate: number,
  memory: ReadonlyMap<string, SlowStreamsResult>,
  floors: ReadonlySet<string>,
): HeadlineRow[] {
  return [...labels].map(([name, label]) => {
    const closedRow = closed.find((r) => r.target === name);
    const openRow = open.find((r) => r.target === name);
    const streams = memory.get(name);
    const others = [closedRow?.others, openRow?.others].filter((v): v is number => v !== undefined);
    return {
      label,
      rate: closedRow?.rate,
      ratioFloor: floors.has(name) && closedRow ? 1 : closedRow?.ratioFloor,
      cpuPer10k: closedRow?.cpuPer10k,
      addedP50: openRow?.addedP50Rounds ? median(openRow.addedP50Rounds) : openRow?.addedP50,
      addedP99: openRow?.addedP99Rounds ? median(openRow.addedP99Rounds) : openRow?.addedP99,
      // 2% below the rate sent: the driver's last requests finish after its schedule, which lowers
      // the measured rate a little for any proxy.
      saturatedAt: openRow && (openRow.rate ?? 0) < openRate * 0.98 ? (openRow.rate ?? 0) : undefined,
      idleRss: streams?.idleRss,
      streamsRss: streams?.peakRss,
      maxOpen: streams?.maxOpen,
      failed: (closedRow?.failed ?? 0) + (openRow?.failed ?? 0) + (streams?.incomplete ?? 0),
      others: others.length ? Math.max(...others) : undefined,
    };
  });
}

export function renderHeadline(rows: readonly HeadlineRow[], streams: number, openRate: number): string {
  const header =
    `| proxy | throughput, req/s | × floor | CPU s / 10k req | added p50 ms, ${fmt(openRate, 0)} req/s | ` +
    `added p99 ms, ${fmt(openRate, 0)} req/s | ` +
    `RSS MB, idle | RSS MB, ${fmt(streams, 0)} live streams | failed | other load, cores |`;
  const lines = rows.map((row) => {
    const memory =
      row.streamsRss === undefined
        ? '– | –'
        : `${fmt(row.idleRss, 0)} | ${fmt(row.streamsRss, 0)}` +
          (row.maxOpen !== undefined && row.maxOpen < streams
            ? ` (at most ${row.maxOpen} open at once)`
            : '');
    const saturated =
      row.saturatedAt === undefined
        ? ''
        : ` (saturated: ${fmt(row.saturatedAt, 0)} of ${fmt(openRate, 0)} req/s served)`;
    return (
      `| ${row.label} | ${fmt(row.rate, 0)} | ${row.ratioFloor === undefined ? '–' : `${fmt(row.ratioFloor)}x`} | ` +
      `${fmt(row.cpuPer10k)} | ${signed(row.addedP50)} | ${signed(row.addedP99)}${saturated} | ${memory} | ` +
      `${row.failed} | ${fmt(row.others)} |`
    );
  });
  return [header, `|${'---|'.repeat(10)}`, ...lines].join('\n');
}
