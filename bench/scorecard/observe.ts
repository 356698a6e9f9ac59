/**
 * What a client observes of one chat completion, and the verdict on it. Two clients read the same
 * request: raw HTTP (undici's fetch, reading the SSE frames itself, as a careful hand-written client
 * would) and the official openai SDK (what most applications use). The verdict:
 *
 * - `completed`: the whole answer, as the provider's healthy model gives it (the expected text and
 *   `finish_reason: stop`), and for raw streams the `[DONE]` sentinel;
 * - `visible`: a failure the client can act on: a non-2xx status, a broken transfer, an error event
 *   (raw: any error-shaped event; SDK: an exception);
 * - `silent`: the client was handed a success that is not the answer (truncated or wrong text);
 * - `hung`: no end within the bound; the client gives up.
 */
import OpenAI from 'openai';

export type Verdict = 'completed' | 'visible' | 'silent' | 'hung';

export interface Observation {
  readonly verdict: Verdict;
  /** What the client saw, in a few words (`502 upstream_unavailable`, `transport error`, ...). */
  readonly detail: string;
  /** Request start to the first content (streams), or to the whole body (non-streamed). */
  readonly firstMs: number | undefined;
  readonly totalMs: number;
}

/** One request as the scorecard sends it. */
export interface Target {
  /** Base URL with `/v1`. */
  readonly baseUrl: string;
  readonly model: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface Ask {
  readonly stream: boolean;
  /** The answer a healthy provider gives. */
  readonly expected: string;
  /** No end within this many milliseconds is a hang. */
  readonly hangMs: number;
  /** Abort the request after this many content frames (a client that cancels). */
  readonly cancelAfterFrames?: number;
}

const MESSAGES = [{ role: 'user' as const, content: 'Say something.' }];

/**
 * An error-shaped event or body: OpenAI's `{"error": ...}` or vLLM's `{"object": "error", ...}`,
 * named with its code.
 */
function errorOf(value: unknown, what: 'event' | 'body'): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const record = value as { error?: { code?: unknown }; object?: unknown; code?: unknown };
  if (record.error !== undefined && record.error !== null)
    return `error ${what} ${String(record.error.code ?? '')}`.trim();
  if (record.object === 'error') return `error ${what} ${String(record.code ?? '')} (vLLM shape)`.trim();
  return undefined;
}

interface Choice {
  readonly delta?: { readonly content?: string | null };
  readonly message?: { readonly content?: string | null };
  readonly finish_reason?: string | null;
}

/** The answer as a client assembles it, and the request's clock. */
class Answer {
  readonly #started = performance.now();
  readonly #ask: Ask;
  content = '';
  finish: string | null = null;
  frames = 0;
  firstMs: number | undefined;

  constructor(ask: Ask) {
    this.#ask = ask;
  }

  /** A streamed chunk's or a whole body's first choice. */
  take(choice: Choice | undefined): void {
    const piece = choice?.delta?.content ?? choice?.message?.content;
    if (piece) {
      this.firstMs ??= this.elapsed();
      this.content += piece;
      this.frames++;
    }
    if (choice?.finish_reason) this.finish = choice.finish_reason;
  }

  /** The client means to cancel now. */
  cancels(): boolean {
    return this.#ask.cancelAfterFrames !== undefined && this.frames >= this.#ask.cancelAfterFrames;
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

  /**
   * A success as the client received it: the whole answer, or a truncated one handed over as if
   * complete. `complete` is whatever the client has that says the answer ended (raw: `[DONE]`).
   */
  judged(complete: boolean, how: string): Observation {
    if (complete && this.content === this.#ask.expected && this.finish === 'stop')
      return this.seen('completed', how);
    const words = (text: string) => (text.trim() === '' ? 0 : text.trim().split(/\s+/).length);
    return this.seen(
      'silent',
      `${how}: ${words(this.content)} of ${words(this.#ask.expected)} words, finish_reason ${this.finish ?? 'none'}`,
    );
  }
}

/** Aborts `controller` after the hang bound; `hung()` says whether that is what ended the request. */
function bound(controller: AbortController, ms: number): { hung(): boolean; clear(): void } {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort();
  }, ms);
  return { hung: () => fired, clear: () => clearTimeout(timer) };
}

