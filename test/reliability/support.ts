import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { ROOT } from '../helpers/process.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * Shared pieces of the reliability suites: an HTTP exchange that records every byte and how the
 * response ended, raw-socket exchanges, metric deltas, polling, the results files the report is
 * rendered from, and the resolver stub of the DNS-failure cases.
 */

/** `make soak` (SOAK=1) runs the longer variants. */
export const SOAK = process.env.SOAK === '1';

export const RESULTS_DIR = join(ROOT, 'test/.tmp/reliability');

/** Writes one suite's observations for `render-report.ts`. */
export function writeResults(suite: string, data: unknown): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(
    join(RESULTS_DIR, `${suite}.json`),
    JSON.stringify({ suite, soak: SOAK, data }, null, 2) + '\n',
  );
}

/**
 * On this machine a lookup of a `.invalid` name is sent to the configured nameserver (glibc does not
 * apply RFC 6761 locally). The gateway under test is started with this stub preloaded so that such
 * names fail in the process, as RFC 6761 says resolvers should, and no query leaves the host.
 */
export const INVALID_TLD_RESOLVER_ENV: Record<string, string> = {
  NODE_OPTIONS: [
    process.env.NODE_OPTIONS ?? '',
    `--import=${pathToFileURL(join(ROOT, 'test/reliability/invalid-tld-resolver.ts')).href}`,
  ]
    .join(' ')
    .trim(),
};

/** Polls `probe` until it returns a value other than undefined; fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await sleep(intervalMs);
  }
}

export type Ending = 'clean' | 'transport_error' | 'gave_up' | 'no_response';

export interface Exchange {
  /** null when no response head arrived. */
  status: number | null;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
  text: string;
  /**
   * clean: the body ended normally. transport_error: the connection failed (before or after the
   * head). gave_up: the client stopped waiting after `giveUpMs`. no_response: the connection failed
   * before any response head.
   */
  end: Ending;
  error: string | undefined;
  ms: number;
}

export interface ExchangeInit {
  method?: Dispatcher.HttpMethod;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The client stops waiting (aborts) after this long. */
  giveUpMs?: number;
  /** Aborting it ends the exchange as `gave_up` too. */
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

function errorCode(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  if (typeof e.code === 'string') return e.code;
  if (typeof e.cause?.code === 'string') return e.cause.code;
  return typeof e.name === 'string' ? e.name : 'error';
}

/** One HTTP request with undici; never throws: every outcome is described by the result. */
export async function exchange(url: string, init: ExchangeInit = {}): Promise<Exchange> {
  const started = performance.now();
  const controller = new AbortController();
  let gaveUp = false;
  const timer = setTimeout(() => {
    gaveUp = true;
    controller.abort();
  }, init.giveUpMs ?? 20_000);
  init.signal?.addEventListener('abort', () => {
    gaveUp = true;
    controller.abort();
  });
  const chunks: Buffer[] = [];
  const done = (
    status: number | null,
    headers: Exchange['headers'],
    end: Ending,
    error: string | undefined,
  ): Exchange => {
    clearTimeout(timer);
    const bytes = Buffer.concat(chunks);
    return {
      status,
      headers,
      bytes,
      text: bytes.toString('utf8'),
      end,
      error,
      ms: performance.now() - started,
    };
  };
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: init.headers ?? {},
      body: init.body ?? null,
      signal: controller.signal,
      ...(init.dispatcher ? { dispatcher: init.dispatcher } : {}),
    });
  } catch (error) {
    return done(null, {}, gaveUp ? 'gave_up' : 'no_response', errorCode(error));
  }
  try {
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
  } catch (error) {
    return done(
      response.statusCode,
      response.headers,
      gaveUp ? 'gave_up' : 'transport_error',
      errorCode(error),
    );
  }
  return done(response.statusCode, response.headers, 'clean', undefined);
}

/** A chat-completions (or text completions) POST with a JSON body. */
export function postJson(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  extra: Omit<ExchangeInit, 'body' | 'headers' | 'method'> = {},
): Promise<Exchange> {
  return exchange(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...extra,
  });
}

export interface RawResult {
  /** Everything the server sent. */
  text: string;
  /** The server closed the connection (FIN or RST) before `timeoutMs`. */
  closed: boolean;
  /** Still open at `timeoutMs` (the client then closed it). */
  hung: boolean;
  error: string | undefined;
  ms: number;
}

/**
 * Writes `parts` on a raw TCP connection to 127.0.0.1:`port` (`gapMs` apart), then waits until the
 * server closes the connection, `untilText` arrives or `timeoutMs` passes.
 */
export function rawExchange(
  port: number,
  parts: readonly (string | Buffer)[],
  options: { timeoutMs?: number; gapMs?: number; untilText?: string } = {},
): Promise<RawResult> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 5_000;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let error: string | undefined;
    let settled = false;
    const settle = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, hung: !closed, error, ms: performance.now() - started });
    };
    const timer = setTimeout(() => settle(false), timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => {
      text += data;
      if (options.untilText !== undefined && text.includes(options.untilText)) settle(true);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => settle(true));
    void (async () => {
      for (const part of parts) {
        if (settled || socket.destroyed) return;
        socket.write(part);
        if (options.gapMs) await sleep(options.gapMs);
      }
    })();
  });
}

