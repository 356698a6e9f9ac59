/**
 * The process phases of spec 3.2. `/readyz` is 200 only while `serving`; `/healthz` is 200 in every
 * phase until exit, so an orchestrator never kills a draining process for being "unhealthy".
 */
export type Phase = 'starting' | 'serving' | 'delaying' | 'draining' | 'stopped';

export class LifecycleState {
  private current: Phase = 'starting';

  get phase(): Phase {
    return this.current;
  }

  get ready(): boolean {
    return this.current === 'serving';
  }

  /** True once admission has closed: responses must tell clients not to reuse the connection. */
  get draining(): boolean {
    return this.current === 'draining' || this.current === 'stopped';
  }

  enter(phase: Phase): void {
    this.current = phase;
  }
}
