/** A scorecard cell, and the times and texts in it, as markdown. */
import type { Cell } from './cells.ts';

export function seconds(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function escape(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** A cell in words: how many of each verdict, what the client saw, the median time. */
export function cellText(cell: Cell | undefined): string {
  if (cell === undefined) return 'not run';
  const parts: string[] = [];
  const { counts, details } = cell;
  if (counts.completed > 0) parts.push(`${counts.completed} completed`);
  if (counts.visible > 0) parts.push(`${counts.visible} failed visibly (${escape(details.visible ?? '')})`);
  if (counts.silent > 0) parts.push(`**${counts.silent} failed silently** (${escape(details.silent ?? '')})`);
  if (counts.hung > 0) parts.push(`**${counts.hung} hung** (${escape(details.hung ?? '')})`);
  return `${parts.join(', ')}; p50 ${seconds(cell.p50Ms)}`;
}
