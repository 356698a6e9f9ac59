/** The scorecard's results as markdown: what each client observed, row by row. */
import type { Cell } from './cells.ts';
import { cellText, escape, seconds } from './cell-text.ts';
import type { CancelResult, CapacityResult, DrainResult } from './lifecycle.ts';
import type { MessagesResults } from './messages-rows.ts';
import { messagesSection } from './render-messages.ts';
import type { ClientKind, SystemId } from './systems.ts';

export interface FaultRow {
  readonly id: string;
  readonly title: string;
  readonly cells: Partial<Record<SystemId, Record<ClientKind, Cell>>>;
}

export interface Results {
  readonly date: string;
  readonly quick: boolean;
  readonly durationSeconds: number;
  readonly versions: Readonly<Record<string, string>>;
  readonly machine: string;
  readonly systems: readonly { readonly id: SystemId; readonly label: string }[];
  readonly notRun: readonly { readonly id: SystemId; readonly reason: string }[];
  readonly requestsPerCell: number;
  readonly hangMs: number;
  readonly faults: readonly FaultRow[];
  /** The Messages rows (absent from quick runs). */
  readonly messages?: MessagesResults;
  readonly capacity: Partial<Record<SystemId, CapacityResult>>;
  readonly reload: Partial<Record<SystemId, { readonly cell: Cell; readonly reloads: number }>>;
  readonly drain: Partial<Record<SystemId, DrainResult>>;
  readonly cancel: Partial<Record<SystemId, Record<ClientKind, CancelResult>>>;
  readonly configs: Readonly<Record<string, unknown>>;
  /** The simulator's origin in this run, written as a placeholder in the configurations shown. */
  readonly simOrigin: string;
}

interface Totals {
  sent: number;
  completed: number;
  visible: number;
  silent: number;
  hung: number;
}

export function totals(results: Results, system: SystemId, client: ClientKind): Totals {
  const sum: Totals = { sent: 0, completed: 0, visible: 0, silent: 0, hung: 0 };
  for (const row of results.faults) {
    const cell = row.cells[system]?.[client];
    if (cell === undefined) continue;
    sum.sent += cell.sent;
    for (const verdict of ['completed', 'visible', 'silent', 'hung'] as const)
      sum[verdict] += cell.counts[verdict];
  }
  return sum;
}

const CLIENT_WORDS: Record<ClientKind, string> = {
  sdk: 'through the official openai SDK',
  raw: 'through raw HTTP',
};

function faultTable(results: Results, client: ClientKind): string[] {
  const lines = [
    `| # | Provider fault | ${results.systems.map((s) => s.label).join(' | ')} |`,
    `|---|---|${results.systems.map(() => '---').join('|')}|`,
  ];
  for (const row of results.faults)
    lines.push(
      `| ${row.id} | ${row.title} | ${results.systems.map((s) => cellText(row.cells[s.id]?.[client])).join(' | ')} |`,
    );
  return lines;
}

function capacityText(result: CapacityResult | undefined): string {
  if (result === undefined) return 'not run';
  const [before, during, after] = result.phases;
  const failures = (c: Cell) =>
    [
      c.counts.visible ? `${c.counts.visible} visible` : '',
      c.counts.silent ? `**${c.counts.silent} silent**` : '',
      c.counts.hung ? `**${c.counts.hung} hung**` : '',
    ]
      .filter(Boolean)
      .join(', ') || 'no failure';
  return (
    `TTFT p50/p99: before ${seconds(before.p50)}/${seconds(before.p99)}, during ${seconds(during.p50)}/${seconds(during.p99)}, ` +
    `after ${seconds(after.p50)}/${seconds(after.p99)}; during: ${during.cell.sent} sent, ${failures(during.cell)}; ` +
    `traffic shifted ${result.shiftMs === undefined ? 'never' : `after ${seconds(result.shiftMs)}`}`
  );
}

