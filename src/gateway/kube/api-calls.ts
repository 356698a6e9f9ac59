/**
 * Resource mode's calls to the Kubernetes API: the options every call carries (a deadline that
 * aborts the request, a patch's content type), and what a failed call means for the gateway: the API
 * server could not be reached, it refused the call (no permission), the object is gone, or another
 * answer. Every failure goes through `describeFailure`, so a log line always names the verb, the
 * resource and why.
 */
import { Observable, type CustomObjectsApi } from '@kubernetes/client-node';

export type FailureKind =
  'unreachable' | 'forbidden' | 'unauthorized' | 'not_found' | 'conflict' | 'gone' | 'other';

export interface CallFailure {
  readonly kind: FailureKind;
  /** HTTP status when the API server answered. */
  readonly status: number | undefined;
  /** Why, in words: the API server's message, or the network error. Never a token. */
  readonly reason: string;
}

function statusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as { code?: unknown; statusCode?: unknown };
  // client-node's ApiException carries `code`, its Watch `statusCode`; a network error's `code` is a string.
  if (typeof record.code === 'number') return record.code;
  if (typeof record.statusCode === 'number') return record.statusCode;
  return undefined;
}

/** The API server's `Status` message, when the body is one. */
function statusMessage(error: unknown): string | undefined {
  const body = (error as { body?: unknown }).body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (parsed as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}

/** A request aborted by its deadline: the API server or the network did not answer in time. */
function timedOut(error: unknown): boolean {
  const name = (error as { name?: unknown; type?: unknown }).name;
  return name === 'AbortError' || name === 'TimeoutError' || (error as { type?: unknown }).type === 'aborted';
}

function networkReason(error: unknown): string {
  const record = error as {
    code?: unknown;
    cause?: { code?: unknown; message?: unknown };
    message?: unknown;
  };
  const code = typeof record.code === 'string' ? record.code : record.cause?.code;
  const message = typeof record.message === 'string' ? record.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}

export function describeFailure(error: unknown): CallFailure {
  const status = statusOf(error);
  if (status === undefined && timedOut(error))
    return { kind: 'unreachable', status, reason: 'no answer before the deadline' };
  if (status === undefined) return { kind: 'unreachable', status, reason: networkReason(error) };
  const reason = statusMessage(error) ?? `HTTP ${status}`;
  switch (status) {
    case 401:
      return { kind: 'unauthorized', status, reason };
    case 403:
      return { kind: 'forbidden', status, reason };
    case 404:
      return { kind: 'not_found', status, reason };
    case 409:
      return { kind: 'conflict', status, reason };
    case 410:
      return { kind: 'gone', status, reason };
    default:
      // A 5xx from the API server (or a proxy in front) means it cannot answer now.
      return { kind: status >= 500 ? 'unreachable' : 'other', status, reason };
  }
}

/** The options argument of client-node's API calls. */
export type CallOptions = Parameters<CustomObjectsApi['getNamespacedCustomObject']>[1];

/**
 * Options that abort the call after `deadlineMs` (client-node's calls have no deadline of their
 * own, and a hung API server must neither hang resource mode nor pile up open requests) and, for a
 * patch, set its content type.
 */
export function callOptions(deadlineMs: number, contentType?: string): CallOptions {
  return {
    middleware: [
      {
        pre: (context) => {
          context.setSignal(AbortSignal.timeout(deadlineMs));
          if (contentType !== undefined) context.setHeaderParam('Content-Type', contentType);
          return new Observable(Promise.resolve(context));
        },
        post: (context) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
