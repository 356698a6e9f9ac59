import { placeholderToken } from '../text/placeholder.js';

/** One frame's worth of output: a content or reasoning delta, or part of a tool call. */
export type Piece =
  | { kind: 'content'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'tool_start'; index: number; id: string; name: string }
  | { kind: 'tool_args'; index: number; text: string };

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/**
 * What a response will say, one piece per engine token. Placeholder plans compute pieces on demand
 * so a long answer is never materialized.
 */
export interface OutputPlan {
  length: number;
  pieceAt: (index: number) => Piece;
  finishReason: FinishReason;
}

/**
 * The model's natural answer is `naturalTokens` long; a smaller `max_tokens` truncates it with
 * finish_reason `length`, as a real model that has not reached its end-of-sequence token would.
 */
export function placeholderPlan(naturalTokens: number, maxTokens: number | undefined): OutputPlan {
  const truncated = maxTokens !== undefined && maxTokens < naturalTokens;
  return {
    length: truncated ? maxTokens : naturalTokens,
    pieceAt: (index) => ({ kind: 'content', text: placeholderToken(index) }),
    finishReason: truncated ? 'length' : 'stop',
  };
}

/** A plan from an explicit list of pieces (echo directives). Always at least one piece. */
export function scriptedPlan(pieces: Piece[], finishReason: FinishReason): OutputPlan {
  const list = pieces.length > 0 ? pieces : [{ kind: 'content', text: '' } as const];
  return { length: list.length, pieceAt: (index) => list[index]!, finishReason };
}
