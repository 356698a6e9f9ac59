import { describe, expect, it } from 'vitest';
import {
  anthropicErrorBody,
  anthropicErrorEvent,
  anthropicErrorType,
  fromOpenAiError,
} from '../../src/gateway/anthropic/errors.js';
import { parseMessagesEvents } from './messages-events.js';

describe('anthropicErrorType', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [504, 'timeout_error'],
    [503, 'overloaded_error'],
    [529, 'overloaded_error'],
    [500, 'api_error'],
    [502, 'api_error'],
    [599, 'api_error'],
    [409, 'invalid_request_error'],
    [422, 'invalid_request_error'],
  ])('%i is %s', (status, type) => {
    expect(anthropicErrorType(status)).toBe(type);
  });
});

describe('anthropicErrorBody and anthropicErrorEvent', () => {
  it('builds the Messages error body', () => {
    expect(anthropicErrorBody(429, 'slow down')).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
    });
  });

  it('writes the body as an SSE error event', () => {
    const text = anthropicErrorEvent(529, 'busy\nnow');
    expect(text.startsWith('event: error\ndata: ')).toBe(true);
    expect(text.endsWith('\n\n')).toBe(true);
    const events = parseMessagesEvents(text);
    expect(events).toEqual([
      { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'busy\nnow' } } },
    ]);
  });
});

describe('fromOpenAiError', () => {
  it('keeps the message of an OpenAI error body and types it by status', () => {
    const body = {
      error: { message: 'context too long', type: 'invalid_request_error', code: 'context_length_exceeded' },
    };
    expect(fromOpenAiError(400, body)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'context too long' },
    });
  });

  it("reads vLLM's top-level error object", () => {
    const body = { object: 'error', message: 'model overloaded', type: 'ServiceUnavailableError', code: 503 };
    expect(fromOpenAiError(503, body).error).toEqual({
      type: 'overloaded_error',
      message: 'model overloaded',
    });
  });

  it('reads a bare string error', () => {
    expect(fromOpenAiError(401, { error: 'bad key' }).error).toEqual({
      type: 'authentication_error',
      message: 'bad key',
    });
  });

  it('names the status when the body has no message', () => {
    for (const body of [undefined, 'oops', [], { error: {} }, { error: { message: '' } }]) {
      expect(fromOpenAiError(502, body).error).toEqual({
        type: 'api_error',
        message: 'the provider answered with status 502',
      });
    }
  });
});
