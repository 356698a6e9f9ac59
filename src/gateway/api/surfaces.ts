/**
 * The API surfaces the gateway proxies, each one described thing: its path and what every stage of
 * the request path needs to know of it (how its streams end, whether it reports usage, its strict
 * schema, its reasoning controls, its telemetry operation). Stages read the request's surface
 * (`RequestContext.surface`) instead of naming paths; a path is spelled here and nowhere else.
 */
/** The endpoints strict mode validates and serves (spec 4.5); others are 404 there. */
export type StrictEndpoint = 'chat_completions' | 'embeddings' | 'responses' | 'messages';

/** The surfaces whose reasoning controls a configuration can translate (spec 2.6). */
export type ReasoningSurfaceName = 'chat_completions' | 'responses';

/** The wire format a provider speaks (`api` in the configuration). */
export type ProviderApi = 'openai' | 'anthropic';

/** `gen_ai.operation.name` of an inference call on the surface (OpenTelemetry GenAI conventions). */
export type GenAiOperation = 'chat' | 'text_completion' | 'embeddings';

export interface ApiSurface {
  /** The request path (without query string) that names the surface. */
  readonly path: string;
  readonly operation: GenAiOperation;
  /** A streamed request may ask for usage with `stream_options.include_usage` (`usage.request_in_streams`). */
  readonly streamOptions: boolean;
  /**
   * The tail of a complete event stream (the end marker, then only line ends and comments); a
   * stream that ends without it was cut. Undefined: a stream is complete at any event boundary.
   */
  readonly streamEnd: RegExp | undefined;
  /**
   * Its error events are ad hoc objects a client library may not recognize (a chat stream's
   * `{"error": ...}`, vLLM's `{"object": "error"}`): a passed-through stream is cut after one, so
   * no client reads what came as a whole answer.
   */
  readonly cutAfterErrorEvent: boolean;
  /** The event `type` that ends a stream cleanly (its `streamEnd`); undefined: `[DONE]` or none. */
  readonly endEvent: string | undefined;
  /** A successful response reports token usage (`usage`). */
  readonly reportsUsage: boolean;
  /** The schema strict mode validates it against; undefined: strict mode does not serve it. */
  readonly strict: StrictEndpoint | undefined;
  /** Its reasoning controls (spec 2.6); undefined: it has none, the reasoning stage skips it. */
  readonly reasoning: ReasoningSurfaceName | undefined;
  /** `sanitize_response` (standalone sanitization, spec 4.6) applies to its responses. */
  readonly sanitizable: boolean;
  /**
   * Event `type`s of its streams that report a failure (besides an error inside a 200, which every
   * surface has: embedded-error.ts).
   */
  readonly failureEventTypes: readonly string[];
  /**
   * The event `type` whose first occurrence is the first token (the commit point of a stream, the
   * first-token deadline's end); undefined: the first data frame.
   */
  readonly firstTokenEvent: string | undefined;
  /**
   * The event `type` that opens a stream with the prompt's usage (the rest comes at the end);
   * undefined: a stream reports its usage at its end only.
   */
  readonly usageStartEvent: string | undefined;
  /**
   * The `api` a provider speaks to be sent this surface's requests unchanged; a provider that
   * speaks another gets them translated to chat completions (and the answers translated back).
   * Undefined: every provider gets them unchanged.
   */
  readonly nativeApi: ProviderApi | undefined;
  /**
   * Answered by the gateway itself when a provider of the route does not speak `nativeApi`
   * (`token_count`: an estimate of the input tokens), instead of a translation.
   */
  readonly localAnswer: 'token_count' | undefined;
  /** The shape of its error bodies and error events: OpenAI's `{error: {...}}` or Anthropic's `{type: "error", error: {...}}`. */
  readonly errorShape: 'openai' | 'anthropic';
}

/** `data: [DONE]`, then only line ends and comments (keep-alives). */
const DONE_AT_END = /(?:^|\n)data: ?\[DONE\](?:\n(?::[^\r\n]*)?|[ \t\r])*$/;

export const CHAT_COMPLETIONS: ApiSurface = Object.freeze({
  path: '/v1/chat/completions',
  operation: 'chat',
  streamOptions: true,
  streamEnd: DONE_AT_END,
  cutAfterErrorEvent: true,
  endEvent: undefined,
  reportsUsage: true,
  strict: 'chat_completions',
  reasoning: 'chat_completions',
  sanitizable: true,
  failureEventTypes: [],
  firstTokenEvent: undefined,
  usageStartEvent: undefined,
  nativeApi: undefined,
  localAnswer: undefined,
  errorShape: 'openai',
});

