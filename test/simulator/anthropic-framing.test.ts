/**
 * Anthropic's framing as pure functions: a stream accumulated by a client equals the non-streamed
 * message of the same answer, a conversation's prompt tokens are the ones chat lists for it, stop
 * sequences cut where a naive search says, and fault scripts are deterministic and end as every
 * mode must.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messagesFaultScript } from '../../src/simulator/anthropic/fault-script.js';
import { messageBody, messageStream } from '../../src/simulator/anthropic/message.js';
import { parseMessagesRequest } from '../../src/simulator/anthropic/requests.js';
import { applyStopSequences } from '../../src/simulator/anthropic/stop-sequences.js';
import { echoPlan, type EchoDirective } from '../../src/simulator/directives/echo.js';
import type { FaultSpec } from '../../src/simulator/faults/modes.js';
import {
  placeholderPlan,
  scriptedPlan,
  type OutputPlan,
  type Piece,
} from '../../src/simulator/openai/plan.js';
import { parseCompletionRequest } from '../../src/simulator/openai/requests.js';
import { FAULT_MODES, FAULT_TERMINAL } from '../fixtures/fault-modes.js';
import { accumulate, parseSse, typedEvents } from './anthropic-client.js';

const identity = { id: 'msg_test', model: 'm' };

const directive: fc.Arbitrary<EchoDirective> = fc.record(
  {
    text: fc.string({ unit: 'grapheme', maxLength: 60 }),
    reasoning: fc.string({ unit: 'grapheme', maxLength: 40 }),
    tool_calls: fc.array(
      fc.record(
        {
          name: fc.string({ minLength: 1, maxLength: 10 }),
          arguments: fc.dictionary(
            fc.string({ maxLength: 5 }),
            fc.oneof(fc.integer(), fc.string({ maxLength: 30 })),
          ),
          id: fc.string({ minLength: 1, maxLength: 8 }),
        },
        { requiredKeys: ['name'] },
      ),
      { maxLength: 3 },
    ),
    finish_reason: fc.constantFrom('stop', 'length', 'tool_calls', 'content_filter'),
  },
  { requiredKeys: [] },
);

function streamText(
  plan: OutputPlan,
  stopSequence: string | null,
  promptTokens: number,
  cached: number,
): string {
  const events = messageStream({ identity, plan, stopSequence, promptTokens });
  let text = '';
  for (let i = 0; i < plan.length; i++) text += events.token(i, cached);
  return text + events.finish();
}

describe('message framing', () => {
  it('a client accumulating the stream gets the non-streamed message, for any script', () => {
    fc.assert(
      fc.property(directive, fc.nat(200), (d, cached) => {
        const plan = echoPlan(d, 'chat', 'toolu_sim_');
        const promptTokens = cached + 7;
        const { events, rest } = parseSse(streamText(plan, null, promptTokens, cached));
        expect(rest).toBe('');
        const client = accumulate(typedEvents(events));
        expect(client.error).toBeUndefined();
        expect(client.sawMessageStop).toBe(true);
        const body = messageBody({ identity, plan, stopSequence: null, promptTokens }, cached);
        expect(client.message).toEqual(body);
        const calls = d.tool_calls ?? [];
        const tools = (body.content as { type: string; id: string; input: unknown }[]).filter(
          (b) => b.type === 'tool_use',
        );
        expect(tools.map((t) => t.input)).toEqual(calls.map((c) => c.arguments ?? {}));
        expect(tools.map((t) => t.id)).toEqual(calls.map((c, i) => c.id ?? `toolu_sim_${i}`));
      }),
    );
  });

  it('reports usage as Anthropic does: the cached prompt tokens apart from input_tokens', () => {
    const plan = placeholderPlan(5, undefined);
    const body = messageBody({ identity, plan, stopSequence: null, promptTokens: 100 }, 64);
    expect(body.usage).toEqual({
      input_tokens: 36,
      cache_read_input_tokens: 64,
      cache_creation_input_tokens: 0,
      output_tokens: 5,
    });
  });
});

describe('prompt tokens', () => {
  it('lists exactly the tokens it counts, the same tokens chat lists for the same conversation', () => {
    const system = 'You are terse. '.repeat(20);
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'first' },
          { type: 'image', source: {} },
          { type: 'text', text: 'second' },
        ],
      },
      { role: 'assistant', content: 'an answer' },
      { role: 'user', content: 'last question' },
    ];
    const parsed = parseMessagesRequest({ model: 'm', max_tokens: 5, system, messages });
    if (!parsed.ok) throw new Error(parsed.message);
    const tokens = parsed.request.promptTokenList();
    expect(tokens).toHaveLength(parsed.request.promptTokens);

    const chat = parseCompletionRequest('chat', {
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'first\n\nsecond' },
        { role: 'assistant', content: 'an answer' },
        { role: 'user', content: 'last question' },
      ],
    });
    if (!chat.ok) throw new Error(chat.message);
    expect(tokens).toEqual(chat.request.promptTokenList());
    expect(parsed.request.promptTokens).toBe(chat.request.promptTokens);
  });
});

/** The answer text of a plan. */
function textOf(plan: OutputPlan): string {
  let text = '';
  for (let i = 0; i < plan.length; i++) {
    const piece = plan.pieceAt(i);
    if (piece.kind === 'content') text += piece.text;
  }
  return text;
}

