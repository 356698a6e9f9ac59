import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewaysPerTest, metricValue } from '../helpers/gateway.js';
import { spawnProgram } from '../helpers/process.js';
import { tempDir } from '../helpers/temp-dir.js';
import {
  completion,
  startUpstream,
  type RecordingUpstream,
  type UpstreamHandler,
} from '../helpers/upstream.js';
import { untilEquals } from '../helpers/wait.js';

/**
 * Spend budgets through real gateway processes: a request reserves its largest possible cost at
 * admission and is refused when that does not fit, so concurrent requests cannot overspend; the
 * reservation is replaced by the reported cost when the request ends (a cut stream is charged its
 * reservation); windows move on; a reload keeps what was spent.
 */

const startGateway = gatewaysPerTest();

const ALICE = 'sk-budget-alice-81f2';
const BOB = 'sk-budget-bob-4c0d';
const CAROL = 'sk-budget-carol-66e1';

/** Per token: 0.001 a prompt token, 0.002 a completion token. */
const PRICING = { prompt_per_million: 1000, completion_per_million: 2000 };
const PROMPT_PRICE = 0.001;
const COMPLETION_PRICE = 0.002;
/** What the provider reports for every answer: 20 prompt tokens and `max_tokens` completion tokens. */
const REPORTED_PROMPT = 20;

let upstream: RecordingUpstream;
/** Milliseconds the provider takes to answer (so that many requests are in flight together). */
let delayMs = 0;

