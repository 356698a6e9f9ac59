import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, gatewaysPerTest, type StartedGateway } from '../helpers/gateway.js';
import { jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

let a: RecordingUpstream;
let b: RecordingUpstream;
const startGateway = gatewaysPerTest();

const completion = {
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
};

beforeAll(async () => {
  [a, b] = await Promise.all([
    startUpstream(jsonReply(200, completion)),
    startUpstream(jsonReply(200, completion)),
  ]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});
afterEach(async () => {
  for (const upstream of [a, b]) {
    upstream.requests.length = 0;
    upstream.respondWith(jsonReply(200, completion));
  }
});

const ALL_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

/** Provider a: a numeric thinking budget; supports every effort. */
const budgetTranslation = {
  chat_completions: {
    writes: [
      {
        target_path: '/thinking_token_budget',
        values: { none: 0, minimal: 128, low: 1024, medium: 4096, high: 8192, xhigh: 16384, max: 32768 },
      },
    ],
    unsupported_efforts: [],
  },
  responses: {
    writes: [
      {
        target_path: '/reasoning_budget',
        values: { none: 0, minimal: 128, low: 1024, medium: 4096, high: 8192, xhigh: 16384, max: 32768 },
      },
    ],
    unsupported_efforts: [],
  },
};

/** Provider b: a switch in chat_template_kwargs; cannot do `max`. */
const switchTranslation = {
  chat_completions: {
    writes: [
      {
        target_path: '/chat_template_kwargs/enable_thinking',
        values: { none: false, minimal: true, low: true, medium: true, high: true, xhigh: true },
      },
    ],
    unsupported_efforts: ['max'],
  },
};

async function pool(strict = false): Promise<StartedGateway> {
  const gateway = await startGateway({
    ...(strict ? { strict_mode: true } : {}),
    targets: {
      r: {
        strategy: 'priority',
        fallback: { on_status: [503] },
        providers: [
          { url: a.url, reasoning_translation: budgetTranslation },
          { url: b.url, reasoning_translation: switchTranslation },
        ],
      },
      plain: { url: a.url },
    },
  });
  return gateway;
}

async function post(gateway: StartedGateway, path: string, body: Record<string, unknown>) {
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: string | null } } };
}

const chat = (extra: Record<string, unknown>) => ({
  model: 'r',
  messages: [{ role: 'user', content: 'think' }],
  ...extra,
});

const postChat = (gateway: StartedGateway, extra: Record<string, unknown>) =>
  post(gateway, '/v1/chat/completions', chat(extra));

