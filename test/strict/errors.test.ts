import { describe, expect, it } from 'vitest';
import {
  STRICT_STATUS_TABLE,
  describeStatus,
  embeddedErrorEvent,
  maskUpstreamStatus,
  standaloneEmbeddedError,
  standaloneEmbeddedErrorEvent,
  standaloneUpstreamErrorBody,
  standardErrorBody,
} from '../../src/gateway/strict/errors.js';
import { embeddedErrorStatus } from '../../src/gateway/api/embedded-error.js';
import { SPEC_STATUS_TABLE, standardFor } from '../fixtures/strict-errors.js';

/** The data of one SSE event as JSON. */
function eventData(event: string): unknown {
  expect(event.startsWith('data: ')).toBe(true);
  expect(event.endsWith('\n\n')).toBe(true);
  expect(event.slice(6, -2)).not.toContain('\n');
  return JSON.parse(event.slice(6, -2));
}

describe('spec 7.2 status table', () => {
  it.each([...SPEC_STATUS_TABLE])('%i -> %o', (status, { type, message }) => {
    expect(describeStatus(status)).toEqual({ type, message });
    expect(standardErrorBody(status)).toEqual({ error: { message, type, param: null, code: null } });
  });

  it('the table holds exactly the spec rows', () => {
    expect(STRICT_STATUS_TABLE).toEqual(SPEC_STATUS_TABLE);
  });

  it.each([402, 405, 408, 409, 413, 415, 422, 451, 501, 504, 529, 599, 302, 700])(
    'outside the table: %i -> its own row, else the generic 4xx or internal error',
    (status) => {
      expect(describeStatus(status)).toEqual(standardFor(status));
    },
  );
});

// The spec's masking rows, and the trusted pass-through, are checked through the server for every
// row in test/gateway/strict.test.ts ("error standardization (spec 7.2)"); here only the gateway's
// decisions beyond the spec, which no upstream in those tests sends.
describe('account-class masking (untrusted upstreams) beyond the spec rows', () => {
  it.each([
    [405, 502],
    [410, 502],
    [415, 502],
    [418, 502],
    [499, 502],
    [501, 501],
    [599, 599],
    [302, 502],
    [100, 502],
    [600, 502],
  ])('decided: %i -> %i', (upstream, surfaced) => {
    expect(maskUpstreamStatus(upstream)).toBe(surfaced);
  });
});

describe('embedded error codes', () => {
  it.each<[unknown, number]>([
    [429, 429],
    [503, 503],
    [401, 401],
    [400, 400],
    ['429', 429],
    [' 502 ', 502],
    ['rate_limit', 429],
    ['rate_limit_error', 429],
    ['rate_limit_exceeded', 429],
    ['RATE_LIMIT_EXCEEDED', 429],
    ['server_error', 500],
    ['context_length_exceeded', 500],
    ['', 500],
    [null, 500],
    [undefined, 500],
    [200, 500],
    [42, 500],
    [600, 500],
    [429.5, 500],
    ['4O4', 500],
    [true, 500],
    [{ status: 429 }, 500],
  ])('code %j reads as %i', (code, status) => {
    expect(embeddedErrorStatus(code)).toBe(status);
  });

  it('untrusted event for an error given as a bare string', () => {
    expect(eventData(embeddedErrorEvent('upstream exploded', false))).toEqual({
      error: { message: 'Internal server error', type: 'api_error', param: null, code: 500 },
    });
  });

  it('trusted event forwards the provider error verbatim, with only `error` in the data', () => {
    const providerError = {
      message: 'quota exhausted',
      type: 'insufficient_quota',
      param: null,
      code: '402',
      x: 1,
    };
    expect(eventData(embeddedErrorEvent(providerError, true))).toEqual({ error: providerError });
  });
});

// The replacement bodies for upstream error statuses are checked through the server, status by
// status, in test/gateway/sanitize.test.ts ("upstream errors under sanitize_response").
describe('standalone sanitization bodies (4.6)', () => {
  it('embedded errors: the status their code names, unmasked, and the replacement body', () => {
    expect(standaloneEmbeddedError({ code: 401, message: 'secret' })).toEqual({
      status: 401,
      body: standaloneUpstreamErrorBody(401),
    });
    expect(standaloneEmbeddedError({ code: 'overloaded' }).status).toBe(500);
    const event = standaloneEmbeddedErrorEvent({ code: 429, message: 'secret detail' });
    expect(eventData(event)).toEqual(standaloneUpstreamErrorBody(429));
    expect(event).not.toContain('secret');
  });
});
