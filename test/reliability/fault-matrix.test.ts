import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABRUPT_FAULT_MODES, FAULT_MODES, type FaultMode } from '../fixtures/fault-modes.js';
import { STANDARD_MESSAGES } from '../fixtures/strict-errors.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { ROOT } from '../helpers/process.js';
import { startSim, type StartedSim } from '../helpers/sim.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { extractSection, renderFaultMatrix, type MatrixRow, type Scenario } from './report.ts';
import { ENDINGS, attemptsText, errorsText, settle } from './matrix-cells.js';
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
 * The fault matrix of issue 10: each of the simulator's eleven fault modes through the gateway in
 * five setups (non-strict, strict with an untrusted and a trusted provider, a fallback pool with the
 * fault after and before the first frame). For each cell: what the client received, byte for byte
 * where the gateway passes bytes through; whether it failed over; the attempt and error metrics; and
 * whether every limit slot was released. The observed rows are written for the report and compared
 * with the committed docs/reliability.md.
 */

const KEY = 'sk-matrix-4f1c9a7e2b';
const GIVE_UP_MS = 2_500;
const DEADLINE_MS = 1_000;
const ROUNDS = SOAK ? 3 : 1;

type Endpoint = 'chat' | 'completions';

interface Setup extends Scenario {
  gateway: 'nonStrict' | 'strict';
  model: string;
  endpoint: Endpoint;
  afterChunks: number;
  strict: boolean;
}

const SETUPS: Setup[] = [
  {
    id: 'non-strict',
    description: 'non-strict single provider; streamed chat completion',
    gateway: 'nonStrict',
    model: 'single',
    endpoint: 'chat',
    afterChunks: 2,
    strict: false,
  },
  {
    id: 'strict-untrusted',
    description: 'strict mode, untrusted provider; streamed chat completion',
    gateway: 'strict',
    model: 'untrusted',
    endpoint: 'chat',
    afterChunks: 2,
    strict: true,
  },
  {
    id: 'strict-trusted',
    description: 'strict mode, trusted provider (`trusted: true`); streamed chat completion',
    gateway: 'strict',
    model: 'trusted',
    endpoint: 'chat',
    afterChunks: 2,
    strict: true,
  },
  {
    id: 'pool-after-first-frame',
    description:
      'non-strict priority pool (simulator first, healthy backup second; `on_status: [5]`, ' +
      `\`first_token_timeout_ms: ${DEADLINE_MS}\`); streamed chat completion: the role frame commits the stream before the fault`,
    gateway: 'nonStrict',
    model: 'pool',
    endpoint: 'chat',
    afterChunks: 2,
    strict: false,
  },
  {
    id: 'pool-before-first-frame',
    description:
      'the same pool; streamed text completion with `after_chunks=0`: the fault comes before any data frame',
    gateway: 'nonStrict',
    model: 'pool',
    endpoint: 'completions',
    afterChunks: 0,
    strict: false,
  },
];

let sim: StartedSim;
let backup: RecordingUpstream;
const gateways: Partial<Record<Setup['gateway'], StartedGateway>> = {};

const backupChat = {
  id: 'backup-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'backup',
  choices: [{ index: 0, delta: { content: 'BACKUP' }, finish_reason: 'stop' }],
};
const backupText = {
  id: 'backup-1',
  object: 'text_completion',
  created: 1,
  model: 'backup',
  choices: [{ index: 0, text: 'BACKUP', finish_reason: 'stop' }],
};