/** The status code of the first response in raw HTTP text, or null. */
export function rawStatus(text: string): number | null {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return match ? Number(match[1]) : null;
}

// --- metrics -------------------------------------------------------------------------------------

export type Series = Map<string, number>;

/** Prometheus text to `name{a="x",b="y"}` (labels as printed) -> value, samples only. */
export function parseMetrics(text: string): Series {
  const series: Series = new Map();
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

export function labelsOf(key: string): Record<string, string> {
  const open = key.indexOf('{');
  const labels: Record<string, string> = {};
  if (open < 0) return labels;
  for (const match of key.slice(open + 1, -1).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
    labels[match[1]!] = match[2]!;
  return labels;
}

/** Non-zero changes of the series of one metric between two scrapes. */
export function deltas(
  before: Series,
  after: Series,
  name: string,
): { labels: Record<string, string>; delta: number }[] {
  const out: { labels: Record<string, string>; delta: number }[] = [];
  for (const [key, value] of after) {
    if (key !== name && !key.startsWith(`${name}{`)) continue;
    const delta = value - (before.get(key) ?? 0);
    if (delta !== 0) out.push({ labels: labelsOf(key), delta });
  }
  return out;
}

export async function scrape(adminUrl: string): Promise<Series> {
  const response = await exchange(`${adminUrl}/metrics`, { giveUpMs: 10_000 });
  if (response.status !== 200) throw new Error(`metrics scrape answered ${response.status}`);
  return parseMetrics(response.text);
}

/** Sum of a metric's samples whose labels include `labels`. */
export function sumOf(series: Series, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, value] of series) {
    if (key !== name && !key.startsWith(`${name}{`)) continue;
    const own = labelsOf(key);
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) sum += value;
  }
  return sum;
}

// --- simulator -----------------------------------------------------------------------------------

export interface CapacityRecord {
  model: string;
  max_waiting: number;
  max_num_seqs: number;
  waiting: number;
  running: number;
}

export async function simCapacity(simUrl: string): Promise<CapacityRecord[]> {
  const response = await exchange(`${simUrl}/control/capacity`, { giveUpMs: 5_000 });
  return JSON.parse(response.text) as CapacityRecord[];
}

/** Waits until no model of the simulator has a request running or waiting. */
export async function waitSimIdle(simUrl: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(
    'the simulator to have nothing running or waiting',
    async () =>
      (await simCapacity(simUrl)).every((r) => r.running === 0 && r.waiting === 0) ? true : undefined,
    timeoutMs,
  );
}

/** Writes simulator model files into a fresh temp directory; returns their paths by name. */
export function simModels(models: Record<string, string>): Record<string, string> {
  const dir = tempDir('reliability-models-');
  const paths: Record<string, string> = {};
  for (const [name, toml] of Object.entries(models)) {
    const path = join(dir, `${name}.toml`);
    writeFileSync(path, `name = "${name}"\n${toml}`);
    paths[name] = path;
  }
  return paths;
}

/** Latency table in milliseconds: prefill, then decode per token. */
export function latency(prefillMs: number, decodeMs: number, outputTokens: number): string {
  return [
    `output_tokens = ${outputTokens}`,
    '[latency]',
    `prefill_ms = ${prefillMs}`,
    'prefill_per_token_ms = 0',
    `decode_ms = ${decodeMs}`,
    'decode_per_seq_ms = 0',
    '',
  ].join('\n');
}

// --- processes -----------------------------------------------------------------------------------

/** Resident set size of a process in MiB, from /proc/<pid>/status (VmRSS). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) / 1024;
}

/** The process is still running (signal 0 probes without delivering anything). */
export function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// --- SSE -----------------------------------------------------------------------------------------

export interface ParsedStream {
  /** `data:` payloads of complete events, in order (`[DONE]` included as the string). */
  events: (Record<string, unknown> | '[DONE]' | string)[];
  /** Bytes after the last complete event (a torn frame), as text. */
  trailing: string;
}

/** Splits SSE text into complete events and the unfinished tail. Non-JSON data stays a string. */
export function parseSse(text: string): ParsedStream {
  const normalized = text.replace(/\r\n/g, '\n');
  const cut = normalized.lastIndexOf('\n\n');
  const complete = cut < 0 ? '' : normalized.slice(0, cut + 2);
  const trailing = cut < 0 ? normalized : normalized.slice(cut + 2);
  const events: ParsedStream['events'] = [];
  for (const block of complete.split('\n\n')) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data.length === 0) continue;
    if (data === '[DONE]') {
      events.push('[DONE]');
      continue;
    }
    try {
      const parsed: unknown = JSON.parse(data);
      events.push(parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : data);
    } catch {
      events.push(data);
    }
  }
  return { events, trailing };
}
