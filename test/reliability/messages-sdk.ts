import Anthropic from '@anthropic-ai/sdk';
import type { Ending } from './support.js';

/**
 * One streamed Messages request as an application makes it with the official `@anthropic-ai/sdk`
 * (`messages.stream(...).finalMessage()`), with every byte of the response recorded beside it. The
 * recording reads its own branch of the body to the end, so it says how the server ended the
 * response even when the SDK stopped reading earlier (the SDK stops at an `event: error`).
 */

export interface SdkExchange {
  /** null when no response head arrived. */
  status: number | null;
  bytes: Buffer;
  text: string;
  /** How the server ended the response, as in support.ts's exchanges. */
  end: Ending;
  /** What `finalMessage()` resolved with, or undefined when it rejected. */
  message: Anthropic.Message | undefined;
  /** What `finalMessage()` rejected with, or undefined when it resolved. */
  raised: unknown;
  /** The event types the SDK handed to the application, in order. */
  events: string[];
}

export interface SdkRequest {
  baseURL: string;
  apiKey: string;
  body: Anthropic.MessageCreateParamsNonStreaming;
  headers?: Record<string, string>;
  /** The application stops waiting (aborts the stream) after this long. */
  giveUpMs: number;
}

interface Recording {
  status: number | null;
  chunks: Buffer[];
  end: Ending;
  /** Settles when the recorded branch has ended, however it ended. */
  done: Promise<void>;
}

/**
 * A fetch for the SDK that records the response. The SDK's abort signal is not handed to the
 * connection: the SDK aborts after an error event, and the recording keeps reading to see how the
 * server ends. Only the application giving up (`giveUp`) aborts the connection.
 */
function recordingFetch(recording: Recording, giveUp: AbortSignal): typeof fetch {
  return async (input, init) => {
    const { signal: _sdkSignal, ...rest } = init ?? {};
    let response: Response;
    try {
      response = await fetch(input, { ...rest, signal: giveUp });
    } catch (error) {
      recording.end = giveUp.aborted ? 'gave_up' : 'no_response';
      throw error;
    }
    recording.status = response.status;
    if (response.body === null) {
      recording.end = 'clean';
      return response;
    }
    const [forSdk, forRecording] = response.body.tee();
    recording.done = (async () => {
      try {
        for await (const chunk of forRecording) recording.chunks.push(Buffer.from(chunk));
        recording.end = 'clean';
      } catch {
        recording.end = giveUp.aborted ? 'gave_up' : 'transport_error';
      }
    })();
    return new Response(forSdk, { status: response.status, headers: response.headers });
  };
}

export async function streamThroughSdk(request: SdkRequest): Promise<SdkExchange> {
  const giveUp = new AbortController();
  const recording: Recording = { status: null, chunks: [], end: 'no_response', done: Promise.resolve() };
  const client = new Anthropic({
    baseURL: request.baseURL,
    apiKey: request.apiKey,
    maxRetries: 0,
    fetch: recordingFetch(recording, giveUp.signal),
  });
  const stream = client.messages.stream(request.body, { headers: request.headers ?? {} });
  const events: string[] = [];
  stream.on('streamEvent', (event) => events.push(event.type));
  const timer = setTimeout(() => {
    // The application's own abort: the SDK rejects finalMessage() with APIUserAbortError.
    stream.abort();
    giveUp.abort();
  }, request.giveUpMs);
  let message: Anthropic.Message | undefined;
  let raised: unknown;
  try {
    message = await stream.finalMessage();
  } catch (error) {
    raised = error;
  }
  await recording.done;
  clearTimeout(timer);
  const bytes = Buffer.concat(recording.chunks);
  return {
    status: recording.status,
    bytes,
    text: bytes.toString('utf8'),
    end: recording.end,
    message,
    raised,
    events,
  };
}

/** `APIError (api_error)`, `APIUserAbortError`, `TypeError: terminated`: what the SDK raised, in a few words. */
export function raisedWords(error: unknown): string {
  if (error instanceof Anthropic.APIUserAbortError) return 'APIUserAbortError';
  if (error instanceof Anthropic.APIConnectionError) return error.constructor.name;
  if (error instanceof Anthropic.APIError) {
    const where = error.status === undefined ? '' : ` ${error.status}`;
    return `${error.constructor.name}${where} (${error.type ?? 'no type'})`;
  }
  if (error instanceof Error) return `${error.constructor.name}: ${error.message.slice(0, 80)}`;
  return String(error);
}
