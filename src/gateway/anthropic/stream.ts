import { SseParser, classifyData, type SseEvent } from '../../lib/sse.js';
import { embeddedError, embeddedStatus } from '../api/embedded-error.js';
import { anthropicErrorEvent, maskedAnthropicError, openAiErrorMessage } from './errors.js';
import { generatedToolUseId, messageId } from './ids.js';
import { messagesUsage, stopOutcome, type StopOutcome } from './outcome.js';
import { parseArguments, reasoningText } from './response.js';
import { isRecord, type JsonRecord } from './shape.js';
import { ThinkingSigner } from './signature.js';
import {
  MESSAGE_STOP_EVENT,
  blockStopEvent,
  inputJsonDeltaEvent,
  messageDeltaEvent,
  messageStartEvent,
  signatureDeltaEvent,
  textDeltaEvent,
  textStartEvent,
  thinkingDeltaEvent,
  thinkingStartEvent,
  toolUseStartEvent,
} from './stream-events.js';

/**
 * A chat-completions SSE stream as a Messages API SSE stream, incrementally: upstream bytes in any
 * chunking, Messages events out, the same whatever the chunking (each event's output depends only
 * on the events before it). Only the open content block's state is kept: the running hash of a
 * thinking block, the arguments of the open tool call (to check they form an object).
 *
 * Events: `message_start` at the first chunk; reasoning deltas -> a thinking block, closed with a
 * `signature_delta` of `thinkingSignature` of its whole text; content deltas -> a text block; tool
 * call fragments (by `index`) -> a `tool_use` block started by the fragment that carries the name
 * (input `{}`), then every arguments fragment exactly as sent as an `input_json_delta`, so the
 * client's concatenation is the provider's arguments. Another kind of block, or another tool call,
 * closes the open block; blocks are numbered from 0. `finish_reason` and usage are remembered, and
 * `[DONE]` closes the open block and writes `message_delta` and `message_stop`.
 *
 * Failures end the stream with an `event: error` and nothing after it (state `error_event`): a
 * chunk carrying an error (its status from its code), and, as 502, data that is not a chunk, a
 * second choice, a tool call without a name, tool calls whose fragments interleave (a Messages
 * block cannot be reopened), tool arguments that are not a JSON object when the call closes
 * (unless the answer was cut by `length`), and a finish reason without a Messages equivalent.
 *
 * Ends: only `[DONE]` completes the stream. An upstream that ends without it (`clean`, even after
 * a `finish_reason`) or inside an event (`incomplete`) is cut, and no `message_stop` is written:
 * the caller ends the client stream as broken. Overflow of `maxPendingBytes` is `overflow`.
 */

export interface ChatToMessagesStreamOptions {
  /** The model name the client asked for, written into `message_start`. */
  readonly model: string;
  /** The request's stop sequences, to report which one stopped the answer. */
  readonly stopSequences?: readonly string[];
  /** `--sse-buffer-limit`: the cap on an unfinished upstream event. */
  readonly maxPendingBytes: number;
  /** Strict mode and an untrusted provider: its error events say only the masked status. */
  readonly masked?: boolean;
}

/**
 * `open`: keep feeding. `done`: `message_stop` was written. `error_event`: an error event was
 * written and the stream is over. `overflow`: the unfinished-event cap was exceeded. Once not
 * `open`, every later push returns the same state with empty output.
 */
export type ChatToMessagesState = 'open' | 'done' | 'error_event' | 'overflow';

export interface ChatToMessagesStreamError {
  /** The status the error stands for: the provider's code, or 502 for a stream that is not valid. */
  readonly upstreamStatus: number;
  readonly message: string;
}

export interface ChatToMessagesOverflow {
  readonly pendingBytes: number;
  readonly limit: number;
}

export interface ChatToMessagesStep {
  /** Text to write to the client now (may be empty). */
  readonly output: string;
  readonly state: ChatToMessagesState;
  /**
   * This step wrote the first content delta (text, thinking or tool input): the first token. The
   * caller holds the output before it (`message_start`, a `content_block_start`) until then.
   */
  readonly firstDataFrame: boolean;
  readonly error?: ChatToMessagesStreamError;
  readonly overflow?: ChatToMessagesOverflow;
}

