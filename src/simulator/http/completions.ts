import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { echoPlan } from '../directives/echo.js';
import { faultScript } from '../openai/fault-script.js';
import type { EndpointKind, FrameContext } from '../openai/frames.js';
import { placeholderPlan } from '../openai/plan.js';
import { parseCompletionRequest } from '../openai/requests.js';
import type { SimContext } from '../runtime.js';
import { faultStream, type FaultFraming } from './fault-stream.js';
import { OPENAI_ADMISSION_REPLIES, engineStoppedFrame } from './openai-errors.js';
import { readJsonBody, sendError } from './respond.js';
import { answerPlan, streamPlan } from './responders.js';
import { chooseResponsePath, type Refusal } from './response-path.js';

/**
 * Fault streams carry a fixed id and `created` 0: the fault path has no clock and no randomness, so
 * the same trigger yields byte-identical frames on every run.
 */
const FAULT_IDS: Record<EndpointKind, string> = { chat: 'chatcmpl-sim-fault', completions: 'cmpl-sim-fault' };

const FAULT_FRAMING: Record<EndpointKind, FaultFraming> = {
  chat: { endpoint: 'chat', replies: OPENAI_ADMISSION_REPLIES, engineStoppedFrame },
  completions: { endpoint: 'completions', replies: OPENAI_ADMISSION_REPLIES, engineStoppedFrame },
};

/** POST /v1/chat/completions and /v1/completions. */
export async function handleCompletion(
  kind: EndpointKind,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
): Promise<void> {
  const body = await readJsonBody(req);
  if (!body.ok) {
    return reject(ctx, res, '', { status: body.status, message: body.message, code: body.code, param: null });
  }
  const parsed = parseCompletionRequest(kind, body.value);
  if (!parsed.ok) {
    return reject(ctx, res, '', {
      status: 400,
      message: parsed.message,
      code: 'invalid_request',
      param: parsed.param,
    });
  }
  const request = parsed.request;
  const runtime = request.model === undefined ? ctx.defaultModel : ctx.models.get(request.model);
  if (!runtime) {
    const message = `The model \`${request.model}\` does not exist.`;
    return reject(
      ctx,
      res,
      '',
      { status: 404, message, code: 'model_not_found', param: 'model' },
      'NotFoundError',
    );
  }

  const model = runtime.config.name;
  const path = chooseResponsePath(req, ctx, runtime, {
    stream: request.stream,
    directiveText: request.directiveText,
    // The specification scopes a model's [fault] table to streaming chat completions.
    faultTable: kind === 'chat',
  });
  if (!path.ok) return reject(ctx, res, model, path.refusal);
  const { fault } = path;
  const frame: FrameContext = fault
    ? { kind, id: FAULT_IDS[kind], created: 0, model, reasoningField: ctx.reasoningField }
    : {
        kind,
        id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID().replaceAll('-', '')}`,
        created: Math.floor(Date.now() / 1000),
        model,
        reasoningField: ctx.reasoningField,
      };

  if (fault) {
    const script = faultScript(fault, {
      frame,
      includeUsage: request.includeUsage,
      promptTokens: request.promptTokens,
    });
    return faultStream(ctx, runtime, res, request, fault, script, FAULT_FRAMING[kind]);
  }
  const plan = path.echo
    ? echoPlan(path.echo, kind)
    : placeholderPlan(runtime.config.outputTokens, request.maxTokens);
  if (request.stream) streamPlan(ctx, runtime, res, request, plan, frame);
  else answerPlan(ctx, runtime, res, request, plan, frame);
}

/** Counts and answers a refusal in the standard error object. */
function reject(
  ctx: SimContext,
  res: ServerResponse,
  model: string,
  refusal: Refusal,
  type = 'invalid_request_error',
): void {
  ctx.metrics.rejected(model, refusal.code);
  sendError(res, refusal.status, refusal.message, type, refusal.code, refusal.param);
}
