import type { ServerResponse } from 'node:http';
import { errorEvent, errorJson, errorTypeFor } from '../anthropic/errors.js';
import { engineStoppedMessage, saturatedMessage, type AdmissionReplies } from './admission.js';
import { sendRaw } from './respond.js';

/**
 * Errors of the Messages endpoints in Anthropic's shape. Statuses are the ones the OpenAI endpoints
 * answer (529 saturation, 503 stopped engine), so both framings of one failure agree; the error
 * type follows the status as Anthropic's does.
 */
export function sendAnthropicError(res: ServerResponse, status: number, message: string): void {
  sendRaw(res, status, errorJson(errorTypeFor(status), message));
}

export const ANTHROPIC_ADMISSION_REPLIES: AdmissionReplies = {
  saturated: (res, waiting, maxWaiting) =>
    sendAnthropicError(res, 529, saturatedMessage(waiting, maxWaiting)),
  stopped: (res, model) => sendAnthropicError(res, 503, engineStoppedMessage(model)),
};

/** The `event: error` that ends a stream whose engine stopped, with no message_stop after it. */
export function anthropicEngineStoppedEvent(model: string): string {
  return errorEvent('overloaded_error', engineStoppedMessage(model));
}
