import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABRUPT_FAULT_MODES, FAULT_MODES, type FaultMode } from '../fixtures/fault-modes.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { ENDINGS, attemptsText, errorsText, settle } from './matrix-cells.js';
import { errorMessage, eventLabel, parseMessagesSse, type NamedEvent } from './messages-events.js';
import { raisedWords, streamThroughSdk, type SdkExchange } from './messages-sdk.js';
import {
  extractSection,
  renderMessagesFaultMatrix,
  type MessagesMatrixRow,
  type Scenario,
} from './report.ts';
import {
  SOAK,
  deltas,
  latency,
  parseSse,
  postJson,
  scrape,
  simModels,
  sumOf,
  waitSimIdle,
  writeResults,
  type Exchange,
} from './support.js';

/**
 * The fault matrix on the Anthropic Messages API: each of the simulator's eleven fault modes
 * through the gateway's `/v1/messages`, read by the official `@anthropic-ai/sdk` as an application
 * reads a stream (`messages.stream(...).finalMessage()`), in five setups: passed through to a
 * provider that speaks the API, translated for one that speaks chat completions, passed through in
 * strict mode, and a fallback pool of each kind with the fault before the first content delta. For
 * each cell: what the SDK returned or raised, the events on the wire, how the response ended,
 * whether it failed over, the attempt and error metrics, and whether every limit slot was released.
 * Above all: a broken stream makes the SDK raise; it never hands over a truncated message as
 * complete. The observed rows are written for the report and compared with docs/reliability.md.
 */

const KEY = 'sk-messages-matrix-7d20c4';
const GIVE_UP_MS = 2_500;
const DEADLINE_MS = 1_000;
const ROUNDS = SOAK ? 3 : 1;

type Api = 'anthropic' | 'openai';

interface Setup extends Scenario {
  gateway: 'nonStrict' | 'strict';
  model: string;
  /** What the provider speaks: the Messages API (passed through) or chat completions (translated). */
  api: Api;
  afterChunks: number;
  strict: boolean;
  pool: boolean;
}

const SETUPS: Setup[] = [
  {
    id: 'passed-through',
    description:
      'non-strict single provider with `api: anthropic`: the stream is passed through byte for byte',
    gateway: 'nonStrict',
    model: 'messages',
    api: 'anthropic',
    afterChunks: 2,
    strict: false,
    pool: false,
  },
  {
    id: 'translated',
    description:
      'non-strict single provider speaking chat completions (`api: openai`, the default): the chat stream is translated to Messages events',
    gateway: 'nonStrict',
    model: 'chat',
    api: 'openai',
    afterChunks: 2,
    strict: false,
    pool: false,
  },
  {
    id: 'strict-passed-through',
    description: 'strict mode, single provider with `api: anthropic`',
    gateway: 'strict',
    model: 'messages',
    api: 'anthropic',
    afterChunks: 2,
    strict: true,
    pool: false,
  },
  {
    id: 'pool-passed-through',
    description:
      'non-strict priority pool of two `api: anthropic` providers (simulator first, healthy backup second; ' +
      `\`on_status: [5]\`, \`first_token_timeout_ms: ${DEADLINE_MS}\`) with \`after_chunks=0\`: ` +
      'the fault comes before the first content delta',
    gateway: 'nonStrict',
    model: 'pool-messages',
    api: 'anthropic',
    afterChunks: 0,
    strict: false,
    pool: true,
  },
  {
    id: 'pool-translated',
    description: 'the same pool of two chat providers (translated), `after_chunks=0`',
    gateway: 'nonStrict',
    model: 'pool-chat',
    api: 'openai',
    afterChunks: 0,
    strict: false,
    pool: true,
  },
];

// --- the backup provider: a whole answer on either API ---------------------------------------

const BACKUP_TEXT = 'BACKUP';

function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

const BACKUP_MESSAGES_STREAM = [
  sseEvent('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_backup',
      type: 'message',
      role: 'assistant',
      model: 'backup',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 0 },
    },
  }),
  sseEvent('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  }),
  sseEvent('content_block_delta', {
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: BACKUP_TEXT },
  }),
  sseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
  sseEvent('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 1 },
  }),
  sseEvent('message_stop', { type: 'message_stop' }),
].join('');

