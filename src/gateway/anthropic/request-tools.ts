import {
  DroppedFields,
  Refusal,
  child,
  expectArray,
  expectBoolean,
  expectNonEmptyString,
  expectRecord,
  expectString,
  item,
  optional,
  type JsonRecord,
} from './shape.js';

/**
 * `tools` and `tool_choice` of a Messages request as chat-completions `tools`, `tool_choice` and
 * `parallel_tool_calls`.
 *
 * Custom tools (no `type`, or `"custom"`) become functions whose `parameters` is the
 * `input_schema` as sent (`$schema` included). `cache_control` and `defer_loading` are dropped and
 * reported: a chat provider caches by itself, and a deferred tool is simply sent in full. Every
 * other tool type is a server tool that Anthropic runs (web search, code execution, bash, text
 * editor, computer use, ...) and is refused.
 */

const DEFER_LOADING = 'defer_loading';
/** Read or named on their own; `cache_control` is named by `addUnknown`. */
const TOOL_KEYS: ReadonlySet<string> = new Set([
  'type',
  'name',
  'description',
  'input_schema',
  'strict',
  DEFER_LOADING,
]);
const TOOL_CHOICE_KEYS: ReadonlySet<string> = new Set(['type', 'name', 'disable_parallel_tool_use']);

export interface TranslatedTools {
  readonly tools: JsonRecord[];
  readonly names: ReadonlySet<string>;
}

export function translateTools(value: unknown, dropped: DroppedFields): TranslatedTools {
  const list = expectArray(value, 'tools');
  const tools: JsonRecord[] = [];
  const names = new Set<string>();
  for (let i = 0; i < list.length; i++) {
    const path = item('tools', i);
    const tool = expectRecord(list[i], path);
    const type = optional(tool, 'type');
    if (type !== undefined && type !== 'custom') {
      const typePath = child(path, 'type');
      throw new Refusal(
        typePath,
        `${typePath} ${JSON.stringify(type)} is a server tool that Anthropic runs: a chat-completions provider cannot run it`,
      );
    }
    const namePath = child(path, 'name');
    const name = expectNonEmptyString(tool.name, namePath);
    if (names.has(name))
      throw new Refusal(namePath, `${namePath} repeats the tool name ${JSON.stringify(name)}`);
    names.add(name);
    const fn: JsonRecord = { name };
    const description = optional(tool, 'description');
    if (description !== undefined) fn.description = expectString(description, child(path, 'description'));
    fn.parameters = expectRecord(tool.input_schema, child(path, 'input_schema'));
    const strict = optional(tool, 'strict');
    if (strict !== undefined) fn.strict = expectBoolean(strict, child(path, 'strict'));
    if (optional(tool, DEFER_LOADING) !== undefined) dropped.add(DEFER_LOADING);
    dropped.addUnknown(tool, TOOL_KEYS, 'tools[]');
    tools.push({ type: 'function', function: fn });
  }
  return { tools, names };
}

/**
 * The chat fields of a `tool_choice`: auto -> "auto", any -> "required", tool -> that function,
 * none -> "none"; `disable_parallel_tool_use: true` -> `parallel_tool_calls: false`. Without tools,
 * `auto` and `none` choose among nothing and give no fields; `any` and `tool` are refused.
 */
export function translateToolChoice(
  value: unknown,
  toolNames: ReadonlySet<string>,
  dropped: DroppedFields,
): JsonRecord {
  const choice = expectRecord(value, 'tool_choice');
  dropped.addUnknown(choice, TOOL_CHOICE_KEYS, 'tool_choice');
  const disableValue = optional(choice, 'disable_parallel_tool_use');
  const disableParallel =
    disableValue !== undefined && expectBoolean(disableValue, 'tool_choice.disable_parallel_tool_use');

  let toolChoice: unknown;
  switch (choice.type) {
    case 'auto':
      toolChoice = 'auto';
      break;
    case 'none':
      toolChoice = 'none';
      break;
    case 'any':
      toolChoice = 'required';
      break;
    case 'tool': {
      const name = expectNonEmptyString(choice.name, 'tool_choice.name');
      if (!toolNames.has(name)) {
        throw new Refusal(
          'tool_choice.name',
          `tool_choice.name ${JSON.stringify(name)} is not one of the tools`,
        );
      }
      toolChoice = { type: 'function', function: { name } };
      break;
    }
    default:
      throw new Refusal('tool_choice.type', 'tool_choice.type must be "auto", "any", "tool" or "none"');
  }

  if (toolNames.size === 0) {
    if (choice.type === 'any' || choice.type === 'tool') {
      throw new Refusal(
        'tool_choice.type',
        `tool_choice.type "${choice.type}" needs tools, and the request has none`,
      );
    }
    return {};
  }
  const fields: JsonRecord = { tool_choice: toolChoice };
  if (disableParallel) fields.parallel_tool_calls = false;
  return fields;
}