/** The data of each complete SSE event in `buffer`, and what is left of it. */
function takeEvents(buffer: string): { data: string[]; rest: string } {
  const data: string[] = [];
  let boundary: number;
  while ((boundary = buffer.indexOf('\n\n')) >= 0) {
    for (const line of buffer.slice(0, boundary).split('\n'))
      if (line.startsWith('data:')) data.push(line.slice(5).trim());
    buffer = buffer.slice(boundary + 2);
  }
  return { data, rest: buffer };
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Raw HTTP: the status, the body's frames, how the transfer ended. */
export async function observeRaw(target: Target, ask: Ask): Promise<Observation> {
  const answer = new Answer(ask);
  const controller = new AbortController();
  const limit = bound(controller, ask.hangMs);
  try {
    const response = await fetch(`${target.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer scorecard', ...target.headers },
      body: JSON.stringify({ model: target.model, messages: MESSAGES, stream: ask.stream }),
      signal: controller.signal,
    });
    if (response.status !== 200) {
      const body = parsed(await response.text()) as
        { error?: { code?: unknown; type?: unknown } } | undefined;
      const code = String(body?.error?.code ?? body?.error?.type ?? '');
      return answer.seen('visible', `${response.status} ${code}`.trim());
    }
    if (!ask.stream) {
      const body = parsed(await response.text());
      if (body === undefined) return answer.seen('visible', '200, body not JSON');
      const error = errorOf(body, 'body');
      if (error !== undefined) return answer.seen('visible', `200, ${error}`);
      answer.take((body as { choices?: Choice[] }).choices?.[0]);
      return answer.judged(true, '200');
    }
    // A stream: frames as they come, until the body ends or breaks.
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let done = false;
    let error: string | undefined;
    for (;;) {
      let read: Awaited<ReturnType<typeof reader.read>>;
      try {
        read = await reader.read();
      } catch {
        if (limit.hung()) return answer.hung();
        // A break after the [DONE] took nothing from the answer.
        if (done && error === undefined) return answer.judged(true, '200, transport error after [DONE]');
        return answer.seen('visible', error ? `${error}, then transport error` : 'transport error');
      }
      if (read.done) break;
      const events = takeEvents(buffer + decoder.decode(read.value, { stream: true }));
      buffer = events.rest;
      for (const data of events.data) {
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const event = parsed(data);
        error ??= errorOf(event, 'event');
        answer.take((event as { choices?: Choice[] } | undefined)?.choices?.[0]);
      }
      if (answer.cancels()) {
        controller.abort();
        return answer.seen('visible', 'cancelled by the client');
      }
    }
    if (error !== undefined) return answer.seen('visible', `200, ${error}, clean end`);
    return answer.judged(done, done ? '200' : '200, clean end without [DONE]');
  } catch (error) {
    if (limit.hung()) return answer.hung();
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    return answer.seen('visible', typeof code === 'string' ? code : 'transport error');
  } finally {
    limit.clear();
  }
}

/** The official openai SDK, as an application uses it: it raises, or it hands over an answer. */
export async function observeSdk(target: Target, ask: Ask): Promise<Observation> {
  const answer = new Answer(ask);
  const client = new OpenAI({
    baseURL: target.baseUrl,
    apiKey: 'scorecard',
    defaultHeaders: target.headers,
    maxRetries: 0,
    timeout: ask.hangMs,
  });
  // The SDK's own timeout ends a request without a response head; a stream that stalls after its
  // head is read forever unless the application bounds it, as this one does.
  const controller = new AbortController();
  const limit = bound(controller, ask.hangMs);
  try {
    if (!ask.stream) {
      const completion = await client.chat.completions.create(
        { model: target.model, messages: MESSAGES },
        { signal: controller.signal },
      );
      answer.take(completion.choices?.[0]);
      return answer.judged(true, 'returned');
    }
    const stream = await client.chat.completions.create(
      { model: target.model, messages: MESSAGES, stream: true },
      { signal: controller.signal },
    );
    for await (const chunk of stream) {
      answer.take(chunk.choices?.[0]);
      if (answer.cancels()) {
        controller.abort();
        return answer.seen('visible', 'cancelled by the client');
      }
    }
    // An aborted stream ends the SDK's iteration quietly: the bound is what ended it.
    if (limit.hung()) return answer.hung();
    return answer.judged(true, 'returned');
  } catch (error) {
    if (limit.hung() || error instanceof OpenAI.APIConnectionTimeoutError) return answer.hung();
    return answer.seen('visible', sdkErrorWords(error));
  } finally {
    limit.clear();
  }
}

function sdkErrorWords(error: unknown): string {
  if (error instanceof OpenAI.APIConnectionError) return error.constructor.name;
  if (error instanceof OpenAI.APIError) {
    const name = error.constructor.name;
    // No status: the error object came inside a 200 stream.
    return error.status === undefined ? `${name} from an error event` : `${name} ${error.status}`;
  }
  if (error instanceof Error) return `${error.constructor.name}: ${error.message.slice(0, 40)}`;
  return 'error';
}
