import type { OutputPlan, Piece } from '../openai/plan.js';

export interface StoppedPlan {
  plan: OutputPlan;
  /** The stop sequence the text ran into, or null when it ends as planned. */
  stopSequence: string | null;
}

interface PieceStart {
  index: number;
  /** Offset of the piece's text in the whole answer text. */
  offset: number;
}

/**
 * Cuts the plan where its text would first contain one of `stops`: the answer ends just before the
 * stop sequence (which is not sent), and the engine reports finish reason `stop` as vLLM does for
 * a stop string. Only answer text is searched, not reasoning or tool input. Pieces are read one at
 * a time with a window of the longest stop sequence, so a long placeholder answer is never built.
 */
export function applyStopSequences(plan: OutputPlan, stops: readonly string[]): StoppedPlan {
  if (stops.length === 0) return { plan, stopSequence: null };
  const keep = Math.max(...stops.map((stop) => stop.length)) - 1;
  // The answer text's tail that a later piece can still complete a stop sequence with.
  let window = '';
  let windowOffset = 0;
  let total = 0;
  const starts: PieceStart[] = [];
  for (let index = 0; index < plan.length; index++) {
    const piece = plan.pieceAt(index);
    if (piece.kind !== 'content') continue;
    starts.push({ index, offset: total });
    total += piece.text.length;
    window += piece.text;
    let found: { at: number; stop: string } | undefined;
    for (const stop of stops) {
      const at = window.indexOf(stop);
      if (at >= 0 && (found === undefined || at < found.at)) found = { at, stop };
    }
    if (found) return { plan: cutAt(plan, starts, windowOffset + found.at), stopSequence: found.stop };
    if (window.length > keep) {
      windowOffset += window.length - keep;
      window = window.slice(window.length - keep);
    }
    while (starts.length > 1 && starts[1]!.offset <= windowOffset) starts.shift();
  }
  return { plan, stopSequence: null };
}

/** The plan up to text offset `cut`: the piece holding it trimmed, everything after it dropped. */
function cutAt(plan: OutputPlan, starts: readonly PieceStart[], cut: number): OutputPlan {
  let start = starts[0]!;
  for (const candidate of starts) if (candidate.offset <= cut) start = candidate;
  const whole = plan.pieceAt(start.index);
  const text = whole.kind === 'content' ? whole.text.slice(0, cut - start.offset) : '';
  if (text === '' && start.index > 0) {
    return { length: start.index, pieceAt: plan.pieceAt, finishReason: 'stop' };
  }
  const trimmed: Piece = { kind: 'content', text };
  return {
    length: start.index + 1,
    pieceAt: (index) => (index === start.index ? trimmed : plan.pieceAt(index)),
    finishReason: 'stop',
  };
}
