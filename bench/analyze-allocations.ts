/**
 * Aggregates a sampling heap profile (`bench/profile.ts --mode alloc`, or any `.heapprofile`) into
 * bytes allocated per request by function and by file or package: where the young generation
 * fills from.
 *
 *   node bench/analyze-allocations.ts <file.heapprofile> --requests N [--top 30]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { category } from './analyze-profile.ts';
import { exitWithUsageIfAsked } from './support/usage.ts';

exitWithUsageIfAsked(import.meta.url);

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: HeapNode[];
}

export interface HeapProfile {
  head: HeapNode;
}

export interface AllocationSummary {
  totalBytes: number;
  byFunction: [string, number][];
  byCategory: [string, number][];
}

export function summarizeAllocations(profile: HeapProfile, top = 30): AllocationSummary {
  const byFunction = new Map<string, number>();
  const byCategory = new Map<string, number>();
  let totalBytes = 0;
  const visit = (node: HeapNode): void => {
    if (node.selfSize > 0) {
      totalBytes += node.selfSize;
      const frame = node.callFrame;
      const where = category(frame);
      const key =
        frame.url === ''
          ? frame.functionName || '(native)'
          : `${frame.functionName || '(anonymous)'} (${where}:${frame.lineNumber + 1})`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + node.selfSize);
      byCategory.set(where, (byCategory.get(where) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child);
  };
  visit(profile.head);
  const ranked = (map: Map<string, number>): [string, number][] =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { totalBytes, byFunction: ranked(byFunction), byCategory: ranked(byCategory) };
}

export function renderAllocations(summary: AllocationSummary, requests: number): string {
  const perRequest = (bytes: number): string => (bytes / requests).toFixed(0);
  const table = (title: string, rows: [string, number][]): string =>
    [
      `#### ${title}`,
      '',
      '| bytes / request | % | where |',
      '|---:|---:|---|',
      ...rows.map(
        ([key, bytes]) =>
          `| ${perRequest(bytes)} | ${((bytes / summary.totalBytes) * 100).toFixed(1)} | ${key} |`,
      ),
    ].join('\n');
  return [
    `Sampled allocations: ${(summary.totalBytes / requests / 1024).toFixed(1)} KB per request (an estimate: V8 samples one allocation every ~1 KB and scales).`,
    '',
    table('Allocated by file or package', summary.byCategory),
    '',
    table('Allocated by function', summary.byFunction),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { requests: { type: 'string' }, top: { type: 'string', default: '30' } },
  });
  const file = positionals[0];
  if (!file || !values.requests)
    throw new Error('usage: analyze-allocations.ts <file.heapprofile> --requests N');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as HeapProfile;
  process.stdout.write(
    renderAllocations(summarizeAllocations(profile, Number(values.top)), Number(values.requests)),
  );
}