/** A chat completion reporting usage; streamed (with usage only when asked for) when the request streams. */
const answering: UpstreamHandler = async (req, res) => {
  const body = JSON.parse(req.body) as {
    max_tokens?: number;
    stream?: boolean;
    stream_options?: { include_usage?: boolean };
  };
  if (delayMs > 0) await sleep(delayMs);
  const completionTokens = body.max_tokens ?? 5;
  const usage = {
    prompt_tokens: REPORTED_PROMPT,
    completion_tokens: completionTokens,
    total_tokens: REPORTED_PROMPT + completionTokens,
  };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(completion('m', { usage })));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (extra: Record<string, unknown>): string =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...extra })}\n\n`;
  res.write(
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: null }] }),
  );
  res.write(chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
  if (body.stream_options?.include_usage === true) res.write(chunk({ choices: [], usage }));
  res.end('data: [DONE]\n\n');
};

beforeAll(async () => {
  upstream = await startUpstream(answering);
}, 30_000);

afterAll(async () => {
  await upstream?.close();
});

/** A request body of exactly this text, so its reservation can be computed. */
function bodyText(model: string, maxTokens: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    model,
    max_tokens: maxTokens,
    messages: [{ role: 'user', content: 'hello' }],
    ...extra,
  });
}

/** The reservation of `body` at the test's prices: one prompt token per four bytes, plus the completion maximum. */
function reservationOf(body: string, maxTokens: number): number {
  return Math.ceil(Buffer.byteLength(body) / 4) * PROMPT_PRICE + maxTokens * COMPLETION_PRICE;
}

/** What the provider's answer costs. */
function actualCost(maxTokens: number): number {
  return REPORTED_PROMPT * PROMPT_PRICE + maxTokens * COMPLETION_PRICE;
}

async function post(url: string, key: string, body: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
}

function budgetGauge(text: string, name: string, scope: string, budget: string): number {
  return metricValue(text, `gateway_budget_${name}`, { scope, budget }) ?? Number.NaN;
}

function config(budgets: { alice?: unknown; account?: unknown; target?: unknown; bobTokens?: unknown }) {
  return {
    auth: {
      key_definitions: {
        alice: { key: ALICE, ...(budgets.alice ? { budget: budgets.alice } : {}) },
        bob: {
          key: BOB,
          labels: { account: 'acme' },
          ...(budgets.bobTokens ? { token_limit: budgets.bobTokens } : {}),
        },
        carol: { key: CAROL, labels: { account: 'acme' } },
      },
      ...(budgets.account ? { accounts: { acme: { budget: budgets.account } } } : {}),
    },
    targets: {
      chat: {
        url: upstream.url,
        keys: ['alice', 'bob', 'carol'],
        pricing: PRICING,
        ...(budgets.target ? { budget: budgets.target } : {}),
      },
    },
  };
}

describe('spend budgets', () => {
  it('200 concurrent requests never spend more than the budget; a token limit checked after the fact lets them all run', async () => {
    delayMs = 300;
    try {
      const body = bodyText('chat', 10);
      const reservation = reservationOf(body, 10);
      const cost = actualCost(10);
      // A budget of a few requests' reservations.
      const amount = Number((reservation * 4.5).toFixed(6));
      // The same money as tokens, limited the way token limits are: admitted while positive.
      const tokensPerRequest = REPORTED_PROMPT + 10;
      const tokenLimit = Math.ceil((amount / cost) * tokensPerRequest);
      const gateway = await startGateway(
        config({ alice: { amount, window: 'month' }, bobTokens: { tokens_per_minute: tokenLimit } }),
      );

      const statuses = async (key: string): Promise<number[]> =>
        Promise.all(Array.from({ length: 200 }, async () => (await post(gateway.url, key, body)).status));
      const budgeted = await statuses(ALICE);
      const served = budgeted.filter((s) => s === 200).length;
      expect(served + budgeted.filter((s) => s === 429).length).toBe(200);
      const spent = budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice');
      expect(spent).toBeCloseTo(served * cost, 9);
      // Never more than the budget plus one request's estimate error (here the estimate is above the
      // truth, so not even that).
      expect(spent).toBeLessThanOrEqual(amount + Math.abs(reservation - cost));
      expect(served).toBe(Math.floor(amount / reservation));

      const tokenLimited = await statuses(BOB);
      const tokenServed = tokenLimited.filter((s) => s === 200).length;
      console.log(
        `200 concurrent requests, a budget of ${amount}: reserved at admission ${served} served, ${spent.toFixed(4)} spent; ` +
          `a token limit of the same money checked after the fact ${tokenServed} served, ${(tokenServed * cost).toFixed(4)} spent`,
      );
      expect(tokenServed).toBeGreaterThan(150);
      expect(tokenServed * cost).toBeGreaterThan(amount * 10);
    } finally {
      delayMs = 0;
    }
  }, 60_000);

  it('a refusal: 429 budget_exceeded naming the budget, Retry-After, headers, and the openai SDK does not retry it', async () => {
    const body = bodyText('chat', 10);
    const reservation = reservationOf(body, 10);
    const gateway = await startGateway(
      config({ account: { amount: reservation * 1.5, window: 'day', time_zone: 'Europe/Berlin' } }),
    );

    const first = await post(gateway.url, BOB, body);
    expect(first.status).toBe(200);
    await first.text();
    expect(first.headers.get('x-ratelimit-limit-budget')).toBe(
      String(Number((reservation * 1.5).toFixed(6))),
    );
    expect(Number(first.headers.get('x-ratelimit-remaining-budget'))).toBeCloseTo(reservation * 0.5, 5);
    // The account's day ends at Berlin's next midnight.
    expect(
      Math.abs(
        durationSeconds(first.headers.get('x-ratelimit-reset-budget')!) -
          (nextMidnight('Europe/Berlin') - Date.now()) / 1000,
      ),
    ).toBeLessThan(5);

    // Carol shares the account: what Bob spent is gone for her too.
    const spentByBob = actualCost(10);
    const second = await post(gateway.url, CAROL, body);
    expect(second.status).toBe(429);
    const error = ((await second.json()) as { error: Record<string, unknown> }).error;
    expect(error).toMatchObject({ code: 'budget_exceeded', type: 'insufficient_quota' });
    expect(error.message).toContain('account budget `acme`');
    // No figure of the account's in the message.
    expect(error.message).not.toMatch(/[0-9]\.[0-9]/);
    expect(second.headers.get('x-should-retry')).toBe('false');
    const retryAfter = Number(second.headers.get('retry-after'));
    // Until Berlin's next midnight.
    const berlinMidnight = nextMidnight('Europe/Berlin');
    expect(Math.abs(retryAfter - (berlinMidnight - Date.now()) / 1000)).toBeLessThan(5);
    expect(second.headers.get('x-ratelimit-remaining-budget')).toBe('0');

    // The SDK sees a RateLimitError with the code, once: no retry loop.
    const before = metricValue(await gateway.metrics(), 'gateway_budget_refusals_total', {
      scope: 'account',
      budget: 'acme',
    });
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: CAROL, maxRetries: 2 });
    const refused = await client.chat.completions
      .create({ model: 'chat', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('budget_exceeded');
    const after = metricValue(await gateway.metrics(), 'gateway_budget_refusals_total', {
      scope: 'account',
      budget: 'acme',
    });
    expect(after! - before!).toBe(1);

    const text = await gateway.metrics();
    expect(budgetGauge(text, 'spent', 'account', 'acme')).toBeCloseTo(spentByBob, 9);
    expect(
      metricValue(text, 'gateway_budget_limit', { scope: 'account', budget: 'acme', window: 'day' }),
    ).toBeCloseTo(reservation * 1.5, 9);
    // The start-up line says where the budgets live.
    expect(
      gateway.program.logs.some((l) =>
        String(l.msg).includes("spend budgets are kept in this process's memory"),
      ),
    ).toBe(true);
  }, 30_000);

  it('a stream whose cost is known only at its end is charged that cost; the client never asked for usage', async () => {
    const gateway = await startGateway(config({ alice: { amount: 100, window: 'hour' } }));
    const body = bodyText('chat', 7, { stream: true });
    const response = await post(gateway.url, ALICE, body);
    const text = await response.text();
    expect(text).toContain('[DONE]');
    // The gateway asked for usage and kept the usage chunk from the client.
    expect(JSON.parse(upstream.requests.at(-1)!.body).stream_options).toEqual({ include_usage: true });
    expect(text).not.toContain('"usage"');
    await untilEquals(
      async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
      actualCost(7).toFixed(9),
    );
  }, 30_000);

  it('a stream cut mid-way is charged its reservation, never zero', async () => {
    const cut = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'par' }, finish_reason: null }] })}\n\n`,
      );
      setTimeout(() => res.destroy(), 50);
    });
    try {
      const gateway = await startGateway(
        {
          auth: { key_definitions: { alice: { key: ALICE, budget: { amount: 100, window: '1h' } } } },
          targets: { chat: { url: cut.url, keys: ['alice'], pricing: PRICING } },
        },
        { args: ['--access-log', 'stdout'] },
      );
      const body = bodyText('chat', 40, { stream: true });
      const response = await post(gateway.url, ALICE, body);
      await response.text().catch(() => '');
      const expected = reservationOf(body, 40);
      await untilEquals(
        async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
        expected.toFixed(9),
      );
      const access = await gateway.program.waitForLog((l) => l.log === 'access', 5000);
      expect(access.cost).toBeCloseTo(expected, 9);
      expect(access.outcome).toBe('upstream_cut');
    } finally {
      await cut.close();
    }
  }, 30_000);

  it('a Messages stream cut after reporting its prompt is charged its reservation, not the prompt alone', async () => {
    const cut = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(messageStart(20));
      res.write(textDelta('par'));
      setTimeout(() => res.destroy(), 50);
    });
    try {
      const gateway = await startGateway(messagesConfig([{ name: 'cut', url: cut.url }]));
      const body = messagesBody(40);
      const response = await postMessages(gateway.url, body);
      await response.text().catch(() => '');
      await untilEquals(
        async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
        reservationOf(body, 40).toFixed(9),
      );
    } finally {
      await cut.close();
    }
  }, 30_000);

  it("a failed-over attempt's reported cost is charged beside the served one's", async () => {
    const broken = await startUpstream((_req, res) => {
      // The prompt is reported, then the stream ends before any content: the pool fails over.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(messageStart(20));
    });
    const whole = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(messageStart(20));
      res.write(textDelta('ok'));
      res.end(messageEnd(10));
    });
    try {
      const gateway = await startGateway(
        messagesConfig([
          { name: 'broken', url: broken.url },
          { name: 'whole', url: whole.url },
        ]),
      );
      const response = await postMessages(gateway.url, messagesBody(40));
      expect(await response.text()).toContain('message_stop');
      const firstAttempt = 20 * PROMPT_PRICE + 1 * COMPLETION_PRICE;
      await untilEquals(
        async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
        (firstAttempt + actualCost(10)).toFixed(9),
      );
    } finally {
      await Promise.all([broken.close(), whole.close()]);
    }
  }, 30_000);

  it('a client that leaves while the provider works is charged its reservation', async () => {
    const slow = await startUpstream(async (_req, res) => {
      await sleep(1000);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion('m')));
    });
    try {
      const gateway = await startGateway({
        auth: { key_definitions: { alice: { key: ALICE, budget: { amount: 100, window: 'day' } } } },
        targets: { chat: { url: slow.url, keys: ['alice'], pricing: PRICING } },
      });
      const body = bodyText('chat', 30);
      const left = fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
        body,
        signal: AbortSignal.timeout(200),
      });
      await expect(left).rejects.toThrow();
      await untilEquals(
        async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
        reservationOf(body, 30).toFixed(9),
      );
    } finally {
      await slow.close();
    }
  }, 30_000);

  it('a rolling window lets spend back in as it passes; a reload keeps what was spent, a new window starts from zero', async () => {
    const body = bodyText('chat', 10);
    const reservation = reservationOf(body, 10);
    const cost = actualCost(10);
    const gateway = await startGateway(config({ target: { amount: reservation * 1.2, window: '3s' } }));

    expect((await post(gateway.url, ALICE, body)).status).toBe(200);
    const refused = await post(gateway.url, ALICE, body);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(3);
    await sleep(Number(refused.headers.get('retry-after')) * 1000 + 100);
    expect((await post(gateway.url, ALICE, body)).status).toBe(200);
    expect(budgetGauge(await gateway.metrics(), 'spent', 'target', 'chat')).toBeCloseTo(cost, 9);

    // A larger amount, same window: the spend stays and the new amount applies to it.
    await gateway.writeConfig(config({ target: { amount: reservation * 3, window: '3s' } }));
    await gateway.waitForReloads(1);
    let text = await gateway.metrics();
    expect(budgetGauge(text, 'spent', 'target', 'chat')).toBeCloseTo(cost, 9);
    expect(budgetGauge(text, 'remaining', 'target', 'chat')).toBeCloseTo(reservation * 3 - cost, 9);
    expect((await post(gateway.url, ALICE, body)).status).toBe(200);

    // Another window: a new budget, from zero.
    await gateway.writeConfig(config({ target: { amount: reservation * 3, window: 'month' } }));
    await gateway.waitForReloads(2);
    text = await gateway.metrics();
    expect(budgetGauge(text, 'spent', 'target', 'chat')).toBe(0);
    expect(
      metricValue(text, 'gateway_budget_limit', { scope: 'target', budget: 'chat', window: 'month' }),
    ).toBeCloseTo(reservation * 3, 9);
  }, 30_000);

  it('Anthropic clients: a translated Messages request is charged, and the refusal comes in their shape, unretried', async () => {
    const gateway = await startGateway(
      config({ alice: { amount: 0.05, window: 'day', default_max_tokens: 10 } }),
    );
    const client = new Anthropic({ baseURL: gateway.url, apiKey: ALICE, maxRetries: 2 });
    const message = await client.messages.create({
      model: 'chat',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(message.usage).toMatchObject({ input_tokens: REPORTED_PROMPT, output_tokens: 10 });
    await untilEquals(
      async () => budgetGauge(await gateway.metrics(), 'spent', 'key', 'alice').toFixed(9),
      actualCost(10).toFixed(9),
    );
    const refused = await client.messages
      .create({ model: 'chat', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    expect((refused as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error' },
    });
    expect(
      metricValue(await gateway.metrics(), 'gateway_budget_refusals_total', {
        scope: 'key',
        budget: 'alice',
      }),
    ).toBe(1);
  });

  it('strict mode answers a budget refusal in its one error shape, keeping the code', async () => {
    const body = bodyText('chat', 10);
    const gateway = await startGateway({
      ...config({ alice: { amount: reservationOf(body, 10) / 2, window: 'week' } }),
      strict_mode: true,
    });
    const refused = await post(gateway.url, ALICE, body);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error: {
        message: 'Rate limit exceeded',
        type: 'rate_limit_error',
        param: null,
        code: 'budget_exceeded',
      },
    });
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a budget on a model without a price is a configuration error naming the model', async () => {
    const path = join(tempDir('gateway-budget-'), 'config.json');
    await writeFile(
      path,
      JSON.stringify({
        auth: { key_definitions: { alice: { key: ALICE, budget: { amount: 5, window: 'month' } } } },
        targets: {
          priced: { url: 'http://127.0.0.1:1', keys: ['alice'], pricing: PRICING },
          free: { providers: [{ name: 'local', url: 'http://127.0.0.1:2' }], keys: ['alice'] },
          open: { url: 'http://127.0.0.1:3' },
        },
      }),
    );
    const program = spawnProgram('gateway', ['validate', path]);
    const { code } = await program.exited;
    const text = program.text();
    expect(code).toBe(1);
    expect(text).toContain('$.auth.key_definitions.alice.budget');
    expect(text).toContain('model `free`');
    expect(text).toContain('provider `local`');
    expect(text).not.toContain('model `open`');
  });
});

