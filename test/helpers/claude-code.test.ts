/**
 * The Claude Code harness on its own: the real pinned CLI against a scripted Messages API server on
 * loopback (no gateway), answering a prompt and carrying a tool call through. Every test fails,
 * with the registry's reason, when the binary cannot be fetched.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { runClaudeCode } from './claude-code.js';
import {
  startUpstream,
  type RecordedRequest,
  type RecordingUpstream,
  type UpstreamHandler,
} from './upstream.js';

type ReplyBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

interface Reply {
  blocks: ReplyBlock[];
  stopReason: 'end_turn' | 'tool_use';
}

function sseEvent(type: string, fields: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
}

/** `text` cut in `parts` pieces, so the client has to join deltas. */
function pieces(text: string, parts: number): string[] {
  const size = Math.ceil(text.length / parts);
  return Array.from({ length: parts }, (_, i) => text.slice(i * size, (i + 1) * size)).filter(Boolean);
}

/** A reply as the Messages API streams it: every block started, filled by deltas and stopped. */
function messageEvents(model: string, reply: Reply): string {
  const events = [
    sseEvent('message_start', {
      message: {
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 1 },
      },
    }),
  ];
  reply.blocks.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(sseEvent('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const text of pieces(block.text, 3)) {
        events.push(sseEvent('content_block_delta', { index, delta: { type: 'text_delta', text } }));
      }
    } else {
      events.push(
        sseEvent('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        }),
      );
      for (const partial_json of pieces(JSON.stringify(block.input), 3)) {
        events.push(
          sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }),
        );
      }
    }
    events.push(sseEvent('content_block_stop', { index }));
  });
  events.push(
    sseEvent('message_delta', {
      delta: { stop_reason: reply.stopReason, stop_sequence: null },
      usage: { output_tokens: 12 },
    }),
    sseEvent('message_stop', {}),
  );
  return events.join('');
}

interface MessagesRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string | Record<string, unknown>[] }[];
}

/** Streams the reply `script` picks for each request. */
function messagesServer(script: (body: MessagesRequest) => Reply): UpstreamHandler {
  return (req, res) => {
    const body = JSON.parse(req.body) as MessagesRequest;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(messageEvents(body.model, script(body)));
  };
}

function userBlocks(body: MessagesRequest): Record<string, unknown>[] {
  return body.messages
    .filter((message) => message.role === 'user' && Array.isArray(message.content))
    .flatMap((message) => message.content as Record<string, unknown>[]);
}

function toolResults(body: MessagesRequest): Record<string, unknown>[] {
  return userBlocks(body).filter((block) => block.type === 'tool_result');
}

function userTexts(body: MessagesRequest): unknown[] {
  return userBlocks(body)
    .filter((block) => block.type === 'text')
    .map((block) => block.text);
}

/** A tool result's content as text, whether sent as a string or as text blocks. */
function resultText(result: Record<string, unknown>): string {
  const content = result.content;
  if (typeof content === 'string') return content;
  return (content as { text?: string }[]).map((block) => block.text ?? '').join('');
}

function expectOnlyMessagesCalls(requests: RecordedRequest[], baseUrl: string): void {
  expect(requests.length).toBeGreaterThan(0);
  for (const request of requests) {
    expect(`${request.method} ${new URL(request.url, baseUrl).pathname}`).toBe('POST /v1/messages');
  }
}

describe('runClaudeCode: the real Claude Code CLI against a Messages API server', { timeout: 90_000 }, () => {
  let upstream: RecordingUpstream | undefined;

  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });

  it('prints the streamed answer as its result, having called only POST /v1/messages with its API key', async () => {
    upstream = await startUpstream(
      messagesServer(() => ({
        blocks: [{ type: 'text', text: 'hello from the stub' }],
        stopReason: 'end_turn',
      })),
    );
    const run = await runClaudeCode({
      baseUrl: upstream.url,
      apiKey: 'stub-key-1',
      prompt: 'Say hello',
      model: 'sim',
    });

    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.result).toMatchObject({ is_error: false, result: 'hello from the stub' });
    expectOnlyMessagesCalls(upstream.requests, upstream.url);
    for (const request of upstream.requests) {
      expect(request.headers['x-api-key']).toBe('stub-key-1');
      expect(request.headers.authorization).toBeUndefined();
      expect(JSON.parse(request.body)).toMatchObject({ model: 'sim', stream: true });
    }
    expect(userTexts(JSON.parse(upstream.requests[0]!.body) as MessagesRequest)).toContain('Say hello');
  });

  it('sends an auth token as a bearer token instead of an API key', async () => {
    upstream = await startUpstream(
      messagesServer(() => ({ blocks: [{ type: 'text', text: 'token accepted' }], stopReason: 'end_turn' })),
    );
    const run = await runClaudeCode({
      baseUrl: upstream.url,
      authToken: 'stub-token-2',
      prompt: 'Say hello',
    });

    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.result).toMatchObject({ is_error: false, result: 'token accepted' });
    expectOnlyMessagesCalls(upstream.requests, upstream.url);
    for (const request of upstream.requests) {
      expect(request.headers.authorization).toBe('Bearer stub-token-2');
      expect(request.headers['x-api-key']).toBeUndefined();
    }
  });

  it('runs the Read tool the server asks for and sends its output back in a tool_result', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'claude-code-tool-')));
    onTestFinished(() => rmSync(cwd, { recursive: true, force: true }));
    const file = join(cwd, 'notes.txt');
    const fileText = `the notes say ${randomUUID()}`;
    writeFileSync(file, `${fileText}\n`);
    const toolUseId = `toolu_${randomUUID().replaceAll('-', '')}`;
    upstream = await startUpstream(
      messagesServer((body) =>
        toolResults(body).length === 0
          ? {
              blocks: [
                { type: 'text', text: 'Reading the notes.' },
                { type: 'tool_use', id: toolUseId, name: 'Read', input: { file_path: file } },
              ],
              stopReason: 'tool_use',
            }
          : { blocks: [{ type: 'text', text: 'The notes are read.' }], stopReason: 'end_turn' },
      ),
    );
    const run = await runClaudeCode({
      baseUrl: upstream.url,
      apiKey: 'stub-key-3',
      prompt: 'What do the notes say?',
      model: 'sim',
      cwd,
    });

    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.result).toMatchObject({ is_error: false, result: 'The notes are read.' });
    expectOnlyMessagesCalls(upstream.requests, upstream.url);
    expect(upstream.requests).toHaveLength(2);
    const [first, second] = upstream.requests.map((request) => JSON.parse(request.body) as MessagesRequest);
    expect(toolResults(first!)).toEqual([]);
    const results = toolResults(second!);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool_use_id: toolUseId });
    expect(results[0]!.is_error).not.toBe(true);
    expect(resultText(results[0]!)).toContain(fileText);
  });
});