const BACKUP_CHAT_STREAM = [
  {
    id: 'backup-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'backup',
    choices: [{ index: 0, delta: { role: 'assistant', content: BACKUP_TEXT }, finish_reason: 'stop' }],
  },
  {
    id: 'backup-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'backup',
    choices: [],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  },
]
  .map((frame) => `data: ${JSON.stringify(frame)}\n\n`)
  .concat('data: [DONE]\n\n')
  .join('');

let sim: StartedSim;
let backup: RecordingUpstream;
const gateways: Partial<Record<Setup['gateway'], StartedGateway>> = {};

beforeAll(async () => {
  const models = simModels({ zero: latency(0, 2, 6) });
  [sim, backup] = await Promise.all([
    startSim(['--enable-directives', '--model', models.zero!]),
    startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(req.url.includes('/messages') ? BACKUP_MESSAGES_STREAM : BACKUP_CHAT_STREAM);
    }),
  ]);
  const simUrl = `${sim.baseUrl}/v1`;
  const auth = { key_definitions: { matrix: { key: KEY, labels: { account: 'matrix' } } } };
  const limits = { keys: ['matrix'], concurrency_limit: { max_concurrent_requests: 1 }, inflight_limit: 1 };
  const pool = (api: Api): Record<string, unknown> => ({
    strategy: 'priority',
    fallback: { on_status: [5], first_token_timeout_ms: DEADLINE_MS, aimd: false },
    providers: [
      {
        url: simUrl,
        name: 'sim',
        api,
        gateway_model: 'zero',
        concurrency_limit: { max_concurrent_requests: 1 },
      },
      { url: `${backup.url}/v1`, name: 'backup', api },
    ],
    ...limits,
  });
  [gateways.nonStrict, gateways.strict] = await Promise.all([
    startGateway({
      auth,
      targets: {
        messages: { url: simUrl, api: 'anthropic', gateway_model: 'zero', ...limits },
        chat: { url: simUrl, gateway_model: 'zero', ...limits },
        'pool-messages': pool('anthropic'),
        'pool-chat': pool('openai'),
      },
    }),
    startGateway({
      strict_mode: true,
      auth,
      targets: { messages: { url: simUrl, api: 'anthropic', gateway_model: 'zero', ...limits } },
    }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([gateways.nonStrict?.stop(), gateways.strict?.stop()]);
  await Promise.all([sim?.stop(), backup?.close()]);
});

// --- requests ------------------------------------------------------------------------------------

const MESSAGES: Anthropic.MessageParam[] = [{ role: 'user', content: 'hi' }];
const MAX_TOKENS = 64;

const directive = (mode: FaultMode, afterChunks: number): string =>
  `${mode};after_chunks=${afterChunks};delay_ms=5`;

/**
 * What the simulator itself sends for a fault on the API the gateway asks it in, asked directly
 * (the fault path is deterministic): the Messages stream the gateway passes through, or the chat
 * stream it translates (asked as the translation asks, with `include_usage`).
 */
const baselines = new Map<string, Exchange>();
async function baseline(api: Api, afterChunks: number, mode: FaultMode): Promise<Exchange> {
  const key = `${api}/${afterChunks}/${mode}`;
  let seen = baselines.get(key);
  if (!seen) {
    const body =
      api === 'anthropic'
        ? { model: 'zero', max_tokens: MAX_TOKENS, messages: MESSAGES, stream: true }
        : {
            model: 'zero',
            max_tokens: MAX_TOKENS,
            messages: MESSAGES,
            stream: true,
            stream_options: { include_usage: true },
          };
    seen = await postJson(
      sim.baseUrl,
      api === 'anthropic' ? '/v1/messages' : '/v1/chat/completions',
      body,
      { 'x-sim-fault': directive(mode, afterChunks) },
      { giveUpMs: 600 },
    );
    baselines.set(key, seen);
    await waitSimIdle(sim.baseUrl);
  }
  return seen;
}

// --- describing what the SDK received ------------------------------------------------------------

/** `message_start, ping, text block, text delta x2, error api_error (gateway's)`, plus a torn frame. */
function summarize(events: NamedEvent[], trailing: string, upstream: string): string {
  const labels = events.map((event) => {
    const label = eventLabel(event);
    const message = errorMessage(event);
    if (message === undefined) return label;
    // Whose words the client reads: the provider's message, or the gateway's own.
    return `${label} (${upstream.includes(JSON.stringify(message).slice(1, -1)) ? "provider's" : "gateway's"})`;
  });
  const runs: string[] = [];
  for (let i = 0; i < labels.length;) {
    let j = i;
    while (j < labels.length && labels[j] === labels[i]) j++;
    runs.push(j - i > 1 ? `${labels[i]} x${j - i}` : labels[i]!);
    i = j;
  }
  if (trailing.trim().length > 0) runs.push('torn frame');
  return runs.length === 0 ? 'nothing' : runs.join(', ');
}

/** The text of a message's text blocks. */
function textOf(message: Anthropic.Message): string {
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

/** What the application got from `finalMessage()`, in words. */
function sdkWords(got: SdkExchange): string {
  if (got.message === undefined) return `raised ${raisedWords(got.raised)}`;
  return `returned a message (\`${String(got.message.stop_reason)}\`, ${got.message.content.length} block(s))`;
}

// --- expectations --------------------------------------------------------------------------------

interface Expected {
  end: Exchange['end'];
  /** What `finalMessage()` does: `returned` (a whole message), or the class of what it raised. */
  sdk: 'returned' | 'APIError' | 'APIUserAbortError' | 'AnthropicError';
  failover: boolean;
  outcome: string;
  /** The last event the client must see, as labelled above (without whose words it carries). */
  last?: string;
}

function expectedFor(setup: Setup, mode: FaultMode): Expected {
  const abrupt = ABRUPT_FAULT_MODES.has(mode);
  // A stream that ends without its end marker (`message_stop`, a chat stream's `[DONE]`) was cut.
  // On the Messages API, a data line without an event name is no event the API knows: the SDK skips
  // it, and the stream it ends was cut too.
  const unterminated = mode === 'no_done' || (mode === 'cancelled_499' && setup.api === 'anthropic');
  if (setup.pool) {
    // Nothing reaches the client before the first content delta: a broken or cut stream, a stall
    // past the first-token deadline or a 5xx-typed error event before it fails over, and the
    // backup serves the whole answer.
    if (abrupt || unterminated || mode === 'stall' || mode === 'error_envelope_200')
      return { end: 'clean', sdk: 'returned', failover: true, outcome: 'completed', last: 'message_stop' };
  }
  // The application gives up on a stalled stream: its leaving ends the request.
  if (mode === 'stall')
    return { end: 'gave_up', sdk: 'APIUserAbortError', failover: false, outcome: 'client_cancelled' };
  if (mode === 'no_usage') {
    // A whole stream. Passed through, it keeps the provider's events without `usage`, and the SDK
    // raises where it reads `message_delta`'s `usage.output_tokens`; translated, the gateway writes
    // the usage it has.
    const sdk = setup.api === 'anthropic' ? 'AnthropicError' : 'returned';
    return { end: 'clean', sdk, failover: false, outcome: 'completed', last: 'message_stop' };
  }
  const cut = abrupt || unterminated;
  const outcome = cut ? 'upstream_cut' : 'upstream_error';
  const errorType: Partial<Record<FaultMode, string>> = {
    // A chat provider's error object has no Anthropic type: its status (502) stands for api_error.
    error_envelope_200: setup.api === 'openai' ? 'api_error' : 'overloaded_error',
    error_400_in_sse: 'invalid_request_error',
    // A chat provider's 499 is a client error (4xx).
    ...(setup.api === 'openai' ? { cancelled_499: 'invalid_request_error' } : {}),
  };
  // Passed through in strict mode, a stream torn inside an event has sent half an event: no event
  // can follow it, and it is cut like any passed-through stream.
  if (setup.strict && setup.api === 'anthropic' && mode === 'cut_mid_frame')
    return { end: 'transport_error', sdk: 'AnthropicError', failover: false, outcome };
  // Translated streams and strict mode end a cut stream with the gateway's error event, cleanly; an
  // error event of the provider's ends the stream cleanly on every route.
  if (setup.api === 'openai' || setup.strict || !cut)
    return {
      end: 'clean',
      sdk: 'APIError',
      failover: false,
      outcome,
      last: `error ${errorType[mode] ?? 'api_error'}`,
    };
  // Passed through: a stream that did not end with its message_stop is cut.
  const last: Partial<Record<FaultMode, string>> = {
    no_done: 'message_delta (end_turn)',
    cancelled_499: 'unnamed error frame',
  };
  return {
    end: 'transport_error',
    sdk: 'AnthropicError',
    failover: false,
    outcome,
    ...(last[mode] === undefined ? {} : { last: last[mode] }),
  };
}

// --- one cell ------------------------------------------------------------------------------------

async function runCell(setup: Setup, mode: FaultMode): Promise<MessagesMatrixRow> {
  const gateway = gateways[setup.gateway]!;
  const upstream = await baseline(setup.api, setup.afterChunks, mode);
  const before = await scrape(gateway.adminUrl);
  const backupBefore = backup.requests.length;

  const got = await streamThroughSdk({
    baseURL: gateway.url,
    apiKey: KEY,
    body: { model: setup.model, max_tokens: MAX_TOKENS, messages: MESSAGES },
    headers: { 'x-sim-fault': directive(mode, setup.afterChunks) },
    giveUpMs: GIVE_UP_MS,
  });

  const { gaugeZero, upstreamIdle, after } = await settle(gateway.adminUrl, sim.baseUrl, setup.model);
  const failedOver = backup.requests.length - backupBefore;
  const probe = await postJson(
    gateway.url,
    '/v1/messages',
    { model: setup.model, max_tokens: MAX_TOKENS, messages: MESSAGES },
    { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
  );
  await waitSimIdle(sim.baseUrl);
  const slotsReleased = gaugeZero && upstreamIdle && probe.status === 200;

  const parsed = parseMessagesSse(got.text);
  const sees = summarize(parsed.events, parsed.trailing, upstream.text);
  const stopSeen = got.events.includes('message_stop');
  const where = `${setup.id} / ${mode}`;

  // --- invariants of every cell --------------------------------------------------------------
  // The property an application relies on: a message handed over is a whole message. A stream
  // that broke makes the SDK raise.
  if (got.message !== undefined) {
    expect.soft(stopSeen, `${where}: the SDK returned a message without message_stop`).toBe(true);
    expect
      .soft(got.message.stop_reason, `${where}: the SDK returned a message without a stop reason`)
      .not.toBeNull();
    if (failedOver > 0) expect.soft(textOf(got.message), `${where}: the backup's text`).toBe(BACKUP_TEXT);
  }
  // An application that iterates the events takes a stream that ends normally for a whole one: a
  // response that ends cleanly ends with message_stop or an error event.
  if (got.end === 'clean') {
    const last = parsed.events.at(-1);
    expect
      .soft(last?.name === 'message_stop' || last?.name === 'error', `${where}: a clean end after "${sees}"`)
      .toBe(true);
  }
  // A message_stop reaches the client only if the provider that served ended its stream: never fabricated.
  if (stopSeen && failedOver === 0) {
    const upstreamEnded =
      setup.api === 'anthropic'
        ? parseMessagesSse(upstream.text).events.some((e) => e.name === 'message_stop')
        : parseSse(upstream.text).events.includes('[DONE]');
    expect.soft(upstreamEnded, `${where}: message_stop without the provider's end`).toBe(true);
  }
  // One provider's stream only: never spliced.
  if (failedOver > 0)
    expect.soft(got.text, `${where}: simulator bytes in a failed-over answer`).not.toMatch(/sim[-_]fault/);
  else expect.soft(got.text, `${where}: backup bytes without a failover`).not.toContain(BACKUP_TEXT);
  if (setup.api === 'anthropic' && failedOver > 0)
    expect.soft(got.text, `${where}: the backup's stream, byte for byte`).toBe(BACKUP_MESSAGES_STREAM);
  if (setup.api === 'anthropic' && failedOver === 0 && got.status === 200) {
    // Passed through: the provider's bytes, cut where they were cut; strict mode may add its own
    // error event after them.
    const own = setup.strict ? ownTail(got.text, upstream.text) : '';
    const passed = got.bytes.subarray(0, got.bytes.length - Buffer.byteLength(own));
    expect
      .soft(
        upstream.bytes.subarray(0, passed.length).equals(passed),
        `${where}: bytes differ from the upstream's`,
      )
      .toBe(true);
    if (got.end === 'clean' && own === '')
      expect.soft(got.bytes.equals(upstream.bytes), `${where}: clean end with missing bytes`).toBe(true);
  }
  // A stream the gateway writes (translated), or ends with its own event (strict), has no torn frame.
  if (setup.api === 'openai' || (setup.strict && got.end === 'clean'))
    expect.soft(parsed.trailing, `${where}: torn frame in a stream the gateway writes`).toBe('');
  expect
    .soft(
      sumOf(after, 'gateway_upstream_attempts_total', { model: setup.model, outcome: 'committed' }) -
        sumOf(before, 'gateway_upstream_attempts_total', { model: setup.model, outcome: 'committed' }),
      `${where}: committed attempts`,
    )
    .toBe(1);
  const outcomes = deltas(before, after, 'gateway_requests_total').filter(
    (d) => d.labels.model === setup.model,
  );
  expect
    .soft(
      outcomes.map((d) => d.delta),
      `${where}: requests counted`,
    )
    .toEqual([1]);
  const outcome = outcomes[0]?.labels.outcome ?? '?';

  // --- the expected behaviour of this cell ---------------------------------------------------
  const expected = expectedFor(setup, mode);
  const row: MessagesMatrixRow = {
    mode,
    scenario: setup.id,
    status: got.status === null ? 'none' : String(got.status),
    sees,
    end: ENDINGS[got.end],
    sdk: sdkWords(got),
    failover: failedOver > 0 ? 'yes: backup served' : 'no',
    outcome,
    attempts: attemptsText(before, after, setup.model),
    upstreamErrors: errorsText(before, after, setup.model),
    slots: slotsReleased ? 'yes' : 'NO',
  };
  expect.soft(got.status, `${where}: status`).toBe(200);
  expect.soft(got.end, `${where}: end (${sees})`).toBe(expected.end);
  expect
    .soft(
      got.message === undefined ? (got.raised as Error).constructor.name : 'returned',
      `${where}: the SDK (${row.sdk})`,
    )
    .toBe(expected.sdk);
  expect.soft(failedOver > 0, `${where}: failover`).toBe(expected.failover);
  expect.soft(outcome, `${where}: outcome`).toBe(expected.outcome);
  if (expected.last !== undefined) {
    const last = parsed.events.at(-1);
    expect.soft(last && eventLabel(last), `${where}: last event of "${sees}"`).toBe(expected.last);
  }
  expect
    .soft(
      slotsReleased,
      `${where}: slots (gauge ${gaugeZero}, upstream idle ${upstreamIdle}, next request ${probe.status})`,
    )
    .toBe(true);
  return row;
}

/** The gateway's own last event when it is not the provider's (strict mode's closing error), or ''. */
function ownTail(text: string, upstream: string): string {
  const at = text.lastIndexOf('event: ');
  if (at < 0) return '';
  const tail = text.slice(at);
  return upstream.includes(tail) ? '' : tail;
}

// --- the matrix ----------------------------------------------------------------------------------

const rounds: MessagesMatrixRow[][] = [];
const started = performance.now();

describe('fault matrix on the Messages API: eleven simulator faults through the Anthropic SDK', () => {
  for (let round = 0; round < ROUNDS; round++) {
    for (const setup of SETUPS) {
      it(`${setup.id}${ROUNDS > 1 ? ` (round ${round + 1})` : ''}`, { timeout: 120_000 }, async () => {
        const rows = (rounds[round] ??= []);
        for (const mode of FAULT_MODES) rows.push(await runCell(setup, mode));
      });
    }
  }

  it('is the same in every round, is written for the report, and matches docs/reliability.md', () => {
    const rows = rounds[0] ?? [];
    expect(rows).toHaveLength(SETUPS.length * FAULT_MODES.length);
    for (const other of rounds.slice(1)) expect(other).toEqual(rows);
    // Sorted by fault, then setup, so one fault's behaviour across setups reads together.
    const ordered = FAULT_MODES.flatMap((mode) =>
      SETUPS.map((s) => rows.find((r) => r.mode === mode && r.scenario === s.id)!),
    );
    const scenarios = SETUPS.map(({ id, description }) => ({ id, description }));
    writeResults('messages-fault-matrix', {
      scenarios,
      rows: ordered,
      figures: {
        faultRequests: rows.length * ROUNDS,
        rounds: ROUNDS,
        durationSeconds: (performance.now() - started) / 1000,
      },
    });
    let committed = '';
    try {
      committed = readFileSync(join(ROOT, 'docs/reliability.md'), 'utf8');
    } catch {
      // missing: reported below
    }
    const section = extractSection(committed, 'messages-fault-matrix');
    expect(
      section === renderMessagesFaultMatrix({ scenarios, rows: ordered }),
      'docs/reliability.md does not show this fault matrix: run node test/reliability/render-report.ts',
    ).toBe(true);
  });
});