/** A pool of Messages providers (passed through) under alice's budget, failing over on a broken stream. */
function messagesConfig(providers: { name: string; url: string }[]) {
  return {
    auth: { key_definitions: { alice: { key: ALICE, budget: { amount: 100, window: 'day' } } } },
    targets: {
      chat: {
        providers: providers.map((p) => ({ ...p, api: 'anthropic' })),
        strategy: 'priority',
        ...(providers.length > 1
          ? { fallback: { on_connection_error: true, max_attempts: providers.length } }
          : {}),
        keys: ['alice'],
        pricing: PRICING,
      },
    },
  };
}

function messagesBody(maxTokens: number): string {
  return JSON.stringify({
    model: 'chat',
    max_tokens: maxTokens,
    stream: true,
    messages: [{ role: 'user', content: 'hello' }],
  });
}

function postMessages(url: string, body: string): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': ALICE, 'anthropic-version': '2023-06-01' },
    body,
  });
}

function sse(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** A Messages stream's opening event, reporting its prompt (and one output token, as Anthropic does). */
function messageStart(inputTokens: number): string {
  return sse('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });
}

function textDelta(text: string): string {
  return (
    sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
    sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })
  );
}

function messageEnd(outputTokens: number): string {
  return (
    sse('content_block_stop', { index: 0 }) +
    sse('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: outputTokens },
    }) +
    sse('message_stop', {})
  );
}

/**
 * The next instant at which the local date in `timeZone` changes, found by walking forward a minute
 * at a time (so a day of 23 or 25 hours is no special case).
 */
function nextMidnight(timeZone: string): number {
  const dateOf = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
  });
  const today = dateOf.format(Date.now());
  let t = Math.ceil(Date.now() / 60_000) * 60_000;
  while (dateOf.format(t) === today) t += 60_000;
  return t;
}

/** Seconds in a duration the way the headers write it (`5h3m2.5s`, `250ms`). */
function durationSeconds(text: string): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?(?:(\d+)ms)?$/.exec(text);
  if (match === null) throw new Error(`not a duration: ${text}`);
  const [, h, m, sec, ms] = match;
  return Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(sec ?? 0) + Number(ms ?? 0) / 1000;
}