export type ChatToMessagesEndStep =
  | {
      readonly output: '';
      readonly state: 'done' | 'error_event' | 'overflow';
      readonly firstDataFrame: false;
      readonly error?: ChatToMessagesStreamError;
      readonly overflow?: ChatToMessagesOverflow;
    }
  /** The upstream ended at an event boundary without `[DONE]`: a cut stream. */
  | { readonly output: ''; readonly state: 'clean'; readonly firstDataFrame: false }
  /** The upstream ended inside an event: a cut stream. */
  | {
      readonly output: '';
      readonly state: 'incomplete';
      readonly firstDataFrame: false;
      readonly pendingBytes: number;
    };

const NO_BLOCK = 0;
const THINKING_BLOCK = 1;
const TEXT_BLOCK = 2;
const TOOL_BLOCK = 3;
type BlockKind = typeof NO_BLOCK | typeof THINKING_BLOCK | typeof TEXT_BLOCK | typeof TOOL_BLOCK;

const INVALID_STREAM_STATUS = 502;
const INVALID_STREAM_EVENT = 'the provider sent an invalid stream event';
const REFUSAL: StopOutcome = { stopReason: 'refusal', stopSequence: null };

export class ChatToMessagesStream {
  readonly #parser: SseParser;
  readonly #modelJson: string;
  readonly #stopSequences: readonly string[] | undefined;
  readonly #masked: boolean;

  #state: ChatToMessagesState = 'open';
  /** Output of the step in progress. */
  #out = '';
  #firstInStep = false;
  #sawContent = false;
  #started = false;
  #error: ChatToMessagesStreamError | undefined;
  #overflow: ChatToMessagesOverflow | undefined;

  #blockCount = 0;
  #openKind: BlockKind = NO_BLOCK;
  #openIndex = -1;
  #signer: ThinkingSigner | undefined;
  /** The open tool call: its upstream `index` (negative for fragments sent without one). */
  #toolKey = 0;
  #toolId = '';
  #toolName = '';
  #toolArguments = '';
  readonly #startedTools = new Set<number>();
  #nextUnindexedKey = -1;

  #finishReason: unknown;
  #matchedStop: unknown;
  #usage: unknown;
  #refused = false;

  constructor(options: ChatToMessagesStreamOptions) {
    this.#modelJson = JSON.stringify(options.model);
    this.#stopSequences = options.stopSequences;
    this.#masked = options.masked ?? false;
    this.#parser = new SseParser(
      { onEvent: (event) => this.#onEvent(event) },
      { maxPendingBytes: options.maxPendingBytes },
    );
  }

  get state(): ChatToMessagesState {
    return this.#state;
  }

  /**
   * The error that ended the stream before any content delta: the client has been sent nothing
   * that the caller does not hold, so the request may fail over to another provider.
   */
  get leadingError(): ChatToMessagesStreamError | undefined {
    return this.#sawContent ? undefined : this.#error;
  }

