/*
 * The shape of the reliability suites' results and their rendering into docs/reliability.md. Pure
 * functions, no imports: the suites use them to check the committed document, and
 * `render-report.ts` (run by node directly) uses them to write it.
 *
 * Two kinds of sections: compared sections (between `<!-- begin:NAME -->` and `<!-- end:NAME -->`)
 * hold only deterministic observations, and a suite fails when the committed document's section
 * differs from what it observed; the figures section holds counts and timings of the latest run and
 * is never compared.
 */

/** One cell set of the fault matrix: what one fault mode did in one setup. */
export interface MatrixRow {
  mode: string;
  scenario: string;
  /** HTTP status the client got, or `none`. */
  status: string;
  /** The events the client received, summarized (e.g. `role, content x2, error 502 (standard)`). */
  sees: string;
  /** How the response ended for the client. */
  end: string;
  /** `forwarded` when the client got the provider's own `[DONE]`, `none` otherwise. */
  done: string;
  /** `no`, or which provider served after the failover. */
  failover: string;
  /** The `outcome` label `gateway_requests_total` counted the request under. */
  outcome: string;
  /** `gateway_upstream_attempts_total` increments, `provider: outcome` in order. */
  attempts: string;
  /** `gateway_upstream_errors_total` increments by reason, or `-`. */
  upstreamErrors: string;
  /** Every limit slot free again afterwards (in-flight gauge 0, upstream slot free, next request admitted). */
  slots: string;
}

/** One cell of the Messages fault matrix: what one fault mode did in one setup, read by the Anthropic SDK. */
export interface MessagesMatrixRow {
  mode: string;
  scenario: string;
  /** HTTP status the client got, or `none`. */
  status: string;
  /** The events on the wire, summarized (e.g. `message_start, ping, text block, text delta x2`). */
  sees: string;
  /** How the response ended for the client. */
  end: string;
  /** What `finalMessage()` of the official SDK returned or raised. */
  sdk: string;
  /** `no`, or which provider served after the failover. */
  failover: string;
  /** The `outcome` label `gateway_requests_total` counted the request under. */
  outcome: string;
  /** `gateway_upstream_attempts_total` increments, `provider: outcome` in order. */
  attempts: string;
  /** `gateway_upstream_errors_total` increments by reason, or `-`. */
  upstreamErrors: string;
  /** Every limit slot free again afterwards (in-flight gauge 0, upstream slot free, next request admitted). */
  slots: string;
}

export interface Scenario {
  id: string;
  description: string;
}

export interface FaultMatrixResults {
  scenarios: Scenario[];
  rows: MatrixRow[];
  figures: { faultRequests: number; rounds: number; durationSeconds: number };
}

export interface MessagesFaultMatrixResults {
  scenarios: Scenario[];
  rows: MessagesMatrixRow[];
  figures: { faultRequests: number; rounds: number; durationSeconds: number };
}

/** One upstream failure in one setup. */
export interface UpstreamFailureRow {
  failure: string;
  setup: string;
  status: string;
  /** Error code of the body, or what the client saw. */
  client: string;
  failover: string;
  attempts: string;
  upstreamErrors: string;
  slots: string;
}

export interface UpstreamFailureResults {
  rows: UpstreamFailureRow[];
  figures: { failuresInjected: number; slowestBoundedMs: number; dnsFailureMs: number };
}

export interface LoadLifecycleResults {
  reload: {
    durationSeconds: number;
    concurrency: number;
    requests: number;
    completed: number;
    lost: number;
    reloadsWritten: number;
    reloadsApplied: number;
    generationsServed: number;
  };
  drain: {
    streamsAtSignal: number;
    acceptedDuringDelay: number;
    accepted: number;
    completed: number;
    cut: number;
    refusedAfterClose: number;
    exitCode: number | null;
  };
  disconnects: { streams: number; inflightAfter: number; upstreamRunningAfter: number; readmitted: number };
  memory: {
    requestsPerRound: number;
    rounds: number;
    baselineMiB: number;
    peakMiB: number;
    afterMiB: number;
    marginMiB: number;
  };
}

export interface HostileInputResults {
  /** Inputs tried, by category. */
  categories: Record<string, number>;
  inputs: number;
  crashes: number;
  hangs: number;
  serverErrors: number;
  unexpectedUpstreamRequests: number;
}

export interface AuthSecurityResults {
  tokensTried: number;
  logLinesScanned: number;
  metricSeriesScanned: number;
  responsesScanned: number;
  leaks: number;
}

