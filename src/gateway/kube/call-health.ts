/**
 * Logs the health of resource mode's Kubernetes API calls once per change of state, not once per
 * retry (resource mode retries failed calls for as long as it runs). An API server that cannot be
 * reached is one state whatever the call: one warning when a first call finds it so, one line once
 * every call that found it so has succeeded again (so a call that keeps failing while another works
 * does not make the state flap). A refusal (403, 401, another status) is a state of its verb on its
 * resource, since each names a permission or a problem of its own.
 */
import type { Logger } from '../telemetry/logger.js';
import type { CallFailure } from './api-calls.js';

export class CallHealth {
  /** `verb resource` -> how it fails, for refusals. */
  private readonly failing = new Map<string, string>();
  /** The calls (`verb resource`) that found the API server unreachable and have not succeeded since. */
  private readonly unreachable = new Set<string>();
  private readonly logger: Logger;
  private readonly fields: Readonly<Record<string, string>>;

  constructor(logger: Logger, fields: Readonly<Record<string, string>>) {
    this.logger = logger;
    this.fields = fields;
  }

  /** `consequence` says what the gateway does meanwhile, e.g. "still serving ...". */
  failed(verb: string, resource: string, failure: CallFailure, consequence: string): void {
    const key = `${verb} ${resource}`;
    if (failure.kind === 'unreachable') {
      const first = this.unreachable.size === 0;
      this.unreachable.add(key);
      this.failing.delete(key);
      if (!first) return;
    } else {
      const state = `${failure.kind} ${failure.status ?? ''}`;
      this.unreachable.delete(key);
      if (this.failing.get(key) === state) return;
      this.failing.set(key, state);
    }
    const fields = {
      ...this.fields,
      verb,
      apiResource: resource,
      status: failure.status,
      reason: failure.reason,
    };
    switch (failure.kind) {
      case 'unreachable':
        this.logger.warn(
          fields,
          `the Kubernetes API server cannot be reached (${verb} ${resource}); ${consequence}`,
        );
        return;
      case 'forbidden':
        this.logger.warn(
          fields,
          `the Kubernetes API refused ${verb} on ${resource} (403 Forbidden): the service account lacks this permission (a Role granting ${verb} on ${resource}); ${consequence}`,
        );
        return;
      case 'unauthorized':
        this.logger.warn(
          fields,
          `the Kubernetes API did not accept the credentials for ${verb} on ${resource} (401 Unauthorized); ${consequence}`,
        );
        return;
      default:
        this.logger.warn(
          fields,
          `the Kubernetes API answered ${verb} on ${resource} with ${failure.status ?? 'an error'}; ${consequence}`,
        );
    }
  }

  /** The resource is not called any more (a Service no longer named): its states are dropped. */
  forget(resource: string): void {
    for (const key of this.unreachable) if (key.endsWith(` ${resource}`)) this.unreachable.delete(key);
    for (const key of this.failing.keys()) if (key.endsWith(` ${resource}`)) this.failing.delete(key);
  }

  succeeded(verb: string, resource: string): void {
    const key = `${verb} ${resource}`;
    if (this.unreachable.delete(key) && this.unreachable.size === 0)
      this.logger.info(
        { ...this.fields, verb, apiResource: resource },
        'the Kubernetes API server answers again',
      );
    if (this.failing.delete(key))
      this.logger.info(
        { ...this.fields, verb, apiResource: resource },
        `the Kubernetes API answers ${verb} on ${resource} again`,
      );
  }
}
