/**
 * What a failed Kubernetes API call means for the gateway: the API server could not be reached, it
 * refused the call (no permission), the object is gone, or another answer. Every call of resource
 * mode goes through `describeFailure`, so a log line always names the verb, the resource and why.
 */

export type FailureKind =
  'unreachable' | 'forbidden' | 'unauthorized' | 'not_found' | 'conflict' | 'gone' | 'other';

export interface CallFailure {
  readonly kind: FailureKind;
  /** HTTP status when the API server answered. */
  readonly status: number | undefined;
  /** Why, in words: the API server's message, or the network error. Never a token. */
  readonly reason: string;
}

/** Thrown when a call got no answer in time: the API server or the network hangs. */
export class CallTimeout extends Error {
  override readonly name = 'CallTimeout';
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
  if (error instanceof CallTimeout) return { kind: 'unreachable', status: undefined, reason: error.message };
  const status = statusOf(error);
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

/**
 * Resolves with the call's result, or rejects with CallTimeout after `ms`: client-node's calls have
 * no deadline of their own, and a hung API server must not hang resource mode. A late answer is
 * dropped.
 */
export function withDeadline<T>(call: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CallTimeout(`${what}: no answer within ${ms} ms`)), ms);
    timer.unref();
    call.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
