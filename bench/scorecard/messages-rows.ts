/**
 * The Messages rows of the scorecard: every Messages fault against every system on each route it
 * offers (passed through to a provider that speaks the API, translated for one that speaks chat
 * completions), read by the official Anthropic SDK both ways an application reads a stream.
 */
import { runBatch, summarize, type Cell } from './cells.ts';
import { observeMessagesSdk } from './observe-messages.ts';
import {
  MESSAGES_READERS,
  MESSAGES_ROUTES,
  MESSAGES_SCENARIOS,
  type MessagesReader,
  type MessagesRoute,
} from './messages-scenarios.ts';
import type { World } from './scenarios.ts';
import type { System, SystemId } from './systems.ts';

/** One column of the Messages tables: a system on one route. */
export interface MessagesLane {
  readonly system: SystemId;
  readonly route: MessagesRoute;
  /** Why the system cannot take this route's requests (the column is not run). */
  readonly reason?: string;
}

export interface MessagesRow {
  readonly id: string;
  readonly title: string;
  /** By lane (`system/route`), then by reader; absent for a lane that is not run. */
  readonly cells: Readonly<Record<string, Record<MessagesReader, Cell>>>;
}

export interface MessagesResults {
  readonly requestsPerCell: number;
  readonly lanes: readonly MessagesLane[];
  readonly rows: readonly MessagesRow[];
}

export function laneKey(lane: Pick<MessagesLane, 'system' | 'route'>): string {
  return `${lane.system}/${lane.route}`;
}

export async function messagesRows(
  world: World,
  systems: readonly System[],
  options: { requests: number; hangMs: number; log: (line: string) => void },
): Promise<MessagesResults> {
  const healthy = await messagesAnswerOf(world, 'healthy');
  const lanes: MessagesLane[] = [];
  for (const system of systems)
    for (const route of MESSAGES_ROUTES) {
      const probe = system.messages(MESSAGES_SCENARIOS[0]!, route, 'final');
      lanes.push({ system: system.id, route, ...('reason' in probe ? { reason: probe.reason } : {}) });
    }
  const rows: MessagesRow[] = [];
  for (const scenario of MESSAGES_SCENARIOS) {
    const expected = scenario.wholeStream ? await streamedTextOf(world, scenario.model) : healthy;
    const cells: Record<string, Record<MessagesReader, Cell>> = {};
    for (const system of systems)
      for (const route of MESSAGES_ROUTES) {
        const byReader = {} as Record<MessagesReader, Cell>;
        for (const reader of MESSAGES_READERS) {
          const target = system.messages(scenario, route, reader);
          if ('reason' in target) continue;
          const ask = { reader, expected, hangMs: options.hangMs };
          byReader[reader] = summarize(
            await runBatch(options.requests, 4, () => observeMessagesSdk(target, ask)),
          );
        }
        if (Object.keys(byReader).length === 0) continue;
        cells[laneKey({ system: system.id, route })] = byReader;
        const brief = MESSAGES_READERS.map((reader) => {
          const c = byReader[reader].counts;
          return `${reader} ${c.completed}/${c.visible}/${c.silent}/${c.hung}`;
        }).join('; ');
        options.log(`row ${scenario.id} ${system.id} ${route}: ${brief}`);
      }
    rows.push({ id: scenario.id, title: scenario.title, cells });
  }
  return { requestsPerCell: options.requests, lanes, rows };
}

async function postMessages(world: World, model: string, stream: boolean): Promise<Response> {
  return fetch(`${world.sim.origin}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      max_tokens: 64,
      stream,
      messages: [{ role: 'user', content: 'Say something.' }],
    }),
    signal: AbortSignal.timeout(10_000),
  });
}

/** A model's whole answer, straight from the simulator's Messages API. */
async function messagesAnswerOf(world: World, model: string): Promise<string> {
  const body = (await (await postMessages(world, model, false)).json()) as {
    content: { type: string; text?: string }[];
  };
  return body.content.map((block) => block.text ?? '').join('');
}

/** The text a model's stream carries, straight from the simulator (its fault applies to streams only). */
async function streamedTextOf(world: World, model: string): Promise<string> {
  const text = await (await postMessages(world, model, true)).text();
  let answer = '';
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const event = JSON.parse(line.slice(5)) as { type?: string; delta?: { type?: string; text?: string } };
    if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta')
      answer += event.delta.text ?? '';
  }
  return answer;
}
