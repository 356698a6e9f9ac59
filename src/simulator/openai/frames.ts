import type { FinishReason, Piece } from './plan.js';

export type EndpointKind = 'chat' | 'completions';
export type ReasoningField = 'reasoning_content' | 'reasoning';

/** The fields every frame of one response shares. */
export interface FrameContext {
  kind: EndpointKind;
  id: string;
  created: number;
  model: string;
  reasoningField: ReasoningField;
}

export interface Usage {
  prompt_tokens: number;
  total_tokens: number;
  completion_tokens: number;
}

export const DONE_FRAME = 'data: [DONE]\n\n';

export function dataFrame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export function usage(promptTokens: number, completionTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + completionTokens,
    completion_tokens: completionTokens,
  };
}

/** Chat only: vLLM's first frame, `{"role":"assistant","content":""}`. */
export function roleFrame(ctx: FrameContext): string {
  return chatChunk(ctx, { role: 'assistant', content: '' }, null);
}

/**
 * The frame for one piece. `finishReason` is set on the last piece's frame, as vLLM puts the finish
 * reason on the last token's frame. Completions carry every piece as raw text.
 */
export function pieceFrame(ctx: FrameContext, piece: Piece, finishReason: FinishReason | null): string {
  if (ctx.kind === 'completions') return completionChunk(ctx, pieceText(piece), finishReason);
  return chatChunk(ctx, chatDelta(ctx, piece), finishReason);
}

/** A frame that carries only a finish reason (empty delta text). */
export function finishFrame(ctx: FrameContext, finishReason: FinishReason): string {
  if (ctx.kind === 'completions') return completionChunk(ctx, '', finishReason);
  return chatChunk(ctx, { content: '' }, finishReason);
}

/** The separate usage frame with empty `choices`, sent only when `include_usage` was requested. */
export function usageFrame(ctx: FrameContext, counts: Usage): string {
  return dataFrame({
    id: ctx.id,
    object: objectName(ctx),
    created: ctx.created,
    model: ctx.model,
    choices: [],
    usage: counts,
  });
}

function objectName(ctx: FrameContext): string {
  return ctx.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
}

function chatChunk(
  ctx: FrameContext,
  delta: Record<string, unknown>,
  finishReason: FinishReason | null,
): string {
  const choice: Record<string, unknown> = { index: 0, delta, logprobs: null, finish_reason: finishReason };
  if (finishReason !== null) choice.stop_reason = null;
  return dataFrame({
    id: ctx.id,
    object: 'chat.completion.chunk',
    created: ctx.created,
    model: ctx.model,
    choices: [choice],
  });
}

function completionChunk(ctx: FrameContext, text: string, finishReason: FinishReason | null): string {
  return dataFrame({
    id: ctx.id,
    object: 'text_completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null }],
  });
}

function chatDelta(ctx: FrameContext, piece: Piece): Record<string, unknown> {
  switch (piece.kind) {
    case 'content':
      return { content: piece.text };
    case 'reasoning':
      return { [ctx.reasoningField]: piece.text };
    case 'tool_start':
      return {
        tool_calls: [
          {
            index: piece.index,
            id: piece.id,
            type: 'function',
            function: { name: piece.name, arguments: '' },
          },
        ],
      };
    case 'tool_args':
      return { tool_calls: [{ index: piece.index, function: { arguments: piece.text } }] };
  }
}

/**
 * Completions have no delta object: reasoning and tool calls travel as raw text, the way a model
 * without a server-side parser emits them (a think block, a hermes-style tool call).
 */
export function pieceText(piece: Piece): string {
  switch (piece.kind) {
    case 'content':
    case 'reasoning':
    case 'tool_args':
      return piece.text;
    case 'tool_start':
      return `<tool_call>{"name": ${JSON.stringify(piece.name)}, "arguments": `;
  }
}