export const COMPLETIONS: ApiSurface = Object.freeze({
  path: '/v1/completions',
  operation: 'text_completion',
  streamOptions: true,
  streamEnd: DONE_AT_END,
  cutAfterErrorEvent: true,
  endEvent: undefined,
  reportsUsage: true,
  strict: undefined,
  reasoning: undefined,
  sanitizable: false,
  failureEventTypes: [],
  firstTokenEvent: undefined,
  usageStartEvent: undefined,
  nativeApi: undefined,
  localAnswer: undefined,
  errorShape: 'openai',
});

export const RESPONSES: ApiSurface = Object.freeze({
  path: '/v1/responses',
  operation: 'chat',
  // Responses streams end with a `response.completed` event, not `[DONE]`; any event boundary is
  // taken as an end.
  streamOptions: false,
  streamEnd: undefined,
  cutAfterErrorEvent: false,
  endEvent: undefined,
  reportsUsage: true,
  strict: 'responses',
  reasoning: 'responses',
  sanitizable: false,
  failureEventTypes: ['error', 'response.failed'],
  firstTokenEvent: undefined,
  usageStartEvent: undefined,
  nativeApi: undefined,
  localAnswer: undefined,
  errorShape: 'openai',
});

export const EMBEDDINGS: ApiSurface = Object.freeze({
  path: '/v1/embeddings',
  operation: 'embeddings',
  streamOptions: false,
  streamEnd: undefined,
  cutAfterErrorEvent: false,
  endEvent: undefined,
  reportsUsage: true,
  strict: 'embeddings',
  reasoning: undefined,
  sanitizable: false,
  failureEventTypes: [],
  firstTokenEvent: undefined,
  usageStartEvent: undefined,
  nativeApi: undefined,
  localAnswer: undefined,
  errorShape: 'openai',
});

/** `message_stop`, then only line ends and comments (keep-alives). */
const MESSAGE_STOP_AT_END =
  /(?:^|\n)data: ?\{[^\n]*"type" ?: ?"message_stop"[^\n]*\}[ \t\r]*(?:\n(?::[^\r\n]*)?|[ \t\r])*$/;

/** Anthropic's Messages API: typed events, ended by `message_stop`; usage starts in `message_start`. */
export const MESSAGES: ApiSurface = Object.freeze({
  path: '/v1/messages',
  operation: 'chat',
  streamOptions: false,
  streamEnd: MESSAGE_STOP_AT_END,
  cutAfterErrorEvent: false,
  endEvent: 'message_stop',
  reportsUsage: true,
  strict: 'messages',
  reasoning: undefined,
  sanitizable: false,
  failureEventTypes: ['error'],
  firstTokenEvent: 'content_block_delta',
  usageStartEvent: 'message_start',
  nativeApi: 'anthropic',
  localAnswer: undefined,
  errorShape: 'anthropic',
});

/** The Messages API's token count: passed to providers that speak it, else estimated by the gateway. */
export const COUNT_TOKENS: ApiSurface = Object.freeze({
  path: '/v1/messages/count_tokens',
  operation: 'chat',
  streamOptions: false,
  streamEnd: undefined,
  cutAfterErrorEvent: false,
  endEvent: undefined,
  reportsUsage: false,
  // Strict mode serves what it can validate; a count request has no schema of its own there.
  strict: undefined,
  reasoning: undefined,
  sanitizable: false,
  failureEventTypes: ['error'],
  firstTokenEvent: undefined,
  usageStartEvent: undefined,
  nativeApi: 'anthropic',
  localAnswer: 'token_count',
  errorShape: 'anthropic',
});

export const SURFACES: readonly ApiSurface[] = Object.freeze([
  CHAT_COMPLETIONS,
  COMPLETIONS,
  RESPONSES,
  EMBEDDINGS,
  MESSAGES,
  COUNT_TOKENS,
]);

/** The model list, answered by the gateway itself (spec 4.1), not proxied. */
export const MODELS_PATH = '/v1/models';

const BY_PATH: ReadonlyMap<string, ApiSurface> = new Map(SURFACES.map((surface) => [surface.path, surface]));

/** The surface a request path (without query string) names; undefined for any other path. */
export function surfaceOf(path: string): ApiSurface | undefined {
  return BY_PATH.get(path);
}