beforeAll(async () => {
  const models = simModels({ zero: latency(0, 2, 6) });
  [sim, backup] = await Promise.all([
    startSim(['--enable-directives', '--model', models.zero!]),
    startUpstream((req, res) => {
      const body = JSON.parse(req.body || '{}') as { stream?: boolean };
      const chat = req.url.includes('chat');
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(chat ? backupChat : backupText)}\n\ndata: [DONE]\n\n`);
        return;
      }
      const text = JSON.stringify({
        id: 'backup-2',
        object: 'chat.completion',
        created: 1,
        model: 'backup',
        choices: [],
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    }),
  ]);
  const simUrl = `${sim.baseUrl}/v1`;
  const auth = { key_definitions: { matrix: { key: KEY, labels: { account: 'matrix' } } } };
  const limits = { keys: ['matrix'], concurrency_limit: { max_concurrent_requests: 1 }, inflight_limit: 1 };
  [gateways.nonStrict, gateways.strict] = await Promise.all([
    startGateway({
      auth,
      targets: {
        single: { url: simUrl, gateway_model: 'zero', ...limits },
        pool: {
          strategy: 'priority',
          fallback: { on_status: [5], first_token_timeout_ms: DEADLINE_MS, aimd: false },
          providers: [
            {
              url: simUrl,
              name: 'sim',
              gateway_model: 'zero',
              concurrency_limit: { max_concurrent_requests: 1 },
            },
            { url: backup.url, name: 'backup' },
          ],
          ...limits,
        },
      },
    }),
    startGateway({
      strict_mode: true,
      auth,
      targets: {
        untrusted: { url: simUrl, gateway_model: 'zero', ...limits },
        trusted: { url: simUrl, gateway_model: 'zero', trusted: true, ...limits },
      },
    }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([gateways.nonStrict?.stop(), gateways.strict?.stop()]);
  await Promise.all([sim?.stop(), backup?.close()]);
});

// --- requests ------------------------------------------------------------------------------------

const pathOf = (endpoint: Endpoint): string =>
  endpoint === 'chat' ? '/v1/chat/completions' : '/v1/completions';

function bodyOf(endpoint: Endpoint, model: string, stream: boolean): Record<string, unknown> {
  return endpoint === 'chat'
    ? { model, messages: [{ role: 'user', content: 'hi' }], stream }
    : { model, prompt: 'hi', stream };
}

const directive = (mode: FaultMode, afterChunks: number): string =>
  `${mode};after_chunks=${afterChunks};delay_ms=5`;

/** What the simulator itself sends for a fault, asked directly (the fault path is deterministic). */
const baselines = new Map<string, Exchange>();
async function baseline(endpoint: Endpoint, afterChunks: number, mode: FaultMode): Promise<Exchange> {
  const key = `${endpoint}/${afterChunks}/${mode}`;
  let seen = baselines.get(key);
  if (!seen) {
    seen = await postJson(
      sim.baseUrl,
      pathOf(endpoint),
      bodyOf(endpoint, 'zero', true),
      { 'x-sim-fault': directive(mode, afterChunks) },
      { giveUpMs: 600 },
    );
    baselines.set(key, seen);
    await waitSimIdle(sim.baseUrl);
  }
  return seen;
}

// --- describing what the client received ---------------------------------------------------------

function labelOf(event: Record<string, unknown> | string): string {
  if (event === '[DONE]') return '[DONE]';
  if (typeof event === 'string') return 'non-JSON data';
  if ('error' in event && event.error !== null && typeof event.error === 'object') {
    const error = event.error as { message?: unknown; code?: unknown };
    const standard = Object.keys(event).length === 1 && STANDARD_MESSAGES.has(String(error.message));
    return `error ${String(error.code)} (${standard ? 'standard' : "provider's"})`;
  }
  if (event.object === 'error') return `error ${String(event.code)} (provider's)`;
  if (event.id === 'backup-1') return 'backup frame';
  const choices = event.choices as
    { delta?: Record<string, unknown>; text?: string; finish_reason?: unknown }[] | undefined;
  if (Array.isArray(choices) && choices.length === 0) return event.usage ? 'usage' : 'empty choices';
  const choice = choices?.[0];
  if (!choice) return 'unknown object';
  const delta = choice.delta;
  if (delta) {
    if (delta.tool_calls) return 'tool call';
    if (delta.reasoning_content || delta.reasoning) return 'reasoning';
    if (typeof delta.content === 'string' && delta.content.length > 0) return 'content';
    if (delta.role) return 'role';
    if (choice.finish_reason) return 'finish';
    return 'empty delta';
  }
  if (typeof choice.text === 'string' && choice.text.length > 0) return 'text';
  if (choice.finish_reason) return 'finish';
  return 'empty text';
}

/** `role, content x2, error 502 (standard)`, plus a torn frame if bytes follow the last event. */
function summarize(text: string): string {
  const parsed = parseSse(text);
  const labels = parsed.events.map(labelOf);
  const runs: string[] = [];
  for (let i = 0; i < labels.length;) {
    let j = i;
    while (j < labels.length && labels[j] === labels[i]) j++;
    runs.push(j - i > 1 ? `${labels[i]} x${j - i}` : labels[i]!);
    i = j;
  }
  if (parsed.trailing.trim().length > 0) runs.push('torn frame');
  return runs.length === 0 ? 'nothing' : runs.join(', ');
}

// --- expectations --------------------------------------------------------------------------------

interface Expected {
  end: Exchange['end'];
  done: boolean;
  failover: boolean;
  /** The request's `outcome` label: a stream that did not end with its `[DONE]` is never completed. */
  outcome: string;
  /** The last event the client must see, as labelled above. */
  last?: string;
}

function expectedFor(setup: Setup, mode: FaultMode): Expected {
  if (setup.id === 'pool-before-first-frame') {
    if (ABRUPT_FAULT_MODES.has(mode) || mode === 'stall' || mode === 'error_envelope_200') {
      // No byte reached the client: the attempt is abandoned and the backup serves the whole answer.
      return { end: 'clean', done: true, failover: true, last: '[DONE]', outcome: 'completed' };
    }
  }
  // The client gives up on a stalled stream: its leaving ends the request.
  if (mode === 'stall') return { end: 'gave_up', done: false, failover: false, outcome: 'client_cancelled' };
  if (mode === 'no_usage')
    return { end: 'clean', done: true, failover: false, last: '[DONE]', outcome: 'completed' };
  if (!setup.strict) {
    if (ABRUPT_FAULT_MODES.has(mode))
      return { end: 'transport_error', done: false, failover: false, outcome: 'upstream_cut' };
    // A stream without its [DONE] is never ended cleanly: the client sees a broken transfer after
    // the provider's bytes, whatever its last frame said. An error event is a stream's last word:
    // the [DONE] a provider sends after it is not forwarded.
    const last: Record<string, string> = {
      error_envelope_200: "error 502 (provider's)",
      no_done: 'finish',
      error_400_in_sse: "error 400 (provider's)",
      cancelled_499: "error 499 (provider's)",
    };
    return {
      end: 'transport_error',
      done: false,
      failover: false,
      last: last[mode]!,
      outcome: mode === 'no_done' ? 'upstream_cut' : 'upstream_error',
    };
  }
  const trusted = setup.id === 'strict-trusted';
  // A broken stream always ends with the gateway's own error event, trusted or not; it was cut. So
  // does one that ended without its [DONE].
  if (ABRUPT_FAULT_MODES.has(mode) || mode === 'no_done')
    return {
      end: 'clean',
      done: false,
      failover: false,
      last: 'error 502 (standard)',
      outcome: 'upstream_cut',
    };
  const embedded: Record<string, [string, string]> = {
    error_envelope_200: ['error 502 (standard)', "error 502 (provider's)"],
    error_400_in_sse: ['error 400 (standard)', "error 400 (provider's)"],
    cancelled_499: ['error 502 (standard)', "error 499 (provider's)"],
  };
  return {
    end: 'clean',
    done: false,
    failover: false,
    last: embedded[mode]![trusted ? 1 : 0],
    outcome: 'upstream_error',
  };
}

// --- one cell ------------------------------------------------------------------------------------

const PROVIDER_DETAIL = [
  'simulated',
  'Simulated',
  'metadata',
  'CancelledError',
  'BadRequestError',
  'request_cancelled',
];

async function runCell(setup: Setup, mode: FaultMode): Promise<MatrixRow> {
  const gateway = gateways[setup.gateway]!;
  const upstream = await baseline(setup.endpoint, setup.afterChunks, mode);
  const before = await scrape(gateway.adminUrl);
  const backupBefore = backup.requests.length;

  const got = await postJson(
    gateway.url,
    pathOf(setup.endpoint),
    bodyOf(setup.endpoint, setup.model, true),
    { authorization: `Bearer ${KEY}`, 'x-sim-fault': directive(mode, setup.afterChunks) },
    { giveUpMs: GIVE_UP_MS },
  );

  // Slots: the in-flight gauge returns to 0, the upstream request is over (a stalled one aborted),
  // and the next request with the same key is admitted by every limit (target concurrency 1,
  // account in-flight 1, provider concurrency 1 in the pool).
  const { gaugeZero, upstreamIdle, after } = await settle(gateway.adminUrl, sim.baseUrl, setup.model);
  const failedOver = backup.requests.length - backupBefore;
  const probe = await postJson(
    gateway.url,
    pathOf(setup.endpoint),
    bodyOf(setup.endpoint, setup.model, false),
    {
      authorization: `Bearer ${KEY}`,
    },
  );
  await waitSimIdle(sim.baseUrl);
  const slotsReleased = gaugeZero && upstreamIdle && probe.status === 200;

  const parsed = parseSse(got.text);
  const sees = summarize(got.text);
  const clientDone = parsed.events.includes('[DONE]');

  // --- invariants of every cell --------------------------------------------------------------
  const where = `${setup.id} / ${mode}`;
  const upstreamDone = parseSse(upstream.text).events.includes('[DONE]');
  // A [DONE] reaches the client only if the provider that served sent one: never fabricated.
  if (clientDone)
    expect(failedOver > 0 || upstreamDone, `${where}: [DONE] without an upstream [DONE]`).toBe(true);
  // One provider's stream only: never spliced.
  if (failedOver > 0) {
    expect(got.text, `${where}: simulator bytes in a failed-over answer`).not.toContain('sim-fault');
  } else {
    expect(got.text, `${where}: backup bytes without a failover`).not.toContain('BACKUP');
  }
  if (!setup.strict && failedOver === 0 && got.status === 200) {
    // Non-strict: byte-identical pass-through, cut exactly where the upstream was cut.
    expect(
      upstream.bytes.subarray(0, got.bytes.length).equals(got.bytes),
      `${where}: bytes differ from the upstream's`,
    ).toBe(true);
    if (got.end === 'clean')
      expect(got.bytes.equals(upstream.bytes), `${where}: clean end with missing bytes`).toBe(true);
  }
  if (setup.strict) {
    expect(parsed.trailing, `${where}: torn frame in a strict stream`).toBe('');
    for (const event of parsed.events) {
      if (typeof event === 'object' && 'choices' in event)
        expect(event.model, `${where}: model not the alias`).toBe(setup.model);
    }
    if (setup.id === 'strict-untrusted')
      for (const word of PROVIDER_DETAIL)
        expect(got.text, `${where}: provider detail leaked`).not.toContain(word);
  }
  if (failedOver > 0) {
    const expectedBackup = `data: ${JSON.stringify(setup.endpoint === 'chat' ? backupChat : backupText)}\n\ndata: [DONE]\n\n`;
    expect(got.text, `${where}: the failed-over answer is not the backup's`).toBe(expectedBackup);
  }
  expect(
    sumOf(after, 'gateway_upstream_attempts_total', { model: setup.model, outcome: 'committed' }) -
      sumOf(before, 'gateway_upstream_attempts_total', { model: setup.model, outcome: 'committed' }),
    `${where}: committed attempts`,
  ).toBe(1);
  const outcomes = deltas(before, after, 'gateway_requests_total').filter(
    (d) => d.labels.model === setup.model,
  );
  expect(
    outcomes.map((d) => d.delta),
    `${where}: requests counted`,
  ).toEqual([1]);
  const outcome = outcomes[0]?.labels.outcome ?? '?';

  // --- the expected behaviour of this cell ---------------------------------------------------
  const expected = expectedFor(setup, mode);
  expect(got.status, `${where}: status`).toBe(200);
  expect(got.end, `${where}: end`).toBe(expected.end);
  expect(clientDone, `${where}: [DONE]`).toBe(expected.done);
  expect(failedOver > 0, `${where}: failover`).toBe(expected.failover);
  expect(outcome, `${where}: outcome`).toBe(expected.outcome);
  if (expected.last !== undefined)
    expect(sees.endsWith(expected.last), `${where}: last event of "${sees}"`).toBe(true);
  expect(
    slotsReleased,
    `${where}: slots (gauge ${gaugeZero}, upstream idle ${upstreamIdle}, next request ${probe.status})`,
  ).toBe(true);

  return {
    mode,
    scenario: setup.id,
    status: got.status === null ? 'none' : String(got.status),
    sees,
    end: ENDINGS[got.end],
    done: clientDone ? 'forwarded' : 'none',
    failover: failedOver > 0 ? 'yes: backup served' : 'no',
    outcome,
    attempts: attemptsText(before, after, setup.model),
    upstreamErrors: errorsText(before, after, setup.model),
    slots: slotsReleased ? 'yes' : 'NO',
  };
}

// --- the matrix ----------------------------------------------------------------------------------

const rounds: MatrixRow[][] = [];
const started = performance.now();

describe('fault matrix: eleven simulator faults through the gateway', () => {
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
    writeResults('fault-matrix', {
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
    const section = extractSection(committed, 'fault-matrix');
    expect(
      section === renderFaultMatrix({ scenarios, rows: ordered }),
      'docs/reliability.md does not show this fault matrix: run node test/reliability/render-report.ts',
    ).toBe(true);
  });
});
