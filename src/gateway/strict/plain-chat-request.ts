/**
 * A fast acceptance test for the most common chat request: text messages and scalar parameters
 * only. zod's validation of even a 200-byte request allocates about 6 KB (the validated copy, which
 * strict mode then discards because it forwards the client's own object), which is most of what
 * strict mode allocates per request beyond plain pass-through. This check allocates nothing and
 * answers `true` only for requests the strict schema (`ChatCompletionRequestSchema`) accepts; for
 * anything else, including every request it does not fully understand, it answers `false` and the
 * schema decides (and words the error). test/strict/plain-chat-request.test.ts checks the
 * implication against the schema on generated requests.
 */

type Check = (value: unknown) => boolean;

/** `opt(...)` of the schema: absent fields never reach a check; null means "not set". */
const nullable =
  (check: Check): Check =>
  (value) =>
    value === null || check(value);

const isString: Check = (value) => typeof value === 'string';
const isBoolean: Check = (value) => typeof value === 'boolean';
/** `z.number()`: finite numbers only. */
const isNumber: Check = (value) => typeof value === 'number' && Number.isFinite(value);
/** `z.int()`: safe integers only. */
const isInt: Check = (value) => Number.isSafeInteger(value);
const isStop: Check = (value) =>
  typeof value === 'string' || (Array.isArray(value) && value.every((item) => typeof item === 'string'));

/** Top-level fields this check understands, with the schema's type of each (all optional but two). */
const FIELDS: ReadonlyMap<string, Check> = new Map([
  ['model', isString],
  ['messages', Array.isArray],
  ['frequency_penalty', nullable(isNumber)],
  ['logprobs', nullable(isBoolean)],
  ['max_completion_tokens', nullable(isInt)],
  ['max_tokens', nullable(isInt)],
  ['n', nullable(isInt)],
  ['parallel_tool_calls', nullable(isBoolean)],
  ['presence_penalty', nullable(isNumber)],
  ['prompt_cache_key', nullable(isString)],
  ['safety_identifier', nullable(isString)],
  ['seed', nullable(isInt)],
  ['stop', nullable(isStop)],
  ['store', nullable(isBoolean)],
  ['stream', nullable(isBoolean)],
  ['temperature', nullable(isNumber)],
  ['top_logprobs', nullable(isInt)],
  ['top_p', nullable(isNumber)],
  ['user', nullable(isString)],
]);

/** Message fields by role, for text-only messages (content parts, tool calls: the schema decides). */
const MESSAGE_FIELDS: ReadonlyMap<string, ReadonlyMap<string, Check>> = new Map([
  [
    'system',
    new Map([
      ['content', isString],
      ['name', nullable(isString)],
    ]),
  ],
  [
    'developer',
    new Map([
      ['content', isString],
      ['name', nullable(isString)],
    ]),
  ],
  [
    'user',
    new Map([
      ['content', isString],
      ['name', nullable(isString)],
    ]),
  ],
  [
    'assistant',
    new Map([
      ['content', nullable(isString)],
      ['name', nullable(isString)],
      ['refusal', nullable(isString)],
    ]),
  ],
]);

/** Roles whose `content` the schema requires. */
const CONTENT_REQUIRED: ReadonlySet<string> = new Set(['system', 'developer', 'user']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isTextMessage(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const role = value.role;
  if (typeof role !== 'string') return false;
  const fields = MESSAGE_FIELDS.get(role);
  if (fields === undefined) return false;
  if (CONTENT_REQUIRED.has(role) && !Object.hasOwn(value, 'content')) return false;
  for (const key in value) {
    if (key === 'role') continue;
    const check = fields.get(key);
    if (check === undefined || !check(value[key])) return false;
  }
  return true;
}

/** True only when the strict chat request schema accepts `body` (false: ask the schema). */
export function isPlainChatRequest(body: Record<string, unknown>): boolean {
  if (!isPlainObject(body) || typeof body.model !== 'string' || !Array.isArray(body.messages)) return false;
  for (const key in body) {
    const check = FIELDS.get(key);
    if (check === undefined || !check(body[key])) return false;
  }
  for (const message of body.messages as unknown[]) if (!isTextMessage(message)) return false;
  return true;
}
