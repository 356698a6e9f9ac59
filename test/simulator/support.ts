import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../helpers/temp-dir.js';

/** Writes model TOML files into a fresh temporary directory; returns their paths in order. */
export function writeModels(models: Record<string, string>): { dir: string; files: string[] } {
  const dir = tempDir('sim-models-');
  const files = Object.entries(models).map(([file, text]) => {
    const path = join(dir, file);
    writeFileSync(path, text);
    return path;
  });
  return { dir, files };
}

/**
 * A model with no latency at all, for tests that do not test latency. `tables` is appended after the
 * latency table; `top` holds top-level keys (which TOML needs before the first table).
 */
export function zeroLatencyModel(name: string, tables = '', top = ''): string {
  return `name = "${name}"
${top}
[latency]
prefill_ms = 0
prefill_per_token_ms = 0
decode_ms = 0
decode_per_seq_ms = 0
${tables}`;
}

export interface RawResponse {
  /** Every byte received, headers included. */
  bytes: Buffer;
  status: number;
  headers: Record<string, string>;
  /** Bytes after the header block, still chunk-encoded. */
  rawBody: Buffer;
  /** The decoded chunk payloads, concatenated (the SSE text as bytes). */
  payload: Buffer;
  /** The zero-length terminating chunk was received. */
  terminated: boolean;
  /** How the connection ended: FIN ('end'), RST ('error' ECONNRESET) or still open at the deadline. */
  ending: 'fin' | 'reset' | 'open';
  errorCode: string | undefined;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Give up (and close) after this long; the ending is then 'open'. */
  timeoutMs?: number;
}

/**
 * One HTTP/1.1 request over a raw TCP socket with `Connection: close`, recording every byte and how
 * the connection ended. A RST surfaces as an 'error' with ECONNRESET, a FIN as 'end'.
 */
export function rawRequest(target: number | string, request: RawRequest): Promise<RawResponse> {
  const body = request.body === undefined ? '' : JSON.stringify(request.body);
  const headers = {
    host: typeof target === 'number' ? `127.0.0.1:${target}` : 'localhost',
    'content-type': 'application/json',
    connection: 'close',
    'content-length': String(Buffer.byteLength(body)),
    ...request.headers,
  };
  const head =
    `${request.method ?? 'POST'} ${request.path} HTTP/1.1\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    '\r\n';
  return new Promise((resolve) => {
    // A number is a loopback TCP port; a string is a Unix domain socket path.
    const socket = typeof target === 'number' ? connect(target, '127.0.0.1') : connect(target);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (ending: RawResponse['ending'], errorCode?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseResponse(Buffer.concat(chunks), ending, errorCode));
    };
    const timer = setTimeout(() => finish('open'), request.timeoutMs ?? 10_000);
    socket.on('connect', () => socket.write(head + body));
    socket.on('data', (data: Buffer) => chunks.push(data));
    socket.on('end', () => finish('fin'));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      finish(err.code === 'ECONNRESET' ? 'reset' : 'fin', err.code),
    );
  });
}

function parseResponse(
  bytes: Buffer,
  ending: RawResponse['ending'],
  errorCode: string | undefined,
): RawResponse {
  const split = bytes.indexOf('\r\n\r\n');
  const headText = bytes.subarray(0, split < 0 ? bytes.length : split).toString('latin1');
  const [statusLine = '', ...headerLines] = headText.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rawBody = split < 0 ? Buffer.alloc(0) : bytes.subarray(split + 4);
  const chunked = headers['transfer-encoding'] === 'chunked';
  const decoded = chunked ? decodeChunked(rawBody) : { payload: rawBody, terminated: false };
  return {
    bytes,
    status: Number(statusLine.split(' ')[1]),
    headers,
    rawBody,
    payload: decoded.payload,
    terminated: decoded.terminated,
    ending,
    errorCode,
  };
}

/** Decodes chunked transfer encoding as far as the bytes go; a torn chunk contributes its prefix. */
export function decodeChunked(raw: Buffer): { payload: Buffer; terminated: boolean } {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = parseInt(raw.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) break;
    if (size === 0) return { payload: Buffer.concat(parts), terminated: true };
    const start = lineEnd + 2;
    parts.push(raw.subarray(start, Math.min(start + size, raw.length)));
    if (start + size + 2 > raw.length) break;
    offset = start + size + 2;
  }
  return { payload: Buffer.concat(parts), terminated: false };
}

/** Complete SSE data payloads (`data: ` stripped) and whatever trails the last blank line. */
export function sseFrames(payload: Buffer): { data: string[]; rest: Buffer } {
  const data: string[] = [];
  let offset = 0;
  for (;;) {
    const end = payload.indexOf('\n\n', offset);
    if (end < 0) break;
    const frame = payload.subarray(offset, end).toString('utf8');
    if (frame.startsWith('data: ')) data.push(frame.slice(6));
    offset = end + 2;
  }
  return { data, rest: payload.subarray(offset) };
}

/** Opens a streamed chat completion of `maxTokens` tokens from `model`; the body is left unread. */
export function streamChat(baseUrl: string, model: string, maxTokens: number): Promise<Response> {
  return fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });
}

export async function postJson(
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; contentType: string; json: unknown; text: string }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', json, text };
}

export async function getJson(baseUrl: string, path: string): Promise<unknown> {
  const res = await fetch(`${baseUrl}${path}`);
  return res.json();
}

/** The value of one sample in Prometheus text, or undefined when absent. */
export { metricValue } from '../helpers/gateway.js';

export async function readMetrics(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`);
  return res.text();
}

/** Polls `check` until it returns true or the deadline passes (generous, for state that settles). */
