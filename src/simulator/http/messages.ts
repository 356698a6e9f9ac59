import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FAULT_MESSAGE_ID, messagesFaultScript } from '../anthropic/fault-script.js';
import type { MessageAnswer } from '../anthropic/message.js';
import {
  parseCountTokensRequest,
  parseMessagesRequest,
  type CountParse,
  type MessagesParse,
} from '../anthropic/requests.js';
import { invalidSignaturePath } from '../anthropic/signature.js';
import { applyStopSequences } from '../anthropic/stop-sequences.js';
import { echoPlan } from '../directives/echo.js';
import { placeholderPlan } from '../openai/plan.js';
import type { ModelRuntime, SimContext } from '../runtime.js';
import {
  ANTHROPIC_ADMISSION_REPLIES,
  anthropicEngineStoppedEvent,
  sendAnthropicError,
} from './anthropic-replies.js';
import { faultStream, type FaultFraming } from './fault-stream.js';
import { answerMessage, streamMessage } from './messages-responders.js';
import { readJsonBody, sendJson } from './respond.js';
import { chooseResponsePath, type Refusal } from './response-path.js';

const FAULT_FRAMING: FaultFraming = {
  endpoint: 'messages',
  replies: ANTHROPIC_ADMISSION_REPLIES,
  engineStoppedFrame: anthropicEngineStoppedEvent,
};

/** Tool calls scripted without an id get Anthropic's id shape. */
const TOOL_ID_PREFIX = 'toolu_sim_';

/** POST /v1/messages: Anthropic's Messages API over the same engines, directives and faults. */
export async function handleMessages(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
): Promise<void> {
  const parsed = await readRequest<Extract<MessagesParse, { ok: true }>>(req, res, ctx, parseMessagesRequest);
  if (parsed === undefined) return;
  const request = parsed.request;
  const runtime = resolveModel(ctx, res, request.model);
  if (!runtime) return;
  const model = runtime.config.name;

  // Anthropic refuses a thinking block handed back altered or unsigned; so does the simulator.
  const unsigned = invalidSignaturePath(request.thinkingBlocks);
  if (unsigned !== undefined) {
    const message = `${unsigned}: Invalid \`signature\` in \`thinking\` block`;
    return reject(ctx, res, model, { status: 400, message, code: 'invalid_signature', param: null });
  }

  const path = chooseResponsePath(req, ctx, runtime, {
    stream: request.stream,
    directiveText: request.directiveText,
    faultTable: true,
  });
  if (!path.ok) return reject(ctx, res, model, path.refusal);
  const identity = { id: path.fault ? FAULT_MESSAGE_ID : messageId(), model: request.model ?? model };
  if (path.fault) {
    const script = messagesFaultScript(path.fault, { identity, promptTokens: request.promptTokens });
    return faultStream(ctx, runtime, res, request, path.fault, script, FAULT_FRAMING);
  }

  // A script's structured pieces (the chat plan) map one to one onto Anthropic's blocks.
  const planned = path.echo
    ? echoPlan(path.echo, 'chat', TOOL_ID_PREFIX)
    : placeholderPlan(runtime.config.outputTokens, request.maxTokens);
  const { plan, stopSequence } = applyStopSequences(planned, request.stopSequences);
  const answer: MessageAnswer = { identity, plan, stopSequence, promptTokens: request.promptTokens };
  if (request.stream) streamMessage(ctx, runtime, res, request, answer);
  else answerMessage(ctx, runtime, res, request, answer);
}

/** POST /v1/messages/count_tokens: `{"input_tokens": N}`, the prompt counted as /v1/messages counts it. */
export async function handleCountTokens(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
): Promise<void> {
  const parsed = await readRequest<Extract<CountParse, { ok: true }>>(req, res, ctx, parseCountTokensRequest);
  if (parsed === undefined) return;
  if (!resolveModel(ctx, res, parsed.model)) return;
  sendJson(res, 200, { input_tokens: parsed.inputTokens });
}

/**
 * A Messages API request's body, read and parsed by `parse`; a body that cannot be read or parsed
 * is answered (400, or the read's own status) and undefined returned.
 */
async function readRequest<T extends { readonly ok: true }>(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: SimContext,
  parse: (value: unknown) => T | ParseFailure,
): Promise<T | undefined> {
  res.setHeader('request-id', requestId());
  const body = await readJsonBody(req);
  if (!body.ok) {
    reject(ctx, res, '', { status: body.status, message: body.message, code: body.code, param: null });
    return undefined;
  }
  const parsed = parse(body.value);
  if (parsed.ok) return parsed;
  reject(ctx, res, '', {
    status: 400,
    message: parsed.message,
    code: 'invalid_request',
    param: parsed.param,
  });
  return undefined;
}

interface ParseFailure {
  readonly ok: false;
  readonly message: string;
  readonly param: string | null;
}

/** The named model, or the default one when none is named; an unknown name is answered with 404. */
function resolveModel(
  ctx: SimContext,
  res: ServerResponse,
  name: string | undefined,
): ModelRuntime | undefined {
  const runtime = name === undefined ? ctx.defaultModel : ctx.models.get(name);
  if (!runtime)
    reject(ctx, res, '', { status: 404, message: `model: ${name}`, code: 'model_not_found', param: 'model' });
  return runtime;
}

/** Counts and answers a refusal in Anthropic's error shape. */
function reject(ctx: SimContext, res: ServerResponse, model: string, refusal: Refusal): void {
  ctx.metrics.rejected(model, refusal.code);
  sendAnthropicError(res, refusal.status, refusal.message);
}

function messageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}

function requestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}
