import { systemText, translateMessages, type EffortSource } from './request-messages.js';
import { reasoningEffort } from './request-reasoning.js';
import { translateToolChoice, translateTools } from './request-tools.js';
import {
  DroppedFields,
  Refusal,
  child,
  expectArray,
  expectBoolean,
  expectFiniteNumber,
  expectInteger,
  expectNonEmptyString,
  expectRecord,
  expectString,
  isRecord,
  item,
  optional,
  type JsonRecord,
} from './shape.js';

export type MessagesToChatResult =
  | { readonly ok: true; readonly body: Record<string, unknown>; readonly dropped: string[] }
  | { readonly ok: false; readonly field: string; readonly message: string };

const SERVER_SIDE: ReadonlyMap<string, string> = new Map([
  [
    'mcp_servers',
    'mcp_servers: MCP servers are connected by Anthropic, which a chat-completions provider cannot do',
  ],
  [
    'container',
    'container: code execution containers run at Anthropic, which a chat-completions provider cannot do',
  ],
]);

const TRANSLATED: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'stream',
  'metadata',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'output_format',
  ...SERVER_SIDE.keys(),
]);
const METADATA_KEYS: ReadonlySet<string> = new Set(['user_id']);
const OUTPUT_CONFIG_KEYS: ReadonlySet<string> = new Set(['effort', 'format']);
const FORMAT_KEYS: ReadonlySet<string> = new Set(['type', 'schema']);

/**
 * A Messages API request body as a chat-completions request body.
 *
 * Fields: `model`, `max_tokens`, `temperature`, `top_p` as they are; `top_k` as the extension
 * vLLM and SGLang accept; `stop_sequences` -> `stop`; `stream` -> `stream` (with
 * `stream_options.include_usage`, since a Messages stream reports usage at its end);
 * `metadata.user_id` -> `user`; `system` -> a leading system message; `messages`, `tools`,
 * `tool_choice` as in request-messages.ts and request-tools.ts; `thinking` and the effort ->
 * `reasoning_effort` (request-reasoning.ts); `output_config.format` (or the older top-level
 * `output_format`) of type `json_schema` -> `response_format` of type `json_schema`.
 *
 * Fields that a chat provider cannot honour but that change nothing of the answer's content
 * (`context_management`, `service_tier`, `inference_geo`, `cache_control`, any unknown field, and
 * the same inside messages, blocks and tools) are dropped and named in `dropped`. Server-side
 * features (`mcp_servers`, `container`) and anything that cannot be translated are refused with the
 * JSON path of the field; a body that is not an object is refused with the field `""`.
 */
export function messagesToChat(request: Record<string, unknown>): MessagesToChatResult {
  if (!isRecord(request)) return { ok: false, field: '', message: 'the request body must be a JSON object' };
  try {
    return translate(request);
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, field: error.field, message: error.message };
    throw error;
  }
}

