import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { messagesToChat } from '../../src/gateway/anthropic/request.js';

/** What Claude Code really sends (see test/fixtures/claude-code-2.1.328/README.md), translated. */

type Body = Record<string, unknown>;

interface ToolSummary {
  name: string;
  desc_chars: number;
  input_schema_props: string[];
  defer_loading?: boolean;
}

const FIXTURES = new URL('../fixtures/claude-code-2.1.328/', import.meta.url);
const names = readdirSync(FIXTURES)
  .filter((file) => file.endsWith('.json'))
  .sort();

/** A captured body with its tools rebuilt from their summaries. */
function load(name: string): Body {
  const body = JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Body;
  body.tools = (body.tools as ToolSummary[]).map((summary) => {
    const tool: Body = {
      name: summary.name,
      description: 'd'.repeat(summary.desc_chars),
      input_schema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: Object.fromEntries(summary.input_schema_props.map((p) => [p, { type: 'string' }])),
        additionalProperties: false,
      },
    };
    if (summary.defer_loading !== undefined) tool.defer_loading = summary.defer_loading;
    return tool;
  });
  return body;
}

function translate(name: string): { source: Body; body: Body; messages: Body[]; dropped: string[] } {
  const source = load(name);
  const result = messagesToChat(structuredClone(source));
  if (!result.ok) throw new Error(`${name} refused at ${result.field}: ${result.message}`);
  return { source, body: result.body, messages: result.body.messages as Body[], dropped: result.dropped };
}

describe('Claude Code 2.1.328 requests', () => {
  it('has the captured requests', () => {
    expect(names.length).toBe(8);
  });

  describe.each(names)('%s', (name) => {
    it('keeps model, max_tokens, user and stream', () => {
      const { source, body } = translate(name);
      expect(body.model).toBe(source.model);
      expect(body.max_tokens).toBe(source.max_tokens);
      expect(body.user).toBe((source.metadata as Body).user_id);
      expect(body.stream).toBe(source.stream);
      if (source.stream === true) expect(body.stream_options).toEqual({ include_usage: true });
      else expect(body).not.toHaveProperty('stream_options');
    });

    it('sends one leading system message: the system blocks, then the in-conversation system messages', () => {
      const { source, messages } = translate(name);
      const texts = (source.system as Body[]).map((block) => block.text as string);
      expect(texts.length).toBe(3);
      const inConversation = (source.messages as Body[])
        .filter((m) => m.role === 'system')
        .map((m) =>
          typeof m.content === 'string'
            ? m.content
            : (m.content as Body[]).map((block) => block.text as string).join('\n\n'),
        );
      expect(messages[0]).toEqual({ role: 'system', content: [...texts, ...inConversation].join('\n\n') });
      expect(String(messages[0]!.content).startsWith('x-anthropic-billing-header:')).toBe(true);
      expect(messages.slice(1).map((m) => m.role)).not.toContain('system');
      expect(messages[1]!.role).toBe('user');
    });

    it('sends every tool as a function with its schema', () => {
      const { source, body } = translate(name);
      const tools = body.tools as Body[];
      const sourceTools = source.tools as Body[];
      expect(tools.map((t) => (t.function as Body).name)).toEqual(sourceTools.map((t) => t.name));
      tools.forEach((tool, i) => {
        expect(tool).toEqual({
          type: 'function',
          function: {
            name: sourceTools[i]!.name,
            description: sourceTools[i]!.description,
            parameters: sourceTools[i]!.input_schema,
          },
        });
      });
    });

    it('maps the effort to reasoning_effort', () => {
      const { source, body } = translate(name);
      expect(source.thinking).toMatchObject({ type: 'adaptive' });
      const effort = (source.output_config as Body).effort as string;
      expect(body.reasoning_effort).toBe(effort === 'max' ? 'high' : effort);
    });

    it('reports exactly what it drops', () => {
      const { source, dropped } = translate(name);
      const expected = ['cache_control', 'context_management', 'thinking.display'];
      if ((source.tools as Body[]).some((t) => t.defer_loading !== undefined)) expected.push('defer_loading');
      expect([...dropped].sort()).toEqual(expected.sort());
    });
  });

  it.each(['tool-002.json', 'bare-002.json'])(
    '%s: the tool result follows the assistant tool call',
    (name) => {
      const { source, messages } = translate(name);
      const sourceMessages = source.messages as Body[];
      const assistant = sourceMessages.find((m) => m.role === 'assistant')!;
      const call = (assistant.content as Body[]).find((b) => b.type === 'tool_use')!;
      const result = (sourceMessages.at(-1)!.content as Body[])[0]!;

      const at = messages.findIndex((m) => m.role === 'assistant');
      expect(messages[at]).toEqual({
        role: 'assistant',
        content: (assistant.content as Body[])[0]!.text,
        tool_calls: [
          {
            id: call.id,
            type: 'function',
            function: { name: 'Read', arguments: JSON.stringify(call.input) },
          },
        ],
      });
      expect(messages[at + 1]).toEqual({ role: 'tool', tool_call_id: call.id, content: result.content });
      expect(messages.length).toBe(at + 2);
    },
  );
});
