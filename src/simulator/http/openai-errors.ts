import type { ServerResponse } from 'node:http';
import { errorBody } from '../../lib/errors.js';
import { dataFrame } from '../openai/frames.js';
import { engineStoppedMessage, saturatedMessage, type AdmissionReplies } from './admission.js';
import { sendError, sendRaw } from './respond.js';

/** The exact 529 body of the specification, with the live numbers. */
export function saturatedBody(waiting: number, maxWaiting: number): string {
  return JSON.stringify({
    error: {
      message: saturatedMessage(waiting, maxWaiting),
      type: 'overloaded_error',
      code: 'queue_saturated',
    },
  });
}

/** Admission refusals of the OpenAI endpoints. */
export const OPENAI_ADMISSION_REPLIES: AdmissionReplies = {
  saturated: (res, waiting, maxWaiting) => sendRaw(res, 529, saturatedBody(waiting, maxWaiting)),
  stopped: (res, model) => sendEngineStopped(res, model),
};

/** A non-streaming request whose engine stopped: 503 `engine_unavailable`. */
export function sendEngineStopped(res: ServerResponse, model: string): void {
  sendError(res, 503, engineStoppedMessage(model), 'service_unavailable_error', 'engine_unavailable');
}

/** The in-stream error that ends a stream whose engine stopped, with no [DONE] after it. */
export function engineStoppedFrame(model: string): string {
  return dataFrame(errorBody(engineStoppedMessage(model), 'service_unavailable_error', 'engine_unavailable'));
}
