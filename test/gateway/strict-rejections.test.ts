import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, startGateway, type StartedGateway } from '../helpers/gateway.js';
import { jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { gatewayErrors, inResponseMode } from '../../src/gateway/pipeline/errors.js';

/**
 * The gateway's own rejections in both modes, through the real server: in strict mode a status of
 * the standardization table (spec 7.2) carries the table's message and type, with the code spec 7.1
 * gives (null where it gives none) and the same Retry-After and rejections-metric label as outside
 * strict mode.
 */

let up: RecordingUpstream;
let strict: StartedGateway;
let loose: StartedGateway;

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null },
  ],
};

function config(strictMode: boolean): Record<string, unknown> {
  return {
    ...(strictMode ? { strict_mode: true } : {}),
    auth: {
      key_definitions: {
        one: { key: 'acme-1', labels: { account: 'acme' } },
        two: { key: 'acme-2', labels: { account: 'acme' } },
      },
    },
    targets: {
      limited: { url: up.url, rate_limit: { requests_per_second: 0.001, burst_size: 1 } },
      held: { url: up.url, keys: ['one', 'two'], inflight_limit: 1 },
    },
  };
}

beforeAll(async () => {
  up = await startUpstream(jsonReply(200, completion));
  [strict, loose] = await Promise.all([startGateway(config(true)), startGateway(config(false))]);
});

afterAll(async () => {
  await Promise.all([strict?.stop(), loose?.stop()]);
  await up?.close();
});

interface ErrorObject {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

async function post(gateway: StartedGateway, model: string, key?: string) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
    },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    error: response.status === 200 ? undefined : (JSON.parse(text) as { error: ErrorObject }).error,
  };
}

async function rejections(gateway: StartedGateway, labels: Record<string, string>): Promise<number> {
  return (await metricValue(await gateway.metrics(), 'gateway_rejections_total', labels)) ?? 0;
}

describe("the gateway's own rejections in strict mode (spec 7.1, 7.2)", () => {
  it('an empty bucket: the 429 row, code rate_limit, counted as rate_limit', async () => {
    const answers = [];
    for (const gateway of [strict, loose]) {
      expect((await post(gateway, 'limited')).status).toBe(200);
      const before = await rejections(gateway, { model: 'limited', status: '429', code: 'rate_limit' });
      const refused = await post(gateway, 'limited');
      expect(await rejections(gateway, { model: 'limited', status: '429', code: 'rate_limit' })).toBe(
        before + 1,
      );
      answers.push(refused);
    }
    const [inStrict, outside] = answers;
    expect(inStrict).toMatchObject({
      status: 429,
      error: { message: 'Rate limit exceeded', type: 'rate_limit_error', code: 'rate_limit' },
    });
    expect(outside).toMatchObject({
      status: 429,
      error: { message: 'Rate limit exceeded (target limit).', type: 'rate_limit_error', code: 'rate_limit' },
    });
    expect(inStrict!.retryAfter).toBe(outside!.retryAfter);
  });

  it('an unknown model: the 404 row, code null in strict mode, model_not_found outside it', async () => {
    const inStrict = await post(strict, 'nope');
    expect(inStrict).toMatchObject({
      status: 404,
      error: { message: 'Not found', type: 'not_found_error', code: null },
    });
    const outside = await post(loose, 'nope');
    expect(outside).toMatchObject({
      status: 404,
      error: {
        message: 'The model `nope` does not exist.',
        type: 'invalid_request_error',
        code: 'model_not_found',
      },
    });
    expect(await rejections(strict, { status: '404', code: 'model_not_found' })).toBe(1);
  });

  it('an account over its in-flight limit: the 429 row, code inflight_limit_exceeded, Retry-After 1', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    up.respondWith(async (_req, res) => {
      await gate;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion));
    });
    try {
      const held = [post(strict, 'held', 'acme-1'), post(loose, 'held', 'acme-1')];
      // Both held requests have reached the upstream before the second key of the account asks.
      for (let i = 0; i < 100 && up.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      const inStrict = await post(strict, 'held', 'acme-2');
      const outside = await post(loose, 'held', 'acme-2');
      release();
      expect((await Promise.all(held)).map((reply) => reply.status)).toEqual([200, 200]);
      expect(inStrict).toEqual({
        status: 429,
        retryAfter: '1',
        error: {
          message: 'Rate limit exceeded',
          type: 'rate_limit_error',
          param: null,
          code: 'inflight_limit_exceeded',
        },
      });
      expect(outside).toMatchObject({
        status: 429,
        retryAfter: '1',
        error: { message: 'Too many requests in flight for this account.', code: 'inflight_limit_exceeded' },
      });
      expect(
        await rejections(strict, { model: 'held', status: '429', code: 'inflight_limit_exceeded' }),
      ).toBe(1);
    } finally {
      release();
      up.respondWith(jsonReply(200, completion));
    }
  });
});

describe('inResponseMode: statuses no request here can provoke', () => {
  it('the 500 of a bug on the request path takes the 500 row in strict mode', () => {
    const internal = gatewayErrors.internal();
    expect(inResponseMode(internal, true)).toMatchObject({
      status: 500,
      type: 'api_error',
      message: 'Internal server error',
      code: null,
      label: 'internal_error',
    });
    expect(inResponseMode(internal, false)).toBe(internal);
  });

  it('a status outside the table (413) keeps its body in strict mode', () => {
    const tooLarge = gatewayErrors.requestTooLarge(1024);
    expect(inResponseMode(tooLarge, true)).toBe(tooLarge);
  });
});
