/**
 * The provider faults of the scorecard's Messages rows: each of the simulator's eleven fault modes
 * after three content deltas, and two before the first one, on Anthropic's Messages API. The
 * preferred provider is the simulator's model with that fault; a system that can fail over has the
 * healthy model second, as in the chat rows.
 */

export interface MessagesScenario {
  /** The row's number in the table. */
  readonly id: string;
  readonly title: string;
  /** The simulator model every stream of which has the fault. */
  readonly model: string;
  /**
   * The faulty stream is whole: a short answer that ends normally (only its usage is missing), so
   * the answer to receive is that one, not the healthy model's.
   */
  readonly wholeStream?: boolean;
}

/** How a system reaches a provider on the Messages API. */
export type MessagesRoute = 'passed-through' | 'translated';
export const MESSAGES_ROUTES: readonly MessagesRoute[] = ['passed-through', 'translated'];

/**
 * How the application reads the stream with the official `@anthropic-ai/sdk`: `final` awaits
 * `messages.stream(...).finalMessage()` (the SDK assembles the message), `events` iterates the
 * events of `messages.create({ stream: true })` and assembles the text itself, as an application
 * that shows tokens as they come does.
 */
export type MessagesReader = 'final' | 'events';
export const MESSAGES_READERS: readonly MessagesReader[] = ['final', 'events'];

export const MESSAGES_SCENARIOS: readonly MessagesScenario[] = [
  { id: 'M1', title: 'Stream cut between events after 3 content deltas', model: 'cut-between-frames' },
  { id: 'M2', title: 'Stream cut mid-event after 3 content deltas', model: 'cut-mid-frame' },
  { id: 'M3', title: 'Stream reset (TCP RST) after 3 content deltas', model: 'reset' },
  { id: 'M4', title: 'Stream stalls after 3 content deltas', model: 'stall' },
  { id: 'M5', title: '`event: error` (`overloaded_error`) after 3 content deltas', model: 'error-envelope' },
  { id: 'M6', title: '`event: error` (`invalid_request_error`) after 3 content deltas', model: 'error-mid' },
  { id: 'M7', title: 'Stream ends after `message_delta`, without `message_stop`', model: 'no-done' },
  {
    id: 'M8',
    title: 'A whole 3-delta answer without `usage` (`message_start`, `message_delta`)',
    model: 'no-usage',
    wholeStream: true,
  },
  {
    id: 'M9',
    title: "vLLM's cancellation frame (`data:` only, no `event:` line) after 3 content deltas",
    model: 'cancelled',
  },
  { id: 'M10', title: 'Stream cut inside a thinking block', model: 'mid-reasoning' },
  { id: 'M11', title: "Stream cut inside a tool call's input", model: 'mid-tool-call' },
  { id: 'M12', title: 'Stream cut before the first content delta', model: 'cut-before-first' },
  {
    id: 'M13',
    title: '`event: error` (`overloaded_error`) before the first content delta',
    model: 'overloaded-before-first',
  },
];
