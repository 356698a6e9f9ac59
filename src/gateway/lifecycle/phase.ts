/**
 * The process phases of spec 3.2. `/readyz` is 200 only while `serving`; `/healthz` is 200 in every
 * phase until exit, so an orchestrator never kills a draining process for being "unhealthy".
 */
export type Phase = 'starting' | 'serving' | 'delaying' | 'draining' | 'stopped';

export class LifecycleState {
  private current: Phase = 'starting';
  /** False until a configuration is loaded: resource mode starts serving without one. */
  private configured = true;

  get phase(): Phase {
    return this.current;
  }

  get ready(): boolean {
    return this.current === 'serving' && this.configured;
  }

  /** Why `/readyz` answers 503: the phase, or the missing configuration while serving. */
  get notReadyReason(): string {
    return this.current === 'serving' && !this.configured ? 'no configuration loaded yet' : this.current;
  }

  /** The process serves before its first configuration (resource mode): not ready until it loads. */
  awaitConfiguration(): void {
    this.configured = false;
  }

  configurationLoaded(): void {
    this.configured = true;
  }

  /** True once admission has closed: responses must tell clients not to reuse the connection. */
  get draining(): boolean {
    return this.current === 'draining' || this.current === 'stopped';
  }

  enter(phase: Phase): void {
    this.current = phase;
  }
}
