import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { echoPlan, parseEchoDirective } from '../directives/echo.js';
import { parseFaultHeader, faultDirectiveMessage } from '../faults/directive.js';
import type { FaultSpec } from '../faults/modes.js';
import type { EndpointKind, FrameContext } from '../openai/frames.js';
import { placeholderPlan, type OutputPlan } from '../openai/plan.js';
import { parseCompletionRequest, type CompletionRequest } from '../openai/requests.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import { faultStream } from './fault-stream.js';
import { readJsonBody, sendError } from './respond.js';
import { answerPlan, streamPlan } from './responders.js';

export const FAULT_HEADER = 'x-sim-fault';

/**
 * Fault streams carry a fixed id and `created` 0: the fault path has no clock and no randomness, so
 * the same trigger yields byte-identical frames on every run.
 */
const FAULT_IDS: Record<EndpointKind, string> = { chat: 'chatcmpl-sim-fault', completions: 'cmpl-sim-fault' };

type Decision = { ok: true; fault: FaultSpec | undefined; plan: OutputPlan | undefined } | { ok: false };

/** POST /v1/chat/completions and /v1/completions. */
export async function handleCompletion(
  kind: EndpointKind,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
): Promise<void> {
  const body = await readJsonBody(req);
  if (!body.ok) return reject(ctx, res, '', body.status, body.message, 'invalid_request_error', body.code);
  const parsed = parseCompletionRequest(kind, body.value);
  if (!parsed.ok) {
    return reject(
      ctx,
      res,
      '',
      400,
      parsed.message,
      'invalid_request_error',
      'invalid_request',
      parsed.param,
    );
  }
  const request = parsed.request;
  const runtime = request.model === undefined ? ctx.defaultModel : ctx.models.get(request.model);
  if (!runtime) {
    return reject(
      ctx,
      res,
      '',
      404,
      `The model \`${request.model}\` does not exist.`,
      'NotFoundError',
      'model_not_found',
      'model',
    );
  }

  const decision = decide(kind, req, res, ctx, runtime, request);
  if (!decision.ok) return;
  const { fault } = decision;
  const model = runtime.config.name;
  const frame: FrameContext = fault
    ? { kind, id: FAULT_IDS[kind], created: 0, model, reasoningField: ctx.reasoningField }
    : {
        kind,
        id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID().replaceAll('-', '')}`,
        created: Math.floor(Date.now() / 1000),
        model,
        reasoningField: ctx.reasoningField,
      };

  if (fault) return faultStream(ctx, runtime, res, request, fault, frame);
  const plan = decision.plan ?? placeholderPlan(runtime.config.outputTokens, request.maxTokens);
  if (request.stream) streamPlan(ctx, runtime, res, request, plan, frame);
  else answerPlan(ctx, runtime, res, request, plan, frame);
}

/**
 * Which path serves the request. Precedence: the `x-sim-fault` header, then the model's `[fault]`
 * table (streaming chat only), then an echo directive, then the normal placeholder answer.
 */
function decide(
  kind: EndpointKind,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
  runtime: ModelRuntime,
  request: CompletionRequest,
): Decision {
  const model = runtime.config.name;
  const header = req.headers[FAULT_HEADER];
  if (header !== undefined) {
    const text = Array.isArray(header) ? header.join(', ') : header;
    const refuse = (reason: string): Decision => {
      reject(
        ctx,
        res,
        model,
        400,
        faultDirectiveMessage(reason),
        'invalid_request_error',
        'invalid_fault_directive',
        FAULT_HEADER,
      );
      return { ok: false };
    };
    if (!ctx.enableDirectives)
      return refuse('fault directives are honored only when the server runs with --enable-directives');
    const parsed = parseFaultHeader(text);
    if (!parsed.ok) {
      reject(
        ctx,
        res,
        model,
        400,
        parsed.message,
        'invalid_request_error',
        'invalid_fault_directive',
        FAULT_HEADER,
      );
      return { ok: false };
    }
    if (!request.stream)
      return refuse('fault directives apply to streaming requests only (set "stream": true)');
    return { ok: true, fault: parsed.fault, plan: undefined };
  }
  if (kind === 'chat' && request.stream && runtime.config.fault) {
    return { ok: true, fault: runtime.config.fault, plan: undefined };
  }
  if (ctx.enableDirectives && request.directiveText !== undefined) {
    const echo = parseEchoDirective(request.directiveText);
    if (echo.found && !echo.ok) {
      reject(ctx, res, model, 400, echo.message, 'invalid_request_error', 'invalid_echo_directive');
      return { ok: false };
    }
    if (echo.found) return { ok: true, fault: undefined, plan: echoPlan(echo.directive, kind) };
  }
  return { ok: true, fault: undefined, plan: undefined };
}

function reject(
  ctx: SimContext,
  res: ServerResponse,
  model: string,
  status: number,
  message: string,
  type: string,
  code: string,
  param: string | null = null,
): void {
  ctx.metrics.rejected(model, code);
  sendError(res, status, message, type, code, param);
}