/** Naive reference: the first prefix (piece by piece) that holds a stop sequence, cut at its earliest one. */
function naiveStop(pieces: Piece[], stops: string[]): { text: string; stop: string | null } {
  let text = '';
  for (const piece of pieces) {
    if (piece.kind !== 'content') continue;
    text += piece.text;
    const found = stops
      .map((stop) => ({ stop, at: text.indexOf(stop) }))
      .filter((f) => f.at >= 0)
      .sort((a, b) => a.at - b.at)[0];
    if (found) return { text: text.slice(0, found.at), stop: found.stop };
  }
  return { text, stop: null };
}

describe('stop sequences', () => {
  const piece: fc.Arbitrary<Piece> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .string({ unit: fc.constantFrom('a', 'b', 'c', ' '), maxLength: 6 })
        .map((text) => ({ kind: 'content' as const, text })),
    },
    {
      weight: 1,
      arbitrary: fc.string({ maxLength: 4 }).map((text) => ({ kind: 'reasoning' as const, text })),
    },
  );
  const stop = fc.string({ unit: fc.constantFrom('a', 'b', 'c', ' '), minLength: 1, maxLength: 5 });

  it('cuts the answer text before the first stop sequence it runs into, keeping what came before', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 12 }),
        fc.array(stop, { maxLength: 3 }),
        (pieces, stops) => {
          const plan = scriptedPlan(pieces, 'length');
          const cut = applyStopSequences(plan, stops);
          const expected = naiveStop(pieces, stops);
          expect(cut.stopSequence).toBe(expected.stop);
          expect(textOf(cut.plan)).toBe(expected.text);
          if (expected.stop === null) {
            expect(cut.plan).toBe(plan);
          } else {
            expect(cut.plan.finishReason).toBe('stop');
            expect(cut.plan.length).toBeGreaterThanOrEqual(1);
            // Every piece kept before the last is unchanged.
            for (let i = 0; i < cut.plan.length - 1; i++) expect(cut.plan.pieceAt(i)).toEqual(pieces[i]);
          }
        },
      ),
    );
  });

  it('reads a long placeholder answer one piece at a time', () => {
    const plan = placeholderPlan(1_000_000, undefined);
    expect(applyStopSequences(plan, ['not in it']).stopSequence).toBeNull();
    const cut = applyStopSequences(plan, ['ñata jal']);
    expect(textOf(cut.plan).endsWith('façade pi')).toBe(true);
    expect(cut.plan.length).toBe(10);
  });
});

describe('Messages fault scripts', () => {
  const spec = (mode: FaultSpec['mode'], afterChunks = 3, utf8 = false): FaultSpec => ({
    mode,
    afterChunks,
    delayMs: 0,
    utf8,
  });
  const ctx = { identity: { id: 'msg_sim_fault', model: 'm' }, promptTokens: 9 };

  it('is deterministic and ends every mode as chat does', () => {
    for (const mode of FAULT_MODES) {
      const a = messagesFaultScript(spec(mode, 4, true), ctx);
      const b = messagesFaultScript(spec(mode, 4, true), ctx);
      expect([...a.frames]).toEqual([...b.frames]);
      expect(a.terminal).toEqual(b.terminal);
      expect(a.terminal.action, mode).toBe(FAULT_TERMINAL[mode]);
    }
  });

  it('puts message_start, ping and the block start, then exactly after_chunks content frames, before the death', () => {
    for (const n of [0, 1, 5]) {
      const frames = [...messagesFaultScript(spec('cut_between_frames', n), ctx).frames];
      expect(frames).toHaveLength(3 + n);
      for (const frame of frames.slice(3))
        expect(frame.startsWith('event: content_block_delta\n')).toBe(true);
    }
  });

  it('tears the next content frame in half, or one byte into a two-byte character with utf8', () => {
    for (let n = 0; n < 20; n++) {
      const whole = Buffer.from(
        [...messagesFaultScript(spec('cut_between_frames', n + 1), ctx).frames].at(-1)!,
      );
      const half = messagesFaultScript(spec('cut_mid_frame', n), ctx).terminal;
      if (half.action !== 'tear') throw new Error('cut_mid_frame tears');
      expect(whole.subarray(0, half.bytes.length).equals(half.bytes)).toBe(true);
      expect(Math.abs(half.bytes.length - whole.length / 2)).toBeLessThanOrEqual(3);

      const cut = messagesFaultScript(spec('cut_mid_frame', n, true), {
        ...ctx,
        identity: { id: 'x', model: 'modèle' },
      }).terminal;
      if (cut.action !== 'tear') throw new Error('cut_mid_frame tears');
      expect(cut.bytes[cut.bytes.length - 1]! & 0xe0).toBe(0xc0);
      expect(cut.bytes.toString('latin1')).toMatch(/"text":"[^"]*$/);
    }
  });
});
