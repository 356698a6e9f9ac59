/**
 * Logs the health of each kind of Kubernetes API call (a verb on a resource) once per change of
 * state: a warning when it starts failing or fails differently, an info line when it works again.
 * Resource mode retries failed calls for as long as it runs, so a line per failure would flood the log.
 */
import type { Logger } from '../telemetry/logger.js';
import type { CallFailure } from './api-errors.js';

export class CallHealth {
  private readonly failing = new Map<string, string>();
  private readonly logger: Logger;
  private readonly fields: Readonly<Record<string, string>>;

  constructor(logger: Logger, fields: Readonly<Record<string, string>>) {
    this.logger = logger;
    this.fields = fields;
  }

  /** `consequence` says what the gateway does meanwhile, e.g. "still serving ...". */
  failed(verb: string, resource: string, failure: CallFailure, consequence: string): void {
    const key = `${verb} ${resource}`;
    const state = `${failure.kind} ${failure.status ?? ''}`;
    if (this.failing.get(key) === state) return;
    this.failing.set(key, state);
    const fields = {
      ...this.fields,
      verb,
      apiResource: resource,
      status: failure.status,
      reason: failure.reason,
    };
    switch (failure.kind) {
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
      case 'unreachable':
        this.logger.warn(
          fields,
          `the Kubernetes API server cannot be reached (${verb} ${resource}); ${consequence}`,
        );
        return;
      default:
        this.logger.warn(
          fields,
          `the Kubernetes API answered ${verb} on ${resource} with ${failure.status ?? 'an error'}; ${consequence}`,
        );
    }
  }

  succeeded(verb: string, resource: string): void {
    const key = `${verb} ${resource}`;
    if (this.failing.delete(key))
      this.logger.info(
        { ...this.fields, verb, apiResource: resource },
        `the Kubernetes API answers ${verb} on ${resource} again`,
      );
  }
}
