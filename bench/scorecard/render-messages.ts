/** The scorecard's Messages rows as markdown: a summary and one table per way of reading a stream. */
import type { Cell } from './cells.ts';
import { cellText } from './cell-text.ts';
import { laneKey, type MessagesLane, type MessagesResults } from './messages-rows.ts';
import type { MessagesReader } from './messages-scenarios.ts';
import type { SystemId } from './systems.ts';

export interface MessagesSectionInput {
  readonly messages: MessagesResults;
  readonly systems: readonly { readonly id: SystemId; readonly label: string }[];
  /** The configurations of row M1, as JSON text. */
  readonly gatewayConfig: string;
  readonly portkeyConfig: string;
}

/** How each reader is named in the summary and the headings. */
const READER_WORDS: Record<MessagesReader, { short: string; heading: string }> = {
  final: { short: '`finalMessage()`', heading: 'Read with `messages.stream(...).finalMessage()`' },
  events: { short: 'events', heading: 'Read by iterating the events of `messages.create({ stream: true })`' },
};

function laneLabel(lane: MessagesLane, systems: MessagesSectionInput['systems']): string {
  const system = systems.find((s) => s.id === lane.system)?.label ?? lane.system;
  if (lane.system === 'direct') return system;
  return `${system}, ${lane.route === 'passed-through' ? 'passed through' : 'translated'}`;
}

function totalsOf(
  input: MessagesSectionInput,
  lane: MessagesLane,
  reader: MessagesReader,
): Cell['counts'] & { sent: number } {
  const sum = { sent: 0, completed: 0, visible: 0, silent: 0, hung: 0 };
  for (const row of input.messages.rows) {
    const cell = row.cells[laneKey(lane)]?.[reader];
    if (cell === undefined) continue;
    sum.sent += cell.sent;
    for (const verdict of ['completed', 'visible', 'silent', 'hung'] as const)
      sum[verdict] += cell.counts[verdict];
  }
  return sum;
}

function faultTable(
  input: MessagesSectionInput,
  lanes: readonly MessagesLane[],
  reader: MessagesReader,
): string[] {
  const lines = [
    `| # | Provider fault | ${lanes.map((lane) => laneLabel(lane, input.systems)).join(' | ')} |`,
    `|---|---|${lanes.map(() => '---').join('|')}|`,
  ];
  for (const row of input.messages.rows)
    lines.push(
      `| ${row.id} | ${row.title} | ${lanes.map((lane) => cellText(row.cells[laneKey(lane)]?.[reader])).join(' | ')} |`,
    );
  return lines;
}

export function messagesSection(input: MessagesSectionInput): string[] {
  const run = input.messages.lanes.filter((lane) => lane.reason === undefined);
  const notRun = input.messages.lanes.filter((lane) => lane.reason !== undefined);
  const lines = [
    '## Provider faults on the Messages API, through the official Anthropic SDK',
    '',
    "Anthropic's Messages API (`POST /v1/messages`, what Claude Code and the Anthropic SDKs send), with",
    "the simulator's Anthropic framing of each fault (`message_start`, `ping` and the first block's",
    'start, then three content deltas, then the fault; none before it in rows M12 and M13). Two routes:',
    '**passed through** to a provider that speaks the Messages API (this gateway: `api: anthropic`;',
    'Portkey: its `anthropic` provider with a custom host; the provider directly is this route), and',
    '**translated** for a provider that speaks only chat completions (this gateway: the default',
    '`api: openai`; Portkey: its `openai` provider). Pools and failover as in the chat rows: the faulty',
    "model first, the simulator's healthy model second, on the same route.",
    '',
    `Each cell is ${input.messages.requestsPerCell} requests (at most 4 at a time) of the official`,
    '`@anthropic-ai/sdk` (`maxRetries: 0`), read one of two ways, with the verdicts above',
    '(**completed**: the healthy text with `stop_reason: end_turn` and a `message_stop`; in row M8 the',
    "stream's own three deltas are the whole answer, since it ends normally and only lacks `usage`):",
    '',
    '- **`finalMessage()`**: `messages.stream(...).finalMessage()`, the SDK assembles the message. It',
    '  resolves only after a `message_stop` (else it raises "stream ended without producing a',
    '  Message"), so a stream cut without an error still raises here;',
    '- **events**: iterating the events of `messages.create({ stream: true })` and assembling the text,',
    '  as an application that shows tokens as they come does: a stream that ends without',
    '  `message_stop` and without an error ends the iteration normally, which is a silent failure',
    '  unless the application checks for `message_stop` itself.',
    '',
    '| Column | Reader | Requests | Completed | Failed visibly | Failed silently | Hung |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const lane of run)
    for (const reader of ['final', 'events'] as const) {
      const t = totalsOf(input, lane, reader);
      lines.push(
        `| ${laneLabel(lane, input.systems)} | ${READER_WORDS[reader].short} | ${t.sent} | ${t.completed} | ${t.visible} | ${t.silent ? `**${t.silent}**` : 0} | ${t.hung ? `**${t.hung}**` : 0} |`,
      );
    }
  for (const reader of ['final', 'events'] as const)
    lines.push('', `### ${READER_WORDS[reader].heading}`, '', ...faultTable(input, run, reader));
  if (notRun.length > 0) {
    lines.push('', 'Not run:', '');
    for (const lane of notRun) lines.push(`- ${laneLabel(lane, input.systems)}: ${lane.reason ?? ''}`);
  }
  lines.push(
    '',
    'This gateway, for row M1 passed through (translated: the same providers without `api`):',
    '',
    '```json',
    input.gatewayConfig,
    '```',
    '',
    'Portkey, for row M1 passed through (translated: `"provider": "openai"`):',
    '',
    '```json',
    input.portkeyConfig,
    '```',
  );
  return lines;
}