function cancelText(result: Record<ClientKind, CancelResult> | undefined): string {
  if (result === undefined) return 'not run';
  return (['raw', 'sdk'] as const)
    .map((client) => {
      const seen = result[client].seenMs;
      const heard = seen.filter((ms): ms is number => ms !== undefined).sort((a, b) => a - b);
      const missed = seen.length - heard.length;
      const median = heard.length > 0 ? seconds(heard[Math.floor(heard.length / 2)]!) : '';
      return `${client === 'raw' ? 'raw' : 'SDK'}: ${
        heard.length === 0
          ? `**provider never told** (none of ${seen.length} within 3 s)`
          : `provider told after ${median}${missed > 0 ? `, **${missed} never**` : ''}`
      }`;
    })
    .join('; ');
}

function sdkCutText(cell: Cell | undefined): string {
  if (cell === undefined) return 'not run';
  const { counts, details } = cell;
  const parts: string[] = [];
  if (counts.visible > 0)
    parts.push(`raises: ${escape(details.visible ?? '')} (${counts.visible} of ${cell.sent})`);
  if (counts.silent > 0)
    parts.push(
      `**returns a truncated answer as complete**: ${escape(details.silent ?? '')} (${counts.silent} of ${cell.sent})`,
    );
  if (counts.completed > 0) parts.push(`full answer ${counts.completed} of ${cell.sent}`);
  if (counts.hung > 0) parts.push(`**hangs** (${counts.hung} of ${cell.sent})`);
  return parts.join('; ');
}

