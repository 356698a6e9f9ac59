import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** One line of the results table. Streaming rows put streams/s in `rate` and TTFB in p50/p99. */
export interface Row {
  section: string;
  target: string;
  load: string;
  /** Requests (or streams) per second. */
  rate: number | undefined;
  p50: number | undefined;
  p99: number | undefined;
  addedP50: number | undefined;
  addedP99: number | undefined;
  /**
   * Open loop: per round, this row's percentile minus the direct row's in the same round; the
   * median over rounds (as for the throughput ratios), so one window in which the machine stalled
   * does not decide the row. The pooled `addedP50`/`addedP99` are reported beside it.
   */
  addedP50Rounds?: number[];
  addedP99Rounds?: number[];
  /** Median over rounds of this row's rate / the floor's rate in the same round. */
  ratioFloor: number | undefined;
  /** The per-round ratios the median is taken over (closed loop). */
  ratioFloorRounds?: number[];
  /** Proxy CPU seconds per 10,000 requests (or streams). */
  cpuPer10k: number | undefined;
  /** Proxy peak RSS (VmHWM) over the row's windows, MB. */
  peakRss: number | undefined;
  /** Responses that were not 2xx, connection errors, incomplete streams. */
  failed: number;
  /** Highest CPU (cores) other programs on the machine used during any window of the row. */
  others: number | undefined;
  notes: string;
  /** Why the row cannot be held against the budget (set when the load did not do what it claims). */
  notJudged?: string;
}

export interface BudgetLine {
  line: string;
  measured: string;
  pass: boolean | undefined;
}

const dash = '–';

export function fmt(value: number | undefined, digits = 2): string {
  if (value === undefined || Number.isNaN(value)) return dash;
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A difference with its sign: `+0.25`, `-0.49`, or a dash when there is none. */
export function signed(value: number | undefined, digits = 2): string {
  if (value === undefined || Number.isNaN(value)) return dash;
  return `${value >= 0 ? '+' : ''}${fmt(value, digits)}`;
}

export function renderTable(rows: readonly Row[]): string {
  const header =
    '| section | target | load | req/s (streams/s) | p50 ms | p99 ms | added p50 ms | added p99 ms | × floor | CPU s / 10k | peak RSS MB | failed | other load | notes |';
  const rule = '|' + '---|'.repeat(14);
  const lines = rows.map(
    (row) =>
      `| ${row.section} | ${row.target} | ${row.load} | ${fmt(row.rate, 0)} | ${fmt(row.p50)} | ${fmt(row.p99)} | ` +
      `${signed(row.addedP50)} | ${signed(row.addedP99)} | ${fmt(row.ratioFloor)} | ${fmt(row.cpuPer10k)} | ` +
      `${fmt(row.peakRss, 0)} | ${row.failed} | ${fmt(row.others)} | ${row.notes} |`,
  );
  return [header, rule, ...lines].join('\n');
}

export function renderBudget(lines: readonly BudgetLine[]): string {
  const verdict = (pass: boolean | undefined): string =>
    pass === undefined ? 'n/a' : pass ? 'PASS' : 'FAIL';
  return [
    '| budget line | measured | verdict |',
    '|---|---|---|',
    ...lines.map((line) => `| ${line.line} | ${line.measured} | ${verdict(line.pass)} |`),
  ].join('\n');
}

export interface Machine {
  cpuModel: string;
  nproc: number;
  memoryGiB: number;
  node: string;
  kernel: string;
  date: string;
}

export function machine(): Machine {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  let kernel = 'unknown';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    cpuModel = /^model name\s*:\s*(.+)$/m.exec(info)?.[1] ?? cpuModel;
    kernel = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  } catch {
    // not Linux: keep what os.cpus() says
  }
  return {
    cpuModel,
    nproc: cpus().length,
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    kernel,
    date: new Date().toISOString(),
  };
}

export function renderMachine(m: Machine): string {
  return (
    `machine: ${m.nproc} CPUs (${m.cpuModel}), ${fmt(m.memoryGiB, 1)} GiB RAM, Linux ${m.kernel}, ` +
    `Node ${m.node}; run at ${m.date}`
  );
}
