import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorJson } from '../../lib/errors.js';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, JSON.stringify(body));
}

/** A JSON body given as text, for bodies whose exact bytes are specified. */
export function sendRaw(res: ServerResponse, status: number, json: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

/** The standard error object of src/lib/errors.ts. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | number | null = null,
  param: string | null = null,
): void {
  sendRaw(res, status, errorJson(message, type, code, param));
}

export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export type BodyRead =
  { ok: true; value: unknown } | { ok: false; status: number; message: string; code: string };

/** Reads and parses a JSON body, refusing more than MAX_BODY_BYTES without buffering past it. */
export async function readJsonBody(req: IncomingMessage): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        return {
          ok: false,
          status: 413,
          message: `request body exceeds ${MAX_BODY_BYTES} bytes`,
          code: 'request_too_large',
        };
      }
      chunks.push(chunk);
    }
  } catch {
    return { ok: false, status: 400, message: 'request body could not be read', code: 'invalid_body' };
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, message: 'request body is not valid JSON', code: 'invalid_json' };
  }
}
