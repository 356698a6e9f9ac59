import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { chat } from '../helpers/client.js';
import { completion, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Token limits through a real gateway: a request is admitted while its budgets are positive, the
 * usage its response reported is charged when it ends (the budget may go below zero), and the next
 * request is refused with 429 `token_rate_limit` and the seconds until the budget is positive.
 */

const ALICE = 'sk-tokens-alice-5d1c';
const BOB = 'sk-tokens-bob-77a0';
const CAROL = 'sk-tokens-carol-0b3e';

let upstream: RecordingUpstream;
let gateway: StartedGateway;

beforeAll(async () => {
  // 100 prompt + 50 completion tokens per response.
  upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        completion('ok', { usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 } }),
      ),
    );
  });
  gateway = await startGateway({
    auth: {
      key_definitions: {
        alice: { key: ALICE, token_limit: { tokens_per_minute: 60, burst_tokens: 200 } },
        bob: { key: BOB, labels: { account: 'acme' } },
        carol: { key: CAROL, labels: { account: 'acme' } },
      },
      accounts: { acme: { token_limit: { tokens_per_minute: 120, burst_tokens: 100 } } },
    },
    targets: {
      // 60 tokens a minute (one a second), 100 at most.
      budgeted: { url: upstream.url, token_limit: { tokens_per_minute: 60, burst_tokens: 100 } },
      keyed: { url: upstream.url, keys: ['alice', 'bob', 'carol'] },
    },
  });
}, 30_000);

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

async function post(model: string, key?: string) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(chat(model)),
  });
  const text = await response.text();
  return { status: response.status, retryAfter: response.headers.get('retry-after'), text };
}

describe('token limits', () => {
  it("a target's budget: admitted while positive, charged the usage, then 429 until positive again", async () => {
    const served = upstream.requests.length;
    expect((await post('budgeted')).status).toBe(200);
    // 100 - 150 = -50 tokens: 50 s at one token a second.
    const refused = await post('budgeted');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error).toMatchObject({
      type: 'rate_limit_error',
      code: 'token_rate_limit',
    });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(49);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(51);
    // The refused request never reached the provider.
    expect(upstream.requests.length - served).toBe(1);
  });

  it("a key's budget follows the key, and an account's is shared by all of its keys", async () => {
    // alice: 200 tokens, two responses of 150 (the second taken at 50 > 0), then refused.
    expect((await post('keyed', ALICE)).status).toBe(200);
    expect((await post('keyed', ALICE)).status).toBe(200);
    expect((await post('keyed', ALICE)).status).toBe(429);
    // acme: 100 tokens for bob and carol together; bob's response takes it to -50.
    expect((await post('keyed', BOB)).status).toBe(200);
    const carol = await post('keyed', CAROL);
    expect(carol.status).toBe(429);
    expect(JSON.parse(carol.text).error.message).toContain('account');
  });

  it('the official openai SDK reads the refusal as a RateLimitError with its code', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: 'budgeted', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'token_rate_limit' });
  });
});
