/**
 * What an application observes of one streamed Messages request through the official
 * `@anthropic-ai/sdk`, read either way an application reads it (messages-scenarios.ts,
 * `MessagesReader`), and the verdict on it, in the chat rows' terms (observe.ts):
 *
 * - `completed`: the whole answer: the expected text, `stop_reason: end_turn`, and `message_stop`;
 * - `visible`: the SDK raised (a status, a broken transfer, an `event: error`);
 * - `silent`: the application was handed a message or an event stream that ended normally, but is
 *   not the answer (truncated, or without its `message_stop`);
 * - `hung`: no end within the bound; the application gives up.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { Observation, Verdict } from './observe.ts';
import type { MessagesReader } from './messages-scenarios.ts';

/** One Messages request as the scorecard sends it. */
export interface MessagesTarget {
  /** The origin the SDK is pointed at (it appends `/v1/messages`). */
  readonly origin: string;
  readonly model: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface MessagesAsk {
  readonly reader: MessagesReader;
  /** The answer's text. */
  readonly expected: string;
  /** No end within this many milliseconds is a hang. */
  readonly hangMs: number;
}

const MESSAGES: Anthropic.MessageParam[] = [{ role: 'user', content: 'Say something.' }];
const MAX_TOKENS = 64;

/** The answer as the application assembled it, and the request's clock. */
class Assembled {
  readonly #started = performance.now();
  readonly #ask: MessagesAsk;
  text = '';
  stopReason: string | null = null;
  stopSeen = false;
  firstMs: number | undefined;

  constructor(ask: MessagesAsk) {
    this.#ask = ask;
  }

  take(event: Anthropic.RawMessageStreamEvent): void {
    if (event.type === 'content_block_delta') this.firstMs ??= this.elapsed();
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      this.text += event.delta.text;
    if (event.type === 'message_delta') this.stopReason = event.delta.stop_reason;
    if (event.type === 'message_stop') this.stopSeen = true;
  }

  elapsed(): number {
    return Math.round(performance.now() - this.#started);
  }

  seen(verdict: Verdict, detail: string): Observation {
    return { verdict, detail, firstMs: this.firstMs, totalMs: this.elapsed() };
  }

  hung(): Observation {
    return this.seen('hung', `no end after ${this.#ask.hangMs / 1000} s`);
  }

  /** What the application was handed as a success: the whole answer, or not. */
  judged(how: string): Observation {
    if (this.stopSeen && this.stopReason === 'end_turn' && this.text === this.#ask.expected)
      return this.seen('completed', how);
    const words = (text: string) => (text.trim() === '' ? 0 : text.trim().split(/\s+/).length);
    const stop = this.stopSeen ? '' : ', no `message_stop`';
    return this.seen(
      'silent',
      `${how}: ${words(this.text)} of ${words(this.#ask.expected)} words, stop_reason ${this.stopReason ?? 'none'}${stop}`,
    );
  }
}

export async function observeMessagesSdk(target: MessagesTarget, ask: MessagesAsk): Promise<Observation> {
  const assembled = new Assembled(ask);
  const client = new Anthropic({
    baseURL: target.origin,
    apiKey: 'scorecard',
    defaultHeaders: target.headers,
    maxRetries: 0,
    timeout: ask.hangMs,
  });
  const body = { model: target.model, max_tokens: MAX_TOKENS, messages: MESSAGES };
  // A stream that stalls after its head is read forever unless the application bounds it, as this
  // one does; the SDK's iteration ends quietly when aborted, so the bound says what ended it.
  const controller = new AbortController();
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    controller.abort();
  }, ask.hangMs);
  try {
    if (ask.reader === 'final') {
      const stream = client.messages.stream(body, { signal: controller.signal });
      stream.on('streamEvent', (event) => assembled.take(event));
      await stream.finalMessage();
      return assembled.judged('returned');
    }
    const stream = await client.messages.create({ ...body, stream: true }, { signal: controller.signal });
    for await (const event of stream) assembled.take(event);
    if (hung) return assembled.hung();
    return assembled.judged('iteration ended');
  } catch (error) {
    if (hung || error instanceof Anthropic.APIConnectionTimeoutError) return assembled.hung();
    return assembled.seen('visible', raisedWords(error));
  } finally {
    clearTimeout(timer);
  }
}

function raisedWords(error: unknown): string {
  if (error instanceof Anthropic.APIConnectionError) return error.constructor.name;
  if (error instanceof Anthropic.APIError) {
    const name = error.constructor.name;
    const type = error.type === null ? '' : `, ${error.type}`;
    // No status: the error came as an event inside a 200 stream.
    return error.status === undefined
      ? `${name} from an error event${type}`
      : `${name} ${error.status}${type}`;
  }
  if (error instanceof Error) return `${error.constructor.name}: ${error.message.slice(0, 70)}`;
  return 'error';
}
