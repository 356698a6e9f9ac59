/**
 * Everything a scorecard run talks to, all on loopback: one simulator with a model per fault, small
 * stub providers for what the simulator does not do (a refused connection, a 500, a 429, a provider
 * that never answers), and the systems under test. Every process and server is stopped by `stop()`,
 * also when the run fails.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, spawnService, type Service } from '../support/process.ts';

/** Tokens in every answer: the healthy answer is this many placeholder words. */
export const OUTPUT_TOKENS = 12;

/** A simulator model: its latency, queue and the fault every stream of it gets. */
interface ModelSpec {
  readonly name: string;
  readonly prefillMs?: number;
  readonly decodeMs?: number;
  readonly outputTokens?: number;
  readonly maxNumSeqs?: number;
  readonly maxWaiting?: number;
  readonly fault?: { readonly mode: string; readonly afterChunks: number };
}

/** The simulator's models: the healthy backup and one model per provider fault. */
export const MODELS: readonly ModelSpec[] = [
  { name: 'healthy' },
  { name: 'preferred', maxNumSeqs: 64 },
  { name: 'slow-first-token', prefillMs: 3000 },
  { name: 'busy', maxNumSeqs: 1, maxWaiting: 1, fault: { mode: 'stall', afterChunks: 1 } },
  { name: 'cut-between-frames', fault: { mode: 'cut_between_frames', afterChunks: 3 } },
  { name: 'cut-mid-frame', fault: { mode: 'cut_mid_frame', afterChunks: 3 } },
  { name: 'reset', fault: { mode: 'reset', afterChunks: 3 } },
  { name: 'stall', fault: { mode: 'stall', afterChunks: 3 } },
  { name: 'no-done', fault: { mode: 'no_done', afterChunks: 3 } },
  { name: 'error-mid', fault: { mode: 'error_400_in_sse', afterChunks: 3 } },
  { name: 'long-stream', decodeMs: 40, outputTokens: 60 },
  // The faults only the Messages rows use (the [fault] table applies to streamed /v1/messages too).
  { name: 'error-envelope', fault: { mode: 'error_envelope_200', afterChunks: 3 } },
  { name: 'no-usage', fault: { mode: 'no_usage', afterChunks: 3 } },
  { name: 'cancelled', fault: { mode: 'cancelled_499', afterChunks: 3 } },
  { name: 'mid-reasoning', fault: { mode: 'mid_reasoning', afterChunks: 3 } },
  { name: 'mid-tool-call', fault: { mode: 'mid_tool_call', afterChunks: 3 } },
  { name: 'cut-before-first', fault: { mode: 'cut_between_frames', afterChunks: 0 } },
  { name: 'overloaded-before-first', fault: { mode: 'error_envelope_200', afterChunks: 0 } },
];

function modelToml(model: ModelSpec): string {
  const lines = [
    `name = "${model.name}"`,
    `output_tokens = ${model.outputTokens ?? OUTPUT_TOKENS}`,
    '[latency]',
    `prefill_ms = ${model.prefillMs ?? 20}`,
    'prefill_per_token_ms = 0',
    `decode_ms = ${model.decodeMs ?? 4}`,
    'decode_per_seq_ms = 0',
    '[scheduler]',
    `max_num_seqs = ${model.maxNumSeqs ?? 256}`,
    `max_waiting = ${model.maxWaiting ?? 0}`,
  ];
  if (model.fault)
    lines.push(
      '[fault]',
      `mode = "${model.fault.mode}"`,
      `after_chunks = ${model.fault.afterChunks}`,
      'delay_ms = 10',
    );
  return `${lines.join('\n')}\n`;
}

export interface Sim {
  readonly service: Service;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  stop(): Promise<void>;
}

export async function startSim(): Promise<Sim> {
  const dir = await mkdtemp(join(tmpdir(), 'scorecard-sim-'));
  for (const model of MODELS) await writeFile(join(dir, `${model.name}.toml`), modelToml(model));
  const service = spawnService(
    'sim',
    join(ROOT, 'bin/sim.js'),
    ['serve', '--host', '127.0.0.1', '--port', '0', '--models', dir],
    {
      env: { LOG_LEVEL: 'info' },
      keep: () => false,
    },
  );
  const line = await service.waitForLine((l) => l.msg === 'listening' && l.listener === 'sim');
  return {
    service,
    origin: `http://127.0.0.1:${line.port as number}`,
    async stop() {
      await service.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A provider that does one wrong thing, on its own loopback port. */
export interface Stub {
  /** `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  /** Requests it received. */
  requests: number;
  stop(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

type StubBehaviour = 'status_500' | 'status_429' | 'silent' | 'error_200' | 'error_then_done';

export async function startStub(behaviour: StubBehaviour): Promise<Stub> {
  const sockets = new Set<Socket>();
  const stub: { requests: number } = { requests: 0 };
  const server = createServer((req, res) => {
    stub.requests++;
    if (behaviour === 'silent') {
      req.resume();
      return; // headers never come; the socket is closed at stop()
    }
    if (behaviour === 'error_200' || behaviour === 'error_then_done') {
      const body: Buffer[] = [];
      req.on('data', (chunk: Buffer) => body.push(chunk));
      req.on('end', () => {
        const stream =
          (JSON.parse(Buffer.concat(body).toString('utf8')) as { stream?: boolean }).stream === true;
        if (behaviour === 'error_200') errorIn200(res, stream);
        else void errorThenDone(res);
      });
      return;
    }
    req.resume();
    const body =
      behaviour === 'status_500'
        ? { error: { message: 'internal error', type: 'server_error', code: null } }
        : { error: { message: 'rate limited', type: 'rate_limit_error', code: 'rate_limit_exceeded' } };
    const text = JSON.stringify(body);
    res.writeHead(behaviour === 'status_500' ? 500 : 429, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(behaviour === 'status_429' ? { 'retry-after': '1' } : {}),
    });
    res.end(text);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return Object.assign(stub, {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

const ERROR_EVENT = '{"error":{"message":"upstream model failed","type":"server_error","code":502}}';

/**
 * A 200 whose body is an error: a stream whose first event is one, or a JSON body that is one (what
 * some providers send when a request fails after they committed to a status).
 */
function errorIn200(res: ServerResponse, stream: boolean): void {
  if (stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${ERROR_EVENT}\n\n`);
    return;
  }
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(ERROR_EVENT),
  });
  res.end(ERROR_EVENT);
}

/** vLLM's order when its engine fails mid-stream: content, its error object, then `[DONE]`. */
async function errorThenDone(res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-stub', object: 'chat.completion.chunk', created: 0, model: 'healthy', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
  const parts = [
    chunk('Café '),
    chunk('déjà '),
    chunk('naïve '),
    `data: ${JSON.stringify({ object: 'error', message: 'engine failed', type: 'InternalServerError', param: null, code: 500 })}\n\n`,
    'data: [DONE]\n\n',
  ];
  for (const part of parts) {
    if (res.destroyed) return;
    res.write(part);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  res.end();
}

/** A loopback port nothing listens on: connecting is refused at once. */
export async function refusedPort(): Promise<string> {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

/** The sum of one metric's samples whose labels include `labels`, from Prometheus text. */
export function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const open = line.indexOf('{');
    const close = line.lastIndexOf('}');
    const labelText = open >= 0 ? line.slice(open + 1, close) : '';
    const matches = Object.entries(labels).every(([key, value]) => labelText.includes(`${key}="${value}"`));
    if (matches)
      sum += Number(
        line
          .slice(close + 1)
          .trim()
          .split(' ')[0],
      );
  }
  return sum;
}
