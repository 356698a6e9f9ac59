import { z } from 'zod';
import type { EndpointKind } from '../openai/frames.js';
import { scriptedPlan, type FinishReason, type OutputPlan, type Piece } from '../openai/plan.js';
import { splitIntoPieces } from '../text/count.js';

/**
 * Echo directives script a response from the prompt (trusted clients only: gated by
 * `--enable-directives`). Syntax: one line of the last chat message (or of a text prompt) that
 * starts with `@sim` followed by a JSON object on the same line:
 *
 *   @sim {"text":"Hello","tool_calls":[{"name":"f","arguments":{"a":1}}],"finish_reason":"stop"}
 *
 * When several lines qualify the last one wins. Fields are all optional; unknown fields are refused.
 */
const toolCallSchema = z.strictObject({
  name: z.string().min(1),
  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  id: z.string().min(1).optional(),
});

export const echoDirectiveSchema = z.strictObject({
  text: z.string().optional(),
  reasoning: z.string().optional(),
  tool_calls: z.array(toolCallSchema).optional(),
  finish_reason: z.enum(['stop', 'length', 'tool_calls', 'content_filter']).optional(),
});

export type EchoDirective = z.infer<typeof echoDirectiveSchema>;

export type EchoParse =
  | { found: false }
  | { found: true; ok: true; directive: EchoDirective }
  | { found: true; ok: false; message: string };

// `[\s\S]`, not `.`: JSON.stringify leaves U+2028/U+2029 unescaped, and `.` does not match them.
const DIRECTIVE_LINE = /^[ \t]*@sim(?:[ \t]+([\s\S]*))?$/;

/** Finds and validates the echo directive in `text`. Never throws. */
export function parseEchoDirective(text: string): EchoParse {
  let payload: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const match = DIRECTIVE_LINE.exec(line);
    if (match) payload = (match[1] ?? '').trim();
  }
  if (payload === undefined) return { found: false };
  let json: unknown;
  try {
    json = JSON.parse(payload);
  } catch {
    return {
      found: true,
      ok: false,
      message: 'invalid echo directive: "@sim" must be followed by a JSON object',
    };
  }
  const parsed = echoDirectiveSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return {
      found: true,
      ok: false,
      message: `invalid echo directive${where}: ${issue?.message ?? 'invalid'}`,
    };
  }
  return { found: true, ok: true, directive: parsed.data };
}

/**
 * The frames a directive scripts. Chat gets structured deltas; completions get the same as raw text.
 * A tool call without an `id` gets `<toolIdPrefix><index>` (`toolu_sim_0` in Anthropic's framing).
 */
export function echoPlan(
  directive: EchoDirective,
  kind: EndpointKind,
  toolIdPrefix = 'call_sim_',
): OutputPlan {
  const calls = (directive.tool_calls ?? []).map((call, index) => ({
    index,
    id: call.id ?? `${toolIdPrefix}${index}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
  }));
  const finish: FinishReason = directive.finish_reason ?? (calls.length > 0 ? 'tool_calls' : 'stop');

  const pieces: Piece[] = [];
  if (kind === 'completions') {
    let text = directive.reasoning !== undefined ? `<think>${directive.reasoning}</think>` : '';
    text += directive.text ?? '';
    for (const call of calls) {
      text += `<tool_call>{"name": ${JSON.stringify(call.name)}, "arguments": ${call.arguments}}</tool_call>`;
    }
    for (const piece of splitIntoPieces(text)) pieces.push({ kind: 'content', text: piece });
    return scriptedPlan(pieces, finish);
  }

  for (const piece of splitIntoPieces(directive.reasoning ?? ''))
    pieces.push({ kind: 'reasoning', text: piece });
  for (const piece of splitIntoPieces(directive.text ?? '')) pieces.push({ kind: 'content', text: piece });
  for (const call of calls) {
    pieces.push({ kind: 'tool_start', index: call.index, id: call.id, name: call.name });
    for (const fragment of chunkChars(call.arguments, 16)) {
      pieces.push({ kind: 'tool_args', index: call.index, text: fragment });
    }
  }
  return scriptedPlan(pieces, finish);
}

/** Fixed-size fragments by code point, so a fragment never splits a surrogate pair. */
function chunkChars(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}
