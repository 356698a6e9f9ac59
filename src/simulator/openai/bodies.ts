import { pieceText, type FrameContext, type Usage } from './frames.js';
import type { OutputPlan } from './plan.js';

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** The non-streaming response body for a finished plan (vLLM's field order). */
export function completionBody(ctx: FrameContext, plan: OutputPlan, counts: Usage): Record<string, unknown> {
  if (ctx.kind === 'completions') {
    let text = '';
    for (let i = 0; i < plan.length; i++) text += pieceText(plan.pieceAt(i));
    return {
      id: ctx.id,
      object: 'text_completion',
      created: ctx.created,
      model: ctx.model,
      choices: [{ index: 0, text, logprobs: null, finish_reason: plan.finishReason, stop_reason: null }],
      usage: counts,
    };
  }

  let content = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  for (let i = 0; i < plan.length; i++) {
    const piece = plan.pieceAt(i);
    if (piece.kind === 'content') content += piece.text;
    else if (piece.kind === 'reasoning') reasoning += piece.text;
    else if (piece.kind === 'tool_start') {
      toolCalls[piece.index] = {
        id: piece.id,
        type: 'function',
        function: { name: piece.name, arguments: '' },
      };
    } else {
      const call = toolCalls[piece.index];
      if (call) call.function.arguments += piece.text;
    }
  }
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: content === '' && toolCalls.length > 0 ? null : content,
    tool_calls: toolCalls,
  };
  if (reasoning !== '') message[ctx.reasoningField] = reasoning;
  return {
    id: ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason, stop_reason: null }],
    usage: counts,
  };
}