export interface FuzzResults {
  /** fast-check runs per property. */
  runs: Record<string, number>;
}

export interface ResultsBundle {
  soak: boolean;
  faultMatrix?: FaultMatrixResults;
  messagesFaultMatrix?: MessagesFaultMatrixResults;
  upstreamFailures?: UpstreamFailureResults;
  loadLifecycle?: Partial<LoadLifecycleResults>;
  hostileInput?: HostileInputResults;
  authSecurity?: AuthSecurityResults;
  fuzz?: FuzzResults;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}

export function begin(name: string): string {
  return `<!-- begin:${name} -->`;
}

export function end(name: string): string {
  return `<!-- end:${name} -->`;
}

/** The compared fault-matrix section (without its markers). */
export function renderFaultMatrix(results: Pick<FaultMatrixResults, 'scenarios' | 'rows'>): string {
  const scenarios = results.scenarios.map((s) => `- **${s.id}**: ${s.description}`).join('\n');
  const rows = results.rows.map((r) => [
    `\`${r.mode}\``,
    r.scenario,
    r.status,
    r.sees,
    r.end,
    r.done,
    r.failover,
    `\`${r.outcome}\``,
    r.attempts,
    r.upstreamErrors,
    r.slots,
  ]);
  return [
    scenarios,
    '',
    table(
      [
        'fault',
        'setup',
        'status',
        'client received',
        'end',
        '`[DONE]`',
        'failover',
        'outcome (metric)',
        'attempts (metric)',
        'upstream errors (metric)',
        'slots released',
      ],
      rows,
    ),
  ].join('\n');
}

/** The compared Messages fault-matrix section (without its markers). */
export function renderMessagesFaultMatrix(
  results: Pick<MessagesFaultMatrixResults, 'scenarios' | 'rows'>,
): string {
  const scenarios = results.scenarios.map((s) => `- **${s.id}**: ${s.description}`).join('\n');
  const rows = results.rows.map((r) => [
    `\`${r.mode}\``,
    r.scenario,
    r.status,
    r.sees,
    r.end,
    r.sdk,
    r.failover,
    `\`${r.outcome}\``,
    r.attempts,
    r.upstreamErrors,
    r.slots,
  ]);
  return [
    scenarios,
    '',
    table(
      [
        'fault',
        'setup',
        'status',
        'client received',
        'end',
        'the SDK (`finalMessage()`)',
        'failover',
        'outcome (metric)',
        'attempts (metric)',
        'upstream errors (metric)',
        'slots released',
      ],
      rows,
    ),
  ].join('\n');
}

/** The compared upstream-failures section (without its markers). */
export function renderUpstreamFailures(rows: UpstreamFailureRow[]): string {
  return table(
    [
      'upstream',
      'setup',
      'status',
      'client received',
      'failover',
      'attempts (metric)',
      'upstream errors (metric)',
      'slots released',
    ],
    rows.map((r) => [
      r.failure,
      r.setup,
      r.status,
      r.client,
      r.failover,
      r.attempts,
      r.upstreamErrors,
      r.slots,
    ]),
  );
}

/** The text between a section's markers in a document, or undefined when the markers are missing. */
export function extractSection(document: string, name: string): string | undefined {
  const from = document.indexOf(begin(name));
  const to = document.indexOf(end(name));
  if (from < 0 || to < from) return undefined;
  return document.slice(from + begin(name).length, to).trim();
}

const number = (n: number): string => n.toLocaleString('en-US');
const mib = (n: number): string => `${n.toFixed(1)} MiB`;

