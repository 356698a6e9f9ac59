import { NO_OP_GRANT, type Grant, type Refusal } from './types.js';

/**
 * The grants one request holds, released together. The pipeline gives a request one set, feeds it
 * every admission result in spec order (key rate, target rate, key concurrency, target concurrency,
 * account in-flight or batch), and calls `release()` from every exit path: body end, error, client
 * disconnect. `release()` is idempotent, and a grant that arrives after the set was released (an
 * async limiter answering after the client left) is released at once instead of leaking.
 */
export class GrantSet implements Grant {
  readonly ok = true as const;
  #grants: Grant[] = [];
  #released = false;

  /**
   * Keeps a grant, or hands back the refusal unchanged. A refusal does not release what is already
   * held: the caller decides between rejecting (then `release()`) and moving on to another provider
   * while keeping the request-level grants.
   */
  hold<R extends Refusal>(result: Grant | R): R | null {
    if (!result.ok) return result;
    if (this.#released) result.release();
    else if (result !== NO_OP_GRANT) this.#grants.push(result);
    return null;
  }

  /** Releases everything held, newest first. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const grants = this.#grants;
    for (let i = grants.length - 1; i >= 0; i--) grants[i]!.release();
    grants.length = 0;
  }

  get released(): boolean {
    return this.#released;
  }
}
