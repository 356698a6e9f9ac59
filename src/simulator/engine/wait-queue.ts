/** An entry of the waiting queue: lower priority values run first, then arrival order (vLLM). */
export interface Queued {
  readonly priority: number;
  readonly arrival: number;
  queued: boolean;
}

/**
 * Priority-then-FCFS queue as a binary heap. Removal of a cancelled entry is lazy (it is skipped when
 * it reaches the top) so a client disconnect costs O(1); `size` counts live entries only.
 */
export class WaitQueue<T extends Queued> {
  private heap: T[] = [];
  private live = 0;

  get size(): number {
    return this.live;
  }

  push(item: T): void {
    item.queued = true;
    this.live++;
    this.heap.push(item);
    this.siftUp(this.heap.length - 1);
  }

  /** Marks an entry as gone; it is dropped when it surfaces. */
  remove(item: T): void {
    if (!item.queued) return;
    item.queued = false;
    this.live--;
  }

  shift(): T | undefined {
    while (this.heap.length > 0) {
      const top = this.pop();
      if (top.queued) {
        top.queued = false;
        this.live--;
        return top;
      }
    }
    return undefined;
  }

  /** Removes and returns every live entry (engine shutdown). */
  drain(): T[] {
    const items = this.heap.filter((item) => item.queued);
    for (const item of items) item.queued = false;
    this.heap = [];
    this.live = 0;
    return items;
  }

  private pop(): T {
    const top = this.heap[0]!;
    const last = this.heap.pop()!;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private before(a: T, b: T): boolean {
    return a.priority !== b.priority ? a.priority < b.priority : a.arrival < b.arrival;
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(heap[index]!, heap[parent]!)) return;
      [heap[index], heap[parent]] = [heap[parent]!, heap[index]!];
      index = parent;
    }
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    for (;;) {
      const left = index * 2 + 1;
      const right = left + 1;
      let best = index;
      if (left < heap.length && this.before(heap[left]!, heap[best]!)) best = left;
      if (right < heap.length && this.before(heap[right]!, heap[best]!)) best = right;
      if (best === index) return;
      [heap[index], heap[best]] = [heap[best]!, heap[index]!];
      index = best;
    }
  }
}
