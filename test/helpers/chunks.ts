/**
 * `all` cut at each of `cuts` (each taken modulo `all.length + 1`, duplicates dropped), in order:
 * the chunkings a property test feeds a streaming parser. Empty chunks may occur and are meant to.
 */
export function split<T extends Uint8Array>(all: T, cuts: readonly number[]): T[] {
  const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  const chunks: T[] = [];
  let last = 0;
  for (const p of points) {
    chunks.push(all.subarray(last, p) as T);
    last = p;
  }
  chunks.push(all.subarray(last) as T);
  return chunks;
}