function figures(bundle: ResultsBundle): string {
  const rows: string[][] = [];
  const missing: string[] = [];
  let lost = 0;
  const f = bundle.faultMatrix;
  if (f) {
    rows.push([
      'faults injected (fault matrix)',
      `${number(f.figures.faultRequests)} faulted streams (${f.rows.length} cells x ${f.figures.rounds} round(s), identical in every round) in ${f.figures.durationSeconds.toFixed(0)} s`,
    ]);
  } else missing.push('fault-matrix');
  const m = bundle.messagesFaultMatrix;
  if (m) {
    rows.push([
      'faults injected (Messages fault matrix)',
      `${number(m.figures.faultRequests)} faulted streams (${m.rows.length} cells x ${m.figures.rounds} round(s), identical in every round) in ${m.figures.durationSeconds.toFixed(0)} s`,
    ]);
  } else missing.push('messages-fault-matrix');
  const u = bundle.upstreamFailures;
  if (u) {
    rows.push(['upstream failures injected', `${number(u.figures.failuresInjected)} requests`]);
    rows.push([
      'unresolvable name (`upstream.invalid`) answered in',
      `${u.figures.dnsFailureMs.toFixed(0)} ms`,
    ]);
  } else missing.push('upstream-failures');
  const l = bundle.loadLifecycle;
  if (l?.reload) {
    const r = l.reload;
    rows.push([
      'requests under load, hot reloads running',
      `${number(r.requests)} sent, ${number(r.completed)} complete, ${number(r.lost)} lost (${r.concurrency} closed-loop clients for ${r.durationSeconds} s, streamed and not)`,
    ]);
    rows.push([
      'reloads survived',
      `${number(r.reloadsApplied)} applied of ${number(r.reloadsWritten)} written (one every 400 ms); ${r.generationsServed} configurations served requests`,
    ]);
    lost += r.lost;
  }
  if (l?.drain) {
    const d = l.drain;
    rows.push([
      'SIGTERM drain',
      `${number(d.accepted)} accepted (${d.streamsAtSignal} streams open at the signal, ${d.acceptedDuringDelay} requests during the delay), ${number(d.completed)} completed, ${d.cut} cut; ${d.refusedAfterClose} refused at connect after admission closed; exit code ${String(d.exitCode)}`,
    ]);
    lost += d.cut;
  }
  if (l?.disconnects) {
    const x = l.disconnects;
    rows.push([
      'clients gone before or during a stream',
      `${x.streams} dropped; afterwards in-flight gauge ${x.inflightAfter}, simulator running ${x.upstreamRunningAfter}, ${x.readmitted} streams admitted at the full limit`,
    ]);
  }
  if (l?.memory) {
    const m = l.memory;
    rows.push([
      'gateway RSS (VmRSS)',
      `baseline ${mib(m.baselineMiB)} after warm-up, peak ${mib(m.peakMiB)}, ${mib(m.afterMiB)} after ${m.rounds} round(s) of ${number(m.requestsPerRound)} requests with 32 KiB bodies (allowed: baseline + ${m.marginMiB} MiB)`,
    ]);
  }
  if (!l?.reload || !l.drain || !l.disconnects || !l.memory) missing.push('load-lifecycle');
  const h = bundle.hostileInput;
  if (h) {
    const categories = Object.entries(h.categories)
      .map(([name, count]) => `${name} ${count}`)
      .join(', ');
    rows.push(['hostile inputs tried', `${number(h.inputs)} (${categories})`]);
    rows.push([
      'crashes, hangs, 5xx, unexpected upstream requests',
      `${h.crashes}, ${h.hangs}, ${h.serverErrors}, ${h.unexpectedUpstreamRequests}`,
    ]);
  } else missing.push('hostile-input');
  const a = bundle.authSecurity;
  if (a) {
    rows.push([
      'authentication and secrets',
      `${number(a.tokensTried)} wrong or variant tokens refused; ${number(a.responsesScanned)} responses, ${number(a.logLinesScanned)} log lines and ${number(a.metricSeriesScanned)} metric series scanned: ${a.leaks} keys found`,
    ]);
  } else missing.push('auth-security');
  const z = bundle.fuzz;
  if (z) {
    const runs = Object.entries(z.runs)
      .map(([name, count]) => `${name} ${number(count)}`)
      .join(', ');
    rows.push(['property-based runs (fast-check)', runs]);
  } else missing.push('fuzz');
  const lines = [
    `Run: ${bundle.soak ? '`make soak` (SOAK=1, the longer variants)' : '`make test` (the bounded variants)'}.`,
    '',
    table(['figure', 'value'], rows),
    '',
    `Requests lost (accepted and not answered whole) across the load and drain runs: **${lost}**.`,
  ];
  if (missing.length > 0) lines.push('', `No results in this run from: ${missing.join(', ')}.`);
  return lines.join('\n');
}

