/** A growable list of samples (milliseconds, usually) with exact percentiles. */
export class Samples {
  private values = new Float64Array(1024);
  private length = 0;
  private sorted = true;

  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = value;
    this.sorted = false;
  }

  addAll(other: Samples): void {
    for (let i = 0; i < other.length; i++) this.push(other.values[i]!);
  }

  get count(): number {
    return this.length;
  }

  /** Nearest-rank percentile, `p` in [0, 100]; NaN when empty. */
  percentile(p: number): number {
    if (this.length === 0) return Number.NaN;
    if (!this.sorted) {
      this.values.subarray(0, this.length).sort();
      this.sorted = true;
    }
    const rank = Math.min(this.length - 1, Math.max(0, Math.ceil((p / 100) * this.length) - 1));
    return this.values[rank]!;
  }

  /** How many samples are below `threshold`. */
  countBelow(threshold: number): number {
    let below = 0;
    for (let i = 0; i < this.length; i++) if (this.values[i]! < threshold) below++;
    return below;
  }

  get max(): number {
    return this.percentile(100);
  }

  mean(): number {
    let sum = 0;
    for (let i = 0; i < this.length; i++) sum += this.values[i]!;
    return this.length === 0 ? Number.NaN : sum / this.length;
  }
}

/** All the samples of several windows in one. */
export function pooled(samples: readonly Samples[]): Samples {
  const all = new Samples();
  for (const s of samples) all.addAll(s);
  return all;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