function translate(request: JsonRecord): MessagesToChatResult {
  for (const [field, message] of SERVER_SIDE) {
    if (optional(request, field) !== undefined) throw new Refusal(field, message);
  }
  const dropped = new DroppedFields();
  const body: JsonRecord = { model: expectNonEmptyString(request.model, 'model') };

  // One leading system message: the `system` prompt, then the in-conversation system messages
  // (Claude Code sends one after the first user turn). The chat templates of many open models
  // accept a system message only first, and some raise on any other.
  const systemTexts: string[] = [];
  const system = optional(request, 'system');
  if (system !== undefined) {
    const text = systemText(system, 'system', 'system[]', dropped);
    if (text.length > 0) systemTexts.push(text);
  }
  const conversation = translateMessages(request.messages, dropped);
  const messages: JsonRecord[] = [];
  for (const message of conversation.messages) {
    if (message.role !== 'system') messages.push(message);
    else if ((message.content as string).length > 0) systemTexts.push(message.content as string);
  }
  if (systemTexts.length > 0) messages.unshift({ role: 'system', content: systemTexts.join('\n\n') });
  body.messages = messages;
  body.max_tokens = expectInteger(request.max_tokens, 'max_tokens', 1);

  const stop = optional(request, 'stop_sequences');
  if (stop !== undefined) {
    const sequences = expectArray(stop, 'stop_sequences').map((s, i) =>
      expectString(s, item('stop_sequences', i)),
    );
    if (sequences.length > 0) body.stop = sequences;
  }
  copyNumber(request, 'temperature', body);
  copyNumber(request, 'top_p', body);
  const topK = optional(request, 'top_k');
  if (topK !== undefined) body.top_k = expectInteger(topK, 'top_k', 0);

  const stream = optional(request, 'stream');
  if (stream !== undefined) {
    body.stream = expectBoolean(stream, 'stream');
    if (body.stream) body.stream_options = { include_usage: true };
  }

  const metadata = optional(request, 'metadata');
  if (metadata !== undefined) {
    const record = expectRecord(metadata, 'metadata');
    const userId = optional(record, 'user_id');
    if (userId !== undefined) body.user = expectString(userId, 'metadata.user_id');
    dropped.addUnknown(record, METADATA_KEYS, 'metadata');
  }

  let toolNames: ReadonlySet<string> = new Set();
  const tools = optional(request, 'tools');
  if (tools !== undefined) {
    const translated = translateTools(tools, dropped);
    if (translated.tools.length > 0) body.tools = translated.tools;
    toolNames = translated.names;
  }
  const toolChoice = optional(request, 'tool_choice');
  if (toolChoice !== undefined) Object.assign(body, translateToolChoice(toolChoice, toolNames, dropped));

  const output = outputConfig(request, dropped);
  const effort = reasoningEffort(optional(request, 'thinking'), output.effort, conversation.efforts, dropped);
  if (effort !== undefined) body.reasoning_effort = effort;
  if (output.responseFormat !== undefined) body.response_format = output.responseFormat;

  dropped.addUnknown(request, TRANSLATED, '');
  return { ok: true, body, dropped: dropped.list() };
}

function copyNumber(request: JsonRecord, key: string, body: JsonRecord): void {
  const value = optional(request, key);
  if (value !== undefined) body[key] = expectFiniteNumber(value, key);
}

interface OutputConfig {
  readonly effort: EffortSource | undefined;
  readonly responseFormat: JsonRecord | undefined;
}

/** The effort and the structured-output format of `output_config` (and the older `output_format`). */
function outputConfig(request: JsonRecord, dropped: DroppedFields): OutputConfig {
  let effort: EffortSource | undefined;
  let responseFormat: JsonRecord | undefined;
  const config = optional(request, 'output_config');
  if (config !== undefined) {
    const record = expectRecord(config, 'output_config');
    const value = optional(record, 'effort');
    if (value !== undefined)
      effort = { value, path: 'output_config.effort', pattern: 'output_config.effort' };
    const format = optional(record, 'format');
    if (format !== undefined) responseFormat = jsonSchemaFormat(format, 'output_config.format', dropped);
    dropped.addUnknown(record, OUTPUT_CONFIG_KEYS, 'output_config');
  }
  const legacy = optional(request, 'output_format');
  if (legacy !== undefined) {
    if (responseFormat !== undefined) {
      throw new Refusal('output_format', 'output_format and output_config.format cannot both be given');
    }
    responseFormat = jsonSchemaFormat(legacy, 'output_format', dropped);
  }
  return { effort, responseFormat };
}

function jsonSchemaFormat(value: unknown, path: string, dropped: DroppedFields): JsonRecord {
  const format = expectRecord(value, path);
  if (format.type !== 'json_schema') {
    throw new Refusal(child(path, 'type'), `${path}.type must be "json_schema"`);
  }
  const schema = expectRecord(format.schema, child(path, 'schema'));
  dropped.addUnknown(format, FORMAT_KEYS, path);
  return { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } };
}
