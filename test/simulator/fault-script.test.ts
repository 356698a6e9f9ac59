import { describe, expect, it } from 'vitest';
import type { FaultSpec } from '../../src/simulator/faults/modes.js';
import { FAULT_MODES, FAULT_TERMINAL } from '../fixtures/fault-modes.js';
import { CANCELLED_499_FRAME } from '../../src/simulator/faults/script.js';
import { faultScript, tornFrame } from '../../src/simulator/openai/fault-script.js';
import type { EndpointKind, FrameContext } from '../../src/simulator/openai/frames.js';

function ctx(kind: EndpointKind, model = 'm'): FrameContext {
  return { kind, id: 'fixed', created: 0, model, reasoningField: 'reasoning_content' };
}

function spec(mode: FaultSpec['mode'], afterChunks = 3, utf8 = false): FaultSpec {
  return { mode, afterChunks, delayMs: 0, utf8 };
}

function frames(s: FaultSpec, kind: EndpointKind, includeUsage = false): string[] {
  return [...faultScript(s, { frame: ctx(kind), includeUsage, promptTokens: 7 }).frames];
}

describe('fault scripts (pure)', () => {
  it('is deterministic: the same inputs give identical frames and terminal', () => {
    for (const mode of FAULT_MODES) {
      for (const kind of ['chat', 'completions'] as const) {
        const a = faultScript(spec(mode, 4, true), { frame: ctx(kind), includeUsage: true, promptTokens: 3 });
        const b = faultScript(spec(mode, 4, true), { frame: ctx(kind), includeUsage: true, promptTokens: 3 });
        expect([...a.frames]).toEqual([...b.frames]);
        expect(a.terminal).toEqual(b.terminal);
      }
    }
  });

  it('puts exactly after_chunks content frames before the fault; chat adds the role frame', () => {
    for (const n of [0, 1, 5]) {
      expect(frames(spec('cut_between_frames', n), 'chat')).toHaveLength(n + 1);
      expect(frames(spec('cut_between_frames', n), 'completions')).toHaveLength(n);
    }
  });

  it('maps every mode to its terminal action (spec 4.3)', () => {
    for (const mode of FAULT_MODES) {
      const { terminal } = faultScript(spec(mode), {
        frame: ctx('chat'),
        includeUsage: false,
        promptTokens: 0,
      });
      expect(terminal.action, mode).toBe(FAULT_TERMINAL[mode]);
    }
  });

  it('ends cancelled_499 with the exact body', () => {
    expect(frames(spec('cancelled_499', 1), 'chat').at(-1)).toBe(CANCELLED_499_FRAME);
  });

  it('tears the next frame in half on a character boundary, or inside a two-byte character with utf8', () => {
    for (const kind of ['chat', 'completions'] as const) {
      for (let n = 0; n < 20; n++) {
        const whole = Buffer.from(frames(spec('cut_between_frames', n + 1), kind).at(-1)!);
        const half = tornFrame(spec('cut_mid_frame', n), ctx(kind));
        expect(whole.subarray(0, half.length).equals(half)).toBe(true);
        expect(Math.abs(half.length - whole.length / 2)).toBeLessThanOrEqual(3);
        expect(() => new TextDecoder('utf-8', { fatal: true }).decode(half)).not.toThrow();

        const cut = tornFrame(spec('cut_mid_frame', n, true), ctx(kind, 'modèle'));
        expect(cut[cut.length - 1]! & 0xe0).toBe(0xc0);
        // The cut is in the delta text, not in the (non-ASCII) model name.
        expect(cut.toString('latin1')).toMatch(/"(content|text)":"[^"]*$/);
      }
    }
  });

  it('mid_reasoning uses the configured reasoning field', () => {
    const s = faultScript(spec('mid_reasoning', 2), {
      frame: { ...ctx('chat'), reasoningField: 'reasoning' },
      includeUsage: false,
      promptTokens: 0,
    });
    const [, first] = [...s.frames];
    expect(first).toContain('"delta":{"reasoning":');
  });
});