/** The whole document. */
export function renderReport(bundle: ResultsBundle): string {
  const parts = [
    '# Reliability',
    '',
    '<!-- Generated by `node test/reliability/render-report.ts` from the results of the suites in',
    'test/reliability/ (written to test/.tmp/reliability/). Do not edit by hand. -->',
    '',
    'What the gateway does under faults, load and hostile input, as observed by the suites in',
    '`test/reliability/` (`make test` runs the bounded variants, `make soak` the longer ones). The',
    'tables are checked: a suite fails when its table here differs from what it observed. Regenerate',
    'after a run with `node test/reliability/render-report.ts`.',
    '',
    '## Fault matrix',
    '',
    "Each of the simulator's eleven fault modes (`x-sim-fault`, two content frames then the fault,",
    'five milliseconds apart; none before the fault in the last setup), sent through the gateway in',
    'each setup. Every setup has a keyed target with `concurrency_limit` 1 and `inflight_limit` 1 (pool',
    'providers: `concurrency_limit` 1 on the first); "slots released" means the in-flight gauge is back',
    'at 0, the simulator has nothing running (the upstream request was aborted or finished) and the',
    'next request with the same key is admitted. The client gives up on a stalled stream after 2.5 s.',
    '"Client received" lists the complete SSE events in order (runs as `xN`) and any torn frame;',
    '"standard" errors are the gateway\'s standard error object, "provider\'s" the upstream\'s own.',
    '"Outcome" is the `outcome` label `gateway_requests_total` counted the request under: a stream',
    'that did not end with its `[DONE]` is never `completed`, and an error event served is',
    '`upstream_error` even when a `[DONE]` followed it.',
    '',
    begin('fault-matrix'),
  ];
  const f = bundle.faultMatrix;
  parts.push(f ? renderFaultMatrix(f) : '_No results: run the fault-matrix suite._');
  parts.push(end('fault-matrix'), '');
  parts.push(
    '## Fault matrix on the Messages API',
    '',
    "The same eleven faults on Anthropic's Messages API (`POST /v1/messages`, the simulator's",
    "Anthropic framing of each fault: `message_start`, `ping` and the first block's start, then two",
    'content deltas five milliseconds apart, or none in the pool setups), read by the official',
    '`@anthropic-ai/sdk` as an application reads a stream: `messages.stream(...).finalMessage()`, which',
    'either resolves with a message or rejects. "The SDK" says which, and with what: a message it',
    'returned always ended with `message_stop` and a stop reason, and a broken stream always made',
    'it raise (the suite fails otherwise). The application gives up on a stalled stream after 2.5 s',
    '(`stream.abort()`). "Client received" lists the events on the wire in order (runs as `xN`,',
    '`text block` a `content_block_start` of a text block, `text delta` a `content_block_delta`,',
    '`unnamed error frame` a `data:` line with an error and no `event:` line, which the SDK skips)',
    "and any torn frame; an error event's words are the provider's or the gateway's own. A response",
    'that ends cleanly ends with `message_stop` or an error event, so an application that iterates',
    'the events never takes a cut stream for a whole one. Passed through, `no_usage` keeps the',
    "provider's events without `usage`, on which the SDK raises (it reads `message_delta`'s",
    '`usage.output_tokens`). Limits, slots and metrics as in the chat matrix above; the pool setups',
    'have `concurrency_limit` 1 on the first provider and a stub backup that answers `BACKUP` in the',
    'API it is asked in.',
    '',
    begin('messages-fault-matrix'),
  );
  const m = bundle.messagesFaultMatrix;
  parts.push(m ? renderMessagesFaultMatrix(m) : '_No results: run the messages-fault-matrix suite._');
  parts.push(end('messages-fault-matrix'), '');
  parts.push(
    '## Upstream failures',
    '',
    'An upstream that accepts and never answers, answers headers then stalls, resets, refuses, is',
    "saturated (the simulator's bounded queue: 529 `queue_saturated`), has its engine stopped (503",
    '`engine_unavailable`), or whose name does not resolve (`upstream.invalid`). "Single" is a lone',
    'provider; "pool" is a priority pool whose first provider fails, with `fallback.on_status`',
    '`[503, 529]`, `first_token_timeout_ms` 1000 and a healthy second provider. Requests are streamed',
    'unless the row says otherwise; the client gives up after 2 s. Each target and pool provider has',
    '`concurrency_limit` 1: "slots released" means the in-flight gauge is back at 0 and the next request',
    'is admitted. `upstream.invalid` (RFC 6761) is refused by a resolver stub preloaded into the gateway',
    "under test (`test/reliability/invalid-tld-resolver.ts`): this machine's resolver would send the",
    'query to its nameserver, and the suites make no traffic beyond loopback.',
    '',
    begin('upstream-failures'),
  );
  const u = bundle.upstreamFailures;
  parts.push(u ? renderUpstreamFailures(u.rows) : '_No results: run the upstream-failures suite._');
  parts.push(end('upstream-failures'), '');
  parts.push('## Figures of the latest run', '', figures(bundle), '');
  return parts.join('\n');
}
