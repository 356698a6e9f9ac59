import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat } from '../helpers/client.js';
import {
  completion,
  jsonReply,
  sseReply,
  startUpstream,
  type RecordingUpstream,
} from '../helpers/upstream.js';

/**
 * The `x-ratelimit-*` response headers through a real gateway: the tightest request bucket and the
 * tightest token budget a request was admitted (or refused) under, replacing the provider's own;
 * absent without a limit and when switched off.
 */

const ALICE = 'sk-headers-alice-19f2';

/** What a provider says about its own limits: never what the gateway's client is subject to. */
const PROVIDER_LIMITS = {
  'x-ratelimit-limit-requests': '10000',
  'x-ratelimit-remaining-requests': '9999',
  'x-ratelimit-reset-requests': '6ms',
  'x-ratelimit-limit-tokens': '2000000',
  'x-ratelimit-remaining-tokens': '1999850',
  'x-ratelimit-reset-tokens': '4ms',
};

let metered: RecordingUpstream;
let streaming: RecordingUpstream;
let gateway: StartedGateway;
let quiet: StartedGateway;

const targets = () => ({
  // Alice's key allows 2 requests (one every 2 s), the target 5: hers is the tighter.
  limited: {
    url: metered.url,
    keys: ['alice'],
    rate_limit: { requests_per_second: 1, burst_size: 5 },
    token_limit: { tokens_per_minute: 600, burst_tokens: 1000 },
  },
  // 100 tokens, one a second: the first 150-token response takes it to -50.
  budget: { url: metered.url, token_limit: { tokens_per_minute: 60, burst_tokens: 100 } },
  open: { url: metered.url },
  streamed: { url: streaming.url, rate_limit: { requests_per_second: 1, burst_size: 10 } },
});

const auth = {
  key_definitions: { alice: { key: ALICE, rate_limit: { requests_per_second: 0.5, burst_size: 2 } } },
};

beforeAll(async () => {
  // 100 prompt + 50 completion tokens per response.
  metered = await startUpstream(
    jsonReply(
      200,
      completion('ok', { usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 } }),
      PROVIDER_LIMITS,
    ),
  );
  streaming = await startUpstream(
    sseReply([{ choices: [{ index: 0, delta: { content: 'hi' } }] }], 0, PROVIDER_LIMITS),
  );
  [gateway, quiet] = await Promise.all([
    startGateway({ auth, targets: targets() }),
    startGateway({ auth, rate_limit_headers: false, targets: targets() }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([gateway?.stop(), quiet?.stop()]);
  await Promise.all([metered?.close(), streaming?.close()]);
});

async function post(on: StartedGateway, model: string, key?: string) {
  const response = await fetch(`${on.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(chat(model)),
  });
  const text = await response.text();
  const limits: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.startsWith('x-ratelimit-')) limits[name] = value;
  });
  return { status: response.status, text, limits, retryAfter: response.headers.get('retry-after') };
}

/** A duration as the headers write it (`250ms`, `1.5s`, `2m30s`), in milliseconds. */
function durationMs(text: string | undefined): number {
  const ms = /^(\d+)ms$/.exec(text ?? '');
  if (ms) return Number(ms[1]);
  const parts = /^(?:(\d+)h)?(?:(\d+)m)?([\d.]+)s$/.exec(text ?? '');
  if (!parts) throw new Error(`not a duration: ${text}`);
  return (Number(parts[1] ?? 0) * 3600 + Number(parts[2] ?? 0) * 60 + Number(parts[3])) * 1000;
}

describe('rate-limit headers', () => {
  it("report the tightest request bucket and token budget, after the request's take, replacing the provider's", async () => {
    const first = await post(gateway, 'limited', ALICE);
    expect(first.status).toBe(200);
    expect(first.limits).toMatchObject({
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '1000',
      'x-ratelimit-reset-tokens': '0s',
    });
    // One request short of full at one every 2 s.
    expect(durationMs(first.limits['x-ratelimit-reset-requests'])).toBeGreaterThan(1800);
    expect(durationMs(first.limits['x-ratelimit-reset-requests'])).toBeLessThanOrEqual(2000);

    // The first response's 150 tokens were charged when it ended; 10 a second refill them.
    const second = await post(gateway, 'limited', ALICE);
    expect(second.status).toBe(200);
    expect(second.limits['x-ratelimit-remaining-requests']).toBe('0');
    const tokensLeft = Number(second.limits['x-ratelimit-remaining-tokens']);
    expect(tokensLeft).toBeGreaterThanOrEqual(850);
    expect(tokensLeft).toBeLessThan(900);
    expect(durationMs(second.limits['x-ratelimit-reset-tokens'])).toBeGreaterThan(10_000);
    expect(durationMs(second.limits['x-ratelimit-reset-tokens'])).toBeLessThanOrEqual(15_000);

    // Refused by Alice's bucket: the refusal carries the headers too.
    const refused = await post(gateway, 'limited', ALICE);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error.code).toBe('rate_limit');
    expect(refused.limits).toMatchObject({
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '0',
    });
    // A request-rate refusal has no Retry-After; the reset is the time until the bucket is full.
    expect(refused.retryAfter).toBeNull();
    expect(durationMs(refused.limits['x-ratelimit-reset-requests'])).toBeGreaterThan(3000);
  });

  it('a token refusal reports no tokens left and the time until the budget is full', async () => {
    const first = await post(gateway, 'budget');
    expect(first.status).toBe(200);
    expect(first.limits).toEqual({
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '100',
      'x-ratelimit-reset-tokens': '0s',
    });
    const refused = await post(gateway, 'budget');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error.code).toBe('token_rate_limit');
    expect(refused.limits['x-ratelimit-remaining-tokens']).toBe('0');
    // From -50 to 100 at one a second: 150 s.
    expect(durationMs(refused.limits['x-ratelimit-reset-tokens'])).toBeGreaterThan(145_000);
    expect(durationMs(refused.limits['x-ratelimit-reset-tokens'])).toBeLessThanOrEqual(150_000);
  });

  it('a stream carries them, and the official openai SDK hands them to the application', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'streamed', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('hi');
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('10');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('9');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBeNull();
  });

  it("without a limit, the provider's headers pass through untouched", async () => {
    const open = await post(gateway, 'open');
    expect(open.status).toBe(200);
    expect(open.limits).toEqual(PROVIDER_LIMITS);
  });

  it("switched off, the gateway sends none of its own and passes the provider's through", async () => {
    const answer = await post(quiet, 'limited', ALICE);
    expect(answer.status).toBe(200);
    expect(answer.limits).toEqual(PROVIDER_LIMITS);
    await post(quiet, 'limited', ALICE);
    const refused = await post(quiet, 'limited', ALICE);
    expect(refused.status).toBe(429);
    expect(refused.limits).toEqual({});
  });
});
