/**
 * "Did you mean" for configuration keys and enum values. Uses the optimal-string-alignment variant
 * of the Levenshtein distance, so a swapped pair of letters (`stratgey`) costs one edit like any
 * other single typo.
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  // Three rolling rows: the transposition step looks two rows back.
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, before[j - 2]! + 1);
      current[j] = best;
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
}

/** Spelling differences that are not typos: case and `-` versus `_`. */
const normalize = (s: string): string => s.toLowerCase().replaceAll('-', '_');

/**
 * The candidate closest to `input`, when it is close enough to be a plausible typo: at most one
 * edit for short words, up to three for long ones. Ties go to the alphabetically first candidate
 * so the suggestion is deterministic.
 */
export function closestMatch(input: string, candidates: Iterable<string>): string | undefined {
  const wanted = normalize(input);
  const limit = Math.max(1, Math.min(3, Math.floor(wanted.length / 4)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of [...candidates].sort()) {
    if (candidate === input) continue;
    const distance = editDistance(wanted, normalize(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= limit ? best : undefined;
}