export function renderScorecard(results: Results): string {
  const systems = results.systems;
  const header = `| # | Scenario | ${systems.map((s) => s.label).join(' | ')} |`;
  const rule = `|---|---|${systems.map(() => '---').join('|')}|`;
  const per = (text: (id: SystemId) => string) => systems.map((s) => text(s.id)).join(' | ');
  const lines: string[] = [
    '# Resilience scorecard',
    '',
    'What a client observes when an LLM provider misbehaves in each of the ways inference servers do,',
    "with this gateway in front, with Portkey's open-source gateway in front, and with no gateway at all",
    '(the provider directly). Every fault comes from the simulator (`sim`) or a small stub, on',
    'loopback, deterministically. Regenerate on any machine with `make scorecard` (about',
    `${Math.max(1, Math.round(results.durationSeconds / 60))} minutes here).`,
    '',
    `Run: ${results.date}. ${Object.entries(results.versions)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}. Machine: ${results.machine}.`,
    '',
    '## How to read it',
    '',
    `Each cell is ${results.requestsPerCell} requests of one client (4 at a time), counted by what the client was handed, with`,
    'the median time until the client had its answer or its failure (p50):',
    '',
    "- **completed**: the whole answer (the healthy provider's text with `finish_reason: stop`; for raw",
    '  streams also the `[DONE]` sentinel);',
    '- **failed visibly**: an error the client can act on: a non-2xx status, a broken transfer, an error',
    '  event (raw HTTP: any error-shaped event; the SDK: an exception it raises);',
    '- **failed silently**: a success that is not the answer: truncated or wrong text handed over as',
    '  complete. This and **hung** are the scores that matter;',
    `- **hung**: no end within ${seconds(results.hangMs)}; the client gave up.`,
    '',
    "Every system has the same faulty provider first. The gateways have the simulator's healthy model",
    'as their second provider and fail over to it as configured below; the provider directly has',
    'nothing to fail over to. A failover is only possible before the first byte reaches the client:',
    'after that, the best a gateway can do is to make the failure visible.',
    '',
  ];
  if (results.notRun.length > 0) {
    for (const skipped of results.notRun) lines.push(`Not run: ${skipped.id}: ${skipped.reason}`);
    lines.push('');
  }
  lines.push(
    '## Summary',
    '',
    `The provider-fault rows (1 to 13b), ${results.requestsPerCell} requests per row and client:`,
    '',
    '| System | Client | Requests | Completed | Failed visibly | Failed silently | Hung |',
    '|---|---|---|---|---|---|---|',
  );
  for (const system of systems)
    for (const client of ['sdk', 'raw'] as const) {
      const t = totals(results, system.id, client);
      lines.push(
        `| ${system.label} | ${client === 'sdk' ? 'openai SDK' : 'raw HTTP'} | ${t.sent} | ${t.completed} | ${t.visible} | ${t.silent ? `**${t.silent}**` : 0} | ${t.hung ? `**${t.hung}**` : 0} |`,
      );
    }
  lines.push('', `## Provider faults, ${CLIENT_WORDS.sdk}`, '', ...faultTable(results, 'sdk'));
  lines.push(
    '',
    "What a system cannot express shows as what it does without it: Portkey's config has no",
    'first-token deadline and no limit on the gaps of a stream (its `request_timeout` bounds the wait',
    'for the response head: row 6), so in rows 5 and 10 it waits on the provider.',
  );
  lines.push('', `## Provider faults, ${CLIENT_WORDS.raw}`, '', ...faultTable(results, 'raw'));
  const shown = (config: unknown) =>
    JSON.stringify(config, null, 2).replaceAll(results.simOrigin, 'http://127.0.0.1:<sim port>');
  if (results.messages !== undefined)
    lines.push(
      '',
      ...messagesSection({
        messages: results.messages,
        systems,
        gatewayConfig: shown(results.configs.gatewayMessages),
        portkeyConfig: shown(results.configs.portkeyMessages),
      }),
    );
  lines.push(
    '',
    '## Under load, lifecycle, cancellation',
    '',
    'Rows 14 to 16 are read through raw HTTP (the load is the point; rows 7 to 13b show how each',
    'client reads a failure); row 17 through both clients. The traffic shift of row 14 is read from',
    "the simulator's count of finished requests per model every 250 ms: the first window after the",
    'drop in which the second provider finished more requests than the first.',
    '',
    header,
    rule,
  );
  const seven = results.faults.find((row) => row.id === '7');
  lines.push(
    `| 14 | The preferred provider's capacity drops mid-run (40 streamed requests a second; one running and one waiting sequence left) | ${per((id) => capacityText(results.capacity[id]))} |`,
    `| 15 | Configuration reloaded every 300 ms under load (long streams, 8 at a time) | ${per((id) => {
      const reload = results.reload[id];
      if (reload !== undefined) return `${cellText(reload.cell)} across ${reload.reloads} reloads`;
      return id === 'portkey' ? 'not applicable: the config travels with each request' : 'not applicable';
    })} |`,
    `| 16 | SIGTERM with 8 long streams open, then a new request every 100 ms for 2 s | ${per((id) => {
      const drain = results.drain[id];
      if (drain === undefined) return id === 'direct' ? 'not applicable' : 'not run';
      return `open streams: ${cellText(drain.inFlight)}; new requests: ${cellText(drain.after)}`;
    })} |`,
    `| 17 | The client cancels after 3 chunks: does the provider hear of it? | ${per((id) => cancelText(results.cancel[id]))} |`,
    `| 18 | A mid-stream cut (row 7) read through the openai SDK | ${per((id) => sdkCutText(seven?.cells[id]?.sdk))} |`,
  );
  lines.push(
    '',
    '## Configuration used',
    '',
    'This gateway, for each fault row (one alias per row and client, so each has its own pool state;',
    'the timeouts are scaled to the simulator, whose answers take about 100 ms: scale them to the',
    'longest generation in production):',
    '',
    '```json',
    shown(results.configs.gateway),
    '```',
    '',
    'The drain row (16) starts a fresh process of each gateway: this one with `--shutdown-delay-secs 1`',
    '(requests are still served for a second after SIGTERM, so a load balancer can stop sending; the',
    'default is 5 s), Portkey as it ships.',
    '',
    'Portkey, sent with each request as `x-portkey-config` (fallback on any non-2xx status, its',
    'documented default, and its `request_timeout`):',
    '',
    '```json',
    shown(results.configs.portkey),
    '```',
    '',
    'The clients: raw HTTP is Node.js `fetch` reading the SSE frames itself; the SDK is the official',
    "`openai` package with `maxRetries: 0` (so a cell shows what the system did, not the SDK's own",
    'retries) and its timeout set to the hang bound.',
    '',
  );
  return lines.join('\n');
}
