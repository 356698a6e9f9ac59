/**
 * Aggregates a V8 `.cpuprofile` (from `node --cpu-prof`) into self and inclusive time by function
 * and self time by file or package, the tables the performance notes quote.
 *
 *   node bench/analyze-profile.ts <file.cpuprofile> [--top 30] [--requests N]
 *   node bench/analyze-profile.ts --compare name=<file>:<requests> name=<file>:<requests> ... [--top 25]
 *
 * `--compare` prints µs per request side by side (self time by file or package, and by function),
 * for profiles of different proxies or of one proxy before and after a change.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Share {
  key: string;
  ms: number;
  /** Share of the busy (non-idle) time, 0..1. */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  selfByFunction: Share[];
  selfByCategory: Share[];
  inclusiveByFunction: Share[];
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Where a frame's code lives: a package, a node module, a gateway file, or a V8 pseudo-frame. */
export function category(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (SPECIAL.has(functionName)) return functionName;
  if (url === '') return '(native / V8 builtins)';
  if (url.startsWith('node:')) return url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `pkg ${pkg[1]}`;
  const own = /\/dist\/(.+)$/.exec(url) ?? /\/(bench\/.+)$/.exec(url);
  if (own) return own[1]!;
  return url;
}

function functionKey(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (SPECIAL.has(name) || frame.url === '') return name;
  const where = category(frame);
  return `${name} (${where}:${frame.lineNumber + 1})`;
}

function ranked(map: Map<string, number>, busyMs: number, top: number): Share[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => ({ key, ms, share: ms / busyMs }));
}

export function summarize(profile: CpuProfile, top = 30): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const selfMs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // timeDeltas[i] is the time elapsed before sample i; charge the next delta to this sample.
    const delta = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    selfMs.set(id, (selfMs.get(id) ?? 0) + delta);
  }

  let totalMs = 0;
  let idleMs = 0;
  const selfByFunction = new Map<string, number>();
  const selfByCategory = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const node = byId.get(id)!;
    totalMs += ms;
    if (node.callFrame.functionName === '(idle)') {
      idleMs += ms;
      continue;
    }
    const key = functionKey(node.callFrame);
    selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + ms);
    const cat = category(node.callFrame);
    selfByCategory.set(cat, (selfByCategory.get(cat) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frameKey = functionKey(byId.get(at)!.callFrame);
      if (frameKey === '(root)' || seen.has(frameKey)) continue;
      seen.add(frameKey);
      inclusive.set(frameKey, (inclusive.get(frameKey) ?? 0) + ms);
    }
  }
  const busyMs = totalMs - idleMs;
  return {
    totalMs,
    idleMs,
    busyMs,
    selfByFunction: ranked(selfByFunction, busyMs, top),
    selfByCategory: ranked(selfByCategory, busyMs, top),
    inclusiveByFunction: ranked(inclusive, busyMs, top),
  };
}

function table(title: string, rows: readonly Share[], requests: number | undefined): string {
  const perRequest = (ms: number): string => (requests ? ` ${((ms * 1000) / requests).toFixed(1)} |` : '');
  return [
    `#### ${title}`,
    '',
    `| ms | % of busy |${requests ? ' µs / request |' : ''} where |`,
    `|---:|---:|${requests ? '---:|' : ''}---|`,
    ...rows.map(
      (row) => `| ${row.ms.toFixed(0)} | ${(row.share * 100).toFixed(1)} |${perRequest(row.ms)} ${row.key} |`,
    ),
  ].join('\n');
}

/**
 * The three tables as markdown. With `requests` (served over the profiled lifetime) each row also
 * shows its cost per request, which compares across proxies of different throughput.
 */
export function renderSummary(summary: ProfileSummary, requests?: number): string {
  const perRequest = requests
    ? `; ${((summary.busyMs * 1000) / requests).toFixed(0)} µs busy per request`
    : '';
  return [
    `Profile: ${(summary.totalMs / 1000).toFixed(1)} s sampled, busy ${(summary.busyMs / 1000).toFixed(1)} s ` +
      `(idle ${((summary.idleMs / summary.totalMs) * 100).toFixed(0)}%)${perRequest}. Shares are of busy time.`,
    '',
    table('Self time by file or package', summary.selfByCategory, requests),
    '',
    table('Self time by function', summary.selfByFunction, requests),
    '',
    table('Inclusive time by function', summary.inclusiveByFunction, requests),
    '',
  ].join('\n');
}

/** Self-time tables (µs per request) of several profiles side by side. */
export function renderComparison(
  profiles: readonly { name: string; profile: CpuProfile; requests: number }[],
  top: number,
): string {
  const summaries = profiles.map((p) => ({ ...p, summary: summarize(p.profile, 100_000) }));
  const side = (title: string, pick: (s: ProfileSummary) => Share[]): string => {
    const perRequest = summaries.map(
      (p) => new Map(pick(p.summary).map((row) => [row.key, (row.ms * 1000) / p.requests])),
    );
    const keys = new Set<string>();
    for (const map of perRequest) for (const key of [...map.keys()].slice(0, top)) keys.add(key);
    const rows = [...keys].sort(
      (a, b) =>
        Math.max(...perRequest.map((m) => m.get(b) ?? 0)) - Math.max(...perRequest.map((m) => m.get(a) ?? 0)),
    );
    return [
      `#### ${title}, µs per request`,
      '',
      `| where | ${summaries.map((p) => p.name).join(' | ')} |`,
      `|---|${summaries.map(() => '---:|').join('')}`,
      `| **busy total** | ${summaries.map((p) => ((p.summary.busyMs * 1000) / p.requests).toFixed(0)).join(' | ')} |`,
      ...rows.map((key) => `| ${key} | ${perRequest.map((m) => (m.get(key) ?? 0).toFixed(1)).join(' | ')} |`),
    ].join('\n');
  };
  return [
    side('Self time by file or package', (s) => s.selfByCategory),
    '',
    side('Self time by function', (s) => s.selfByFunction),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string', default: '30' },
      requests: { type: 'string' },
      compare: { type: 'boolean', default: false },
    },
  });
  if (values.compare) {
    const profiles = positionals.map((spec) => {
      const match = /^([^=]+)=(.+):(\d+)$/.exec(spec);
      if (!match) throw new Error(`expected name=<file>:<requests>, got ${spec}`);
      const profile = JSON.parse(readFileSync(match[2]!, 'utf8')) as CpuProfile;
      return { name: match[1]!, profile, requests: Number(match[3]) };
    });
    process.stdout.write(renderComparison(profiles, Number(values.top)));
    process.exit(0);
  }
  const file = positionals[0];
  if (!file) throw new Error('usage: node bench/analyze-profile.ts <file.cpuprofile> [--top N]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const requests = values.requests === undefined ? undefined : Number(values.requests);
  process.stdout.write(renderSummary(summarize(profile, Number(values.top)), requests));
}
