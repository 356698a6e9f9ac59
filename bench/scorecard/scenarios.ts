/**
 * The provider faults of the scorecard, one row each: what the preferred provider does wrong. Every
 * system gets the same faulty provider first; a system that can fail over has the simulator's
 * healthy model as its second provider.
 */
import type { Sim, Stub } from './world.ts';

export interface Provider {
  /** Base URL with `/v1`. */
  readonly baseUrl: string;
  readonly model: string;
}

export interface World {
  readonly sim: Sim;
  readonly refused: string;
  readonly status500: Stub;
  readonly status429: Stub;
  readonly silent: Stub;
  readonly error200: Stub;
  readonly errorThenDone: Stub;
}

export interface FaultScenario {
  /** The row's number in the table (`12b`: a second form of row 12). */
  readonly id: string;
  readonly title: string;
  readonly stream: boolean;
  readonly preferred: (world: World) => Provider;
  /** Brings the provider into its state before the row runs; returns the undo. */
  readonly prepare?: (world: World) => Promise<() => Promise<void>>;
}

const simModel =
  (model: string) =>
  (world: World): Provider => ({
    baseUrl: `${world.sim.origin}/v1`,
    model,
  });

/** One of the stub providers, asked for any model. */
const stub =
  (name: keyof Omit<World, 'sim' | 'refused'>) =>
  (world: World): Provider => ({ baseUrl: world[name].baseUrl, model: 'healthy' });

/** The healthy second provider of every system that can fail over. */
export const backup = simModel('healthy');

/**
 * Fills the `busy` model (one running sequence, one waiting): a stream that stalls after its first
 * frame holds the engine, a second one waits, and every later request gets 529 `queue_saturated`.
 */
async function fillBusyQueue(world: World): Promise<() => Promise<void>> {
  const holders = [new AbortController(), new AbortController()];
  for (const holder of holders) {
    // The holders stay open until the row ends; only the wait for a head (which the engine gives
    // at once, admitted or queued) is bounded.
    const noHead = setTimeout(() => holder.abort(), 5000);
    const response = await fetch(`${world.sim.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'busy', messages: [{ role: 'user', content: 'hold' }], stream: true }),
      signal: holder.signal,
    });
    clearTimeout(noHead);
    if (response.status !== 200) throw new Error(`could not fill the busy queue: ${response.status}`);
    // The body is left unread: cancelling it would close the connection and free the slot.
  }
  return async () => {
    for (const holder of holders) holder.abort();
  };
}

export const FAULT_SCENARIOS: readonly FaultScenario[] = [
  {
    id: '1',
    title: 'Provider refuses connections',
    stream: true,
    preferred: (world) => ({ baseUrl: world.refused, model: 'healthy' }),
  },
  {
    id: '2',
    title: 'Provider returns 500 before any byte',
    stream: true,
    preferred: stub('status500'),
  },
  {
    id: '3',
    title: 'Provider returns 429 with Retry-After',
    stream: true,
    preferred: stub('status429'),
  },
  {
    id: '4',
    title: 'Provider queue full (529 `queue_saturated`)',
    stream: true,
    preferred: simModel('busy'),
    prepare: fillBusyQueue,
  },
  {
    id: '5',
    title: "First token after 3 s (the gateway's deadline: 1 s)",
    stream: true,
    preferred: simModel('slow-first-token'),
  },
  {
    id: '6',
    title: 'Headers never arrive (non-streamed request)',
    stream: false,
    preferred: stub('silent'),
  },
  {
    id: '7',
    title: 'Stream cut between frames after 3 chunks',
    stream: true,
    preferred: simModel('cut-between-frames'),
  },
  {
    id: '8',
    title: 'Stream cut mid-frame after 3 chunks',
    stream: true,
    preferred: simModel('cut-mid-frame'),
  },
  { id: '9', title: 'Stream reset (TCP RST) after 3 chunks', stream: true, preferred: simModel('reset') },
  { id: '10', title: 'Stream stalls after 3 chunks', stream: true, preferred: simModel('stall') },
  { id: '11', title: 'Stream ends without `[DONE]`', stream: true, preferred: simModel('no-done') },
  {
    id: '12',
    title: 'A 200 whose first event is an error',
    stream: true,
    preferred: stub('error200'),
  },
  {
    id: '12b',
    title: 'A 200 whose body is an error (non-streamed)',
    stream: false,
    preferred: stub('error200'),
  },
  {
    id: '13',
    title: 'Error event mid-stream (vLLM\'s `{"object": "error"}`)',
    stream: true,
    preferred: simModel('error-mid'),
  },
  {
    id: '13b',
    title: "Error event mid-stream, then `[DONE]` (vLLM's order)",
    stream: true,
    preferred: stub('errorThenDone'),
  },
];