describe('reasoning-effort translation (spec 2.6)', () => {
  it('translates per provider that is attempted: the budget for a, the switch for b after failover', async () => {
    const gateway = await pool();
    expect((await postChat(gateway, { reasoning_effort: 'low', max_completion_tokens: 2000 })).status).toBe(
      200,
    );
    const toA = JSON.parse(a.requests[0]!.body) as Record<string, unknown>;
    expect(toA.thinking_token_budget).toBe(1024);
    expect(toA).not.toHaveProperty('reasoning_effort');

    a.respondWith(jsonReply(503, {}));
    expect((await postChat(gateway, { reasoning_effort: 'high', max_tokens: 9000 })).status).toBe(200);
    const toB = JSON.parse(b.requests[0]!.body) as Record<string, unknown>;
    expect(toB.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(toB).not.toHaveProperty('thinking_token_budget');
    // The same request went to a first with a's own translation.
    expect((JSON.parse(a.requests[1]!.body) as Record<string, unknown>).thinking_token_budget).toBe(8192);
  });

  it('injects nothing when the client sends no effort', async () => {
    const gateway = await pool();
    await postChat(gateway, {});
    expect(JSON.parse(a.requests[0]!.body)).toEqual(chat({}));
  });

  it('rejects before any attempt: an effort one provider of the pool cannot do, an invalid effort', async () => {
    const gateway = await pool();
    const unsupported = await postChat(gateway, { reasoning_effort: 'max', max_completion_tokens: 99999 });
    expect(unsupported).toMatchObject({
      status: 400,
      body: { error: { code: 'unsupported_reasoning_effort' } },
    });
    const invalid = await postChat(gateway, { reasoning_effort: 'extreme' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error?.code).toBe('invalid_reasoning_effort');
    expect(a.requests).toHaveLength(0);
    expect(b.requests).toHaveLength(0);
    const metrics = await gateway.metrics();
    expect(
      metricValue(metrics, 'gateway_rejections_total', {
        model: 'r',
        status: '400',
        code: 'unsupported_reasoning_effort',
      }),
    ).toBe(1);
  });

  it('checks a numeric budget against the request limit: missing 422, not above 400, never clipped', async () => {
    const gateway = await pool();
    const missing = await postChat(gateway, { reasoning_effort: 'medium' });
    expect(missing).toMatchObject({
      status: 422,
      body: { error: { code: 'reasoning_budget_requires_limit' } },
    });
    const equal = await postChat(gateway, { reasoning_effort: 'medium', max_completion_tokens: 4096 });
    expect(equal).toMatchObject({ status: 400, body: { error: { code: 'reasoning_budget_exceeds_limit' } } });
    const legacyBelow = await postChat(gateway, { reasoning_effort: 'medium', max_tokens: 100 });
    expect(legacyBelow.status).toBe(400);
    expect(a.requests).toHaveLength(0);
    const above = await postChat(gateway, { reasoning_effort: 'medium', max_completion_tokens: 4097 });
    expect(above.status).toBe(200);
    expect((JSON.parse(a.requests[0]!.body) as Record<string, unknown>).thinking_token_budget).toBe(4096);
  });

  it('translates the responses surface (reasoning.effort with max_output_tokens)', async () => {
    a.respondWith(
      jsonReply(200, {
        id: 'resp',
        object: 'response',
        created_at: 1,
        model: 'm',
        output: [],
        status: 'completed',
      }),
    );
    const gateway = await pool();
    const missing = await post(gateway, '/v1/responses', {
      model: 'r',
      input: 'hi',
      reasoning: { effort: 'low' },
    });
    expect(missing.status).toBe(422);
    const ok = await post(gateway, '/v1/responses', {
      model: 'r',
      input: 'hi',
      reasoning: { effort: 'low' },
      max_output_tokens: 5000,
    });
    expect(ok.status).toBe(200);
    const sent = JSON.parse(a.requests[0]!.body) as Record<string, unknown>;
    expect(sent.reasoning_budget).toBe(1024);
    expect(sent).not.toHaveProperty('reasoning');
  });

  it('refuses provider-native reasoning controls in both modes', async () => {
    for (const strict of [false, true]) {
      const gateway = await pool(strict);
      const refused = await postChat(gateway, { thinking_token_budget: 1000 });
      expect(refused.status).toBe(400);
      expect(a.requests).toHaveLength(0);
    }
  });

  it('non-strict forwards other native fields unchanged; strict rejects them', async () => {
    const loose = await pool(false);
    const kwargs = { chat_template_kwargs: { enable_thinking: false } };
    expect((await post(loose, '/v1/chat/completions', { ...chat(kwargs), model: 'plain' })).status).toBe(200);
    expect(JSON.parse(a.requests[0]!.body)).toMatchObject(kwargs);

    const strict = await pool(true);
    const refused = await post(strict, '/v1/chat/completions', { ...chat(kwargs), model: 'plain' });
    expect(refused.status).toBe(400);
    expect(a.requests).toHaveLength(1);
  });

  it('strict mode: the schema and unsupported-parameter checks answer before reasoning validation (spec 4.4 rule 6)', async () => {
    const gateway = await pool(true);
    const unlimited = chat({ reasoning_effort: 'high' });
    const reasoning = await post(gateway, '/v1/chat/completions', unlimited);
    expect(reasoning).toMatchObject({
      status: 422,
      body: { error: { code: 'reasoning_budget_requires_limit' } },
    });

    const schema = await post(gateway, '/v1/chat/completions', { ...unlimited, n: 'two' });
    expect(schema).toMatchObject({ status: 400, body: { error: { code: null, param: 'n' } } });

    const unsupported = await post(gateway, '/v1/chat/completions', {
      ...unlimited,
      chat_template_kwargs: { enable_thinking: true },
    });
    expect(unsupported).toMatchObject({ status: 400, body: { error: { code: 'unsupported_parameter' } } });
    expect(a.requests).toHaveLength(0);
  });

  it('applies configured translations in strict mode too', async () => {
    const gateway = await pool(true);
    expect(
      (await postChat(gateway, { reasoning_effort: 'minimal', max_completion_tokens: 500 })).status,
    ).toBe(200);
    expect((JSON.parse(a.requests[0]!.body) as Record<string, unknown>).thinking_token_budget).toBe(128);
  });

  it('does not advertise reasoning capabilities in the models list', async () => {
    const gateway = await pool();
    const list = (await (await fetch(`${gateway.url}/v1/models`)).json()) as {
      data: Record<string, unknown>[];
    };
    for (const model of list.data)
      expect(Object.keys(model).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
    expect(ALL_EFFORTS.some((e) => JSON.stringify(list).includes(`"${e}"`))).toBe(false);
  });
});