  push(chunk: Buffer): ChatToMessagesStep {
    if (this.#state !== 'open') return this.#step('', false);
    this.#out = '';
    this.#firstInStep = false;
    const pushed = this.#parser.push(chunk);
    if (!pushed.ok && this.#state === 'open') {
      this.#state = 'overflow';
      this.#overflow = { pendingBytes: pushed.pendingBytes, limit: pushed.limit };
    }
    const output = this.#out;
    this.#out = '';
    return this.#step(output, this.#firstInStep);
  }

  /** The upstream body ended. A terminal state is reported again; otherwise the stream was cut. */
  end(): ChatToMessagesEndStep {
    if (this.#state === 'open') {
      const ended = this.#parser.end();
      if (ended.ok) return { output: '', state: 'clean', firstDataFrame: false };
      if (ended.kind === 'incomplete') {
        return { output: '', state: 'incomplete', firstDataFrame: false, pendingBytes: ended.pendingBytes };
      }
      this.#state = 'overflow';
      this.#overflow = { pendingBytes: ended.pendingBytes, limit: ended.limit };
    }
    const step: {
      output: '';
      state: 'done' | 'error_event' | 'overflow';
      firstDataFrame: false;
      error?: ChatToMessagesStreamError;
      overflow?: ChatToMessagesOverflow;
    } = { output: '', state: this.#state as 'done' | 'error_event' | 'overflow', firstDataFrame: false };
    if (this.#error !== undefined) step.error = this.#error;
    if (this.#overflow !== undefined) step.overflow = this.#overflow;
    return step;
  }

  #step(output: string, firstDataFrame: boolean): ChatToMessagesStep {
    const step: {
      output: string;
      state: ChatToMessagesState;
      firstDataFrame: boolean;
      error?: ChatToMessagesStreamError;
      overflow?: ChatToMessagesOverflow;
    } = { output, state: this.#state, firstDataFrame };
    if (this.#error !== undefined) step.error = this.#error;
    if (this.#overflow !== undefined) step.overflow = this.#overflow;
    return step;
  }

  #onEvent(event: SseEvent): void {
    if (this.#state !== 'open') return;
    const kind = classifyData(event.data);
    if (kind === 'empty') return;
    if (kind === 'done') {
      this.#finish();
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    if (!isRecord(chunk)) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    const error = embeddedError(chunk);
    if (error !== undefined) {
      this.#fail(embeddedStatus(error), openAiErrorMessage(chunk) ?? 'the provider reported an error');
      return;
    }
    const choices = chunk.choices;
    if (choices !== undefined && choices !== null && !Array.isArray(choices)) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    if (!this.#started) this.#start(chunk.id);
    if (isRecord(chunk.usage)) this.#usage = chunk.usage;
    if (choices === undefined || choices === null) return;
    for (const choice of choices) {
      this.#onChoice(choice);
      if (this.#state !== 'open') return;
    }
  }

  #onChoice(choice: unknown): void {
    if (!isRecord(choice)) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    if (choice.index !== undefined && choice.index !== 0) {
      this.#fail(INVALID_STREAM_STATUS, 'the provider sent more than one choice');
      return;
    }
    const delta = choice.delta;
    if (isRecord(delta)) {
      this.#onDelta(delta);
      if (this.#state !== 'open') return;
    } else if (delta !== undefined && delta !== null) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    const finish = choice.finish_reason;
    if (finish !== undefined && finish !== null) {
      this.#finishReason = finish;
      this.#matchedStop = choice.stop_reason;
    }
  }

  #onDelta(delta: JsonRecord): void {
    const reasoning = reasoningText(delta);
    if (reasoning !== undefined) {
      this.#thinking(reasoning);
      if (this.#state !== 'open') return;
    }
    const content = delta.content;
    if (typeof content === 'string') {
      if (content.length > 0) this.#text(content);
    } else if (content !== undefined && content !== null) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
    }
    if (this.#state !== 'open') return;
    const refusal = delta.refusal;
    if (typeof refusal === 'string' && refusal.length > 0) {
      this.#refused = true;
      this.#text(refusal);
      if (this.#state !== 'open') return;
    }
    const toolCalls = delta.tool_calls;
    if (Array.isArray(toolCalls)) {
      for (const fragment of toolCalls) {
        this.#toolFragment(fragment);
        if (this.#state !== 'open') return;
      }
    } else if (toolCalls !== undefined && toolCalls !== null) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    // The legacy single function call: an unindexed tool call without an id.
    if (isRecord(delta.function_call)) this.#toolFragment({ function: delta.function_call });
  }

  #thinking(text: string): void {
    if (this.#openKind !== THINKING_BLOCK) {
      if (!this.#openBlock(THINKING_BLOCK)) return;
      this.#out += thinkingStartEvent(this.#openIndex);
      this.#signer = new ThinkingSigner();
    }
    this.#signer!.update(text);
    this.#out += thinkingDeltaEvent(this.#openIndex, text);
    this.#contentWritten();
  }

  #text(text: string): void {
    if (this.#openKind !== TEXT_BLOCK) {
      if (!this.#openBlock(TEXT_BLOCK)) return;
      this.#out += textStartEvent(this.#openIndex);
    }
    this.#out += textDeltaEvent(this.#openIndex, text);
    this.#contentWritten();
  }

  #toolFragment(fragment: unknown): void {
    if (
      !isRecord(fragment) ||
      (fragment.function !== undefined && fragment.function !== null && !isRecord(fragment.function))
    ) {
      this.#fail(INVALID_STREAM_STATUS, INVALID_STREAM_EVENT);
      return;
    }
    const fn = isRecord(fragment.function) ? fragment.function : undefined;
    const id = typeof fragment.id === 'string' && fragment.id.length > 0 ? fragment.id : undefined;
    const key = typeof fragment.index === 'number' ? fragment.index : this.#unindexedKey(id);

    if (this.#openKind !== TOOL_BLOCK || this.#toolKey !== key) {
      if (this.#startedTools.has(key)) {
        this.#fail(INVALID_STREAM_STATUS, 'the provider interleaved the fragments of several tool calls');
        return;
      }
      const name = fn?.name;
      if (typeof name !== 'string' || name.length === 0) {
        this.#fail(INVALID_STREAM_STATUS, 'the provider started a tool call without a function name');
        return;
      }
      if (!this.#openBlock(TOOL_BLOCK)) return;
      this.#startedTools.add(key);
      this.#toolKey = key;
      this.#toolId = id ?? generatedToolUseId();
      this.#toolName = name;
      this.#toolArguments = '';
      this.#out += toolUseStartEvent(this.#openIndex, this.#toolId, name);
    }
    const fragmentArguments = fn?.arguments;
    if (typeof fragmentArguments === 'string' && fragmentArguments.length > 0) {
      this.#toolArguments += fragmentArguments;
      this.#out += inputJsonDeltaEvent(this.#openIndex, fragmentArguments);
      this.#contentWritten();
    }
  }

  /** A fragment without `index` continues the open unindexed call unless it names another id. */
  #unindexedKey(id: string | undefined): number {
    if (this.#openKind === TOOL_BLOCK && this.#toolKey < 0 && (id === undefined || id === this.#toolId)) {
      return this.#toolKey;
    }
    return this.#nextUnindexedKey--;
  }

  /** Closes the open block and opens one of `kind`; false if closing failed the stream. */
  #openBlock(kind: BlockKind): boolean {
    if (this.#openKind !== NO_BLOCK && !this.#closeBlock()) return false;
    this.#openKind = kind;
    this.#openIndex = this.#blockCount++;
    return true;
  }

  /** Closes the open block; false if it failed the stream (tool arguments that are not an object). */
  #closeBlock(): boolean {
    if (this.#openKind === THINKING_BLOCK) {
      this.#out += signatureDeltaEvent(this.#openIndex, this.#signer!.signature());
      this.#signer = undefined;
    } else if (this.#openKind === TOOL_BLOCK) {
      if (this.#finishReason !== 'length' && parseArguments(this.#toolArguments) === undefined) {
        this.#fail(
          INVALID_STREAM_STATUS,
          `the provider sent tool call ${JSON.stringify(this.#toolName)} (id ${this.#toolId}) with arguments that are not a JSON object`,
        );
        return false;
      }
      this.#toolArguments = '';
    }
    this.#out += blockStopEvent(this.#openIndex);
    this.#openKind = NO_BLOCK;
    return true;
  }

  #contentWritten(): void {
    if (!this.#sawContent) {
      this.#sawContent = true;
      this.#firstInStep = true;
    }
  }

  #start(chatId: unknown): void {
    this.#started = true;
    this.#out += messageStartEvent(messageId(chatId), this.#modelJson);
  }

  /** `[DONE]`: the stream's end, the only one that completes it. */
  #finish(): void {
    if (!this.#started) this.#start(undefined);
    if (this.#openKind !== NO_BLOCK && !this.#closeBlock()) return;
    const stop = stopOutcome(
      this.#finishReason,
      this.#matchedStop,
      this.#stopSequences,
      this.#startedTools.size > 0,
    );
    if (stop === undefined) {
      this.#fail(
        INVALID_STREAM_STATUS,
        `the provider ended the answer with finish_reason ${JSON.stringify(this.#finishReason)}, which has no Messages API equivalent`,
      );
      return;
    }
    const outcome = this.#refused && stop.stopReason === 'end_turn' ? REFUSAL : stop;
    this.#out += messageDeltaEvent(outcome, messagesUsage(this.#usage)) + MESSAGE_STOP_EVENT;
    this.#state = 'done';
  }

  #fail(status: number, message: string): void {
    if (this.#masked) {
      const masked = maskedAnthropicError(status);
      this.#out += `event: error\ndata: ${JSON.stringify(masked)}\n\n`;
    } else {
      this.#out += anthropicErrorEvent(status, message);
    }
    this.#state = 'error_event';
    this.#error = { upstreamStatus: status, message };
  }
}
