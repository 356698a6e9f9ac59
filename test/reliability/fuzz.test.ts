import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseParser, type SseEvent } from '../../src/lib/sse.js';
import { compileRuntime } from '../../src/gateway/runtime/compile.js';
import { parseConfigText } from '../../src/gateway/config/load.js';
import { resolveSecrets } from '../../src/gateway/config/secrets.js';
import { surfaceOf } from '../../src/gateway/api/surfaces.js';
import { SseSanitizeTransform } from '../../src/gateway/strict/sse-transform.js';
import {
  parseRequestBody,
  validateRequest,
  type StrictEndpoint,
} from '../../src/gateway/strict/validate-request.js';
import { validConfig } from '../config/helpers/arbitraries.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { OK_COMPLETION, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { split } from '../helpers/chunks.js';
import type { FuzzResults } from './report.ts';
import { SOAK, alive, exchange, waitFor, writeResults } from './support.js';

/**
 * Property-based fuzzing (fast-check) of what the gateway parses from strangers: request bodies (the
 * strict parser and validator, and the running gateways over HTTP), SSE from providers (the parser and
 * the strict re-emitter, on byte soup in any chunking), and configuration files (mutated valid
 * configurations through validation, compilation and a live reload).
 */

const scale = (runs: number): number => (SOAK ? runs * 10 : runs);
/** Per property: generous, and ten times more for the soak's ten times more runs. */
const TIMEOUT = SOAK ? 600_000 : 120_000;
const results: FuzzResults = { runs: {} };
const counted = (name: string, runs: number): { numRuns: number } => {
  results.runs[name] = runs;
  return { numRuns: runs };
};

afterAll(() => writeResults('fuzz', results));

// --- request bodies ------------------------------------------------------------------------------

const ENDPOINTS: StrictEndpoint[] = ['chat_completions', 'embeddings', 'responses'];
const contentTypes = fc.constantFrom(
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
  'json',
);

const validChat = fc.record({
  model: fc.constantFrom('m', 'nope', ''),
  messages: fc.array(
    fc.record({
      role: fc.constantFrom('user', 'system', 'assistant', 'tool', 'bogus'),
      content: fc.string({ maxLength: 20 }),
    }),
    { maxLength: 3 },
  ),
  stream: fc.option(fc.boolean(), { nil: undefined }),
});

/** Bodies from well-formed to garbage: valid chats, mutated chats, JSON values, strings, bytes. */
const bodies: fc.Arbitrary<Buffer> = fc.oneof(
  validChat.map((v) => Buffer.from(JSON.stringify(v))),
  fc
    .tuple(validChat, fc.nat(), fc.nat(255), fc.constantFrom('flip', 'truncate', 'insert'))
    .map(([v, at, byte, how]) => {
      const bytes = Buffer.from(JSON.stringify(v));
      const i = at % bytes.length;
      if (how === 'truncate') return bytes.subarray(0, i);
      if (how === 'flip') {
        bytes[i] = byte;
        return bytes;
      }
      return Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
    }),
  fc
    .tuple(validChat, fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }))
    .map(([v, key, value]) => Buffer.from(JSON.stringify({ ...v, [key]: value }))),
  fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.string({ maxLength: 80 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 120 }).map((a) => Buffer.from(a)),
);

describe('request parsing (strict parser and validator)', () => {
  it('never throws; accepts exactly the UTF-8 JSON objects it can hand on', { timeout: TIMEOUT }, () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENDPOINTS), contentTypes, bodies, (endpoint, type, body) => {
        const parsed = parseRequestBody(endpoint, type, body);
        if (parsed.ok) {
          expect(parsed.value).toEqual(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)));
          expect(typeof parsed.value === 'object' && !Array.isArray(parsed.value)).toBe(true);
        } else {
          expect(parsed.status).toBe(400);
          expect(['invalid_json', 'schema_mismatch', 'invalid_content_type', 'invalid_body']).toContain(
            parsed.code,
          );
          expect(Object.keys(parsed.error.error).sort()).toEqual(['code', 'message', 'param', 'type']);
        }
        const validated = validateRequest(endpoint, type, body);
        if (validated.ok) expect(parsed.ok).toBe(true);
      }),
      counted('request parsing', scale(1_000)),
    );
  });

  it('the validator never throws on arbitrary objects, however nested', { timeout: TIMEOUT }, () => {
    const nested = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(
          fc.constantFrom('model', 'messages', 'role', 'content', 'tools', 'input', 'type', 'x'),
          tie('node'),
          {
            maxKeys: 4,
          },
        ),
      ),
    })).node;
    fc.assert(
      fc.property(fc.constantFrom(...ENDPOINTS), nested, fc.nat(3_000), (endpoint, value, depth) => {
        let deep: unknown = value;
        for (let i = 0; i < depth; i++) deep = [deep];
        for (const candidate of [
          value,
          { model: 'm', messages: value, input: value },
          { model: 'm', messages: [{ role: 'user', content: deep }] },
        ]) {
          const body = Buffer.from(JSON.stringify(candidate) ?? 'null');
          const result = validateRequest(endpoint, 'application/json', body);
          expect(typeof result.ok).toBe('boolean');
        }
      }),
      counted('request validation', scale(300)),
    );
  });
});

// --- requests over HTTP --------------------------------------------------------------------------

let upstream: RecordingUpstream;
let plain: StartedGateway;
let strict: StartedGateway;

const ANSWERS: Record<string, string> = {
  '/v1/embeddings': JSON.stringify({
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: [0.5] }],
  }),
  '/v1/responses': JSON.stringify({ id: 'r', object: 'response', created_at: 1, output: [] }),
};
const CHAT_ANSWER = JSON.stringify(OK_COMPLETION);

beforeAll(async () => {
  upstream = await startUpstream((req, res) => {
    const body = ANSWERS[req.url.split('?')[0]!] ?? CHAT_ANSWER;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const args = ['--max-body-bytes', '4096'];
  [plain, strict] = await Promise.all([
    startGateway(
      { targets: { m: { url: upstream.url }, keyed: { url: upstream.url, keys: ['sk-fuzz-1'] } } },
      { args },
    ),
    startGateway({ strict_mode: true, targets: { m: { url: upstream.url } } }, { args }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([plain?.stop(), strict?.stop()]);
  await upstream?.close();
});

const anyRequest = fc.record({
  method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
  path: fc.constantFrom(
    '/v1/chat/completions',
    '/v1/embeddings',
    '/v1/responses',
    '/v1/models',
    '/v1/completions',
    '/x',
    '/v1/chat/completions?x=1',
  ),
  type: contentTypes,
  body: bodies,
  override: fc.option(fc.constantFrom('m', 'keyed', 'nope', ''), { nil: undefined }),
  headers: fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,12}$/), fc.stringMatching(/^[!-~][ -~]{0,30}$/), {
    maxKeys: 4,
  }),
});
/** Requests a strict gateway may forward, with one thing perhaps wrong. */
const wellFormed = fc.record({
  method: fc.constant('POST'),
  path: fc.constantFrom('/v1/chat/completions', '/v1/chat/completions?x=1'),
  type: fc.constantFrom(undefined, 'application/json', 'text/plain'),
  body: fc
    .record({
      model: fc.constantFrom('m', 'm', 'm', 'nope'),
      messages: fc.array(
        fc.record({
          role: fc.constantFrom('user', 'system', 'assistant'),
          content: fc.string({ maxLength: 20 }),
        }),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
      temperature: fc.option(
        fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.string({ maxLength: 3 })),
        { nil: undefined },
      ),
      max_tokens: fc.option(fc.integer({ min: -5, max: 100 }), { nil: undefined }),
    })
    .map((v) => Buffer.from(JSON.stringify(v))),
  override: fc.option(fc.constantFrom('m', 'nope'), { nil: undefined }),
  headers: fc.constant({} as Record<string, string>),
});
const requests = fc.oneof({ weight: 2, arbitrary: anyRequest }, { weight: 1, arbitrary: wellFormed });

describe('requests over HTTP (both gateways)', () => {
  it(
    'get a 4xx or a forwarded answer, never a 5xx; only routable, valid requests reach the provider',
    async () => {
      const agent = new Agent({ connections: 4 });
      const forwardedBy = { plain: 0, strict: 0 };
      const refusedBy = { plain: 0, strict: 0 };
      try {
        await fc.assert(
          fc.asyncProperty(requests, async (r) => {
            for (const [g, isStrict] of [
              [plain, false],
              [strict, true],
            ] as const) {
              const before = upstream.requests.length;
              const headers: Record<string, string> = { ...r.headers };
              if (r.type !== undefined) headers['content-type'] = r.type;
              if (r.override !== undefined) headers['model-override'] = r.override;
              const got = await exchange(`${g.url}${r.path}`, {
                method: r.method as 'POST',
                headers,
                body: r.method === 'GET' ? undefined : r.body,
                dispatcher: agent,
                giveUpMs: 10_000,
              });
              const forwarded = upstream.requests.length - before;
              const where = `${isStrict ? 'strict' : 'plain'} ${r.method} ${r.path} -> ${got.status} ${got.text.slice(0, 160)}`;
              expect(got.end, where).toBe('clean');
              expect(got.status, where).not.toBeNull();
              expect(got.status! < 500, where).toBe(true);
              expect(forwarded, where).toBeLessThanOrEqual(1);
              const side = isStrict ? 'strict' : 'plain';
              if (forwarded === 0) {
                refusedBy[side]++;
                continue;
              }
              forwardedBy[side]++;
              // What reached the provider is exactly what the client sent (no rewrite configured).
              const sent = upstream.requests.at(-1)!;
              if (r.method !== 'GET') expect(sent.bytes.equals(r.body), where).toBe(true);
              if (isStrict) {
                const endpoint = surfaceOf(r.path.split('?')[0]!)?.strict;
                expect(r.method, where).toBe('POST');
                expect(endpoint, where).toBeDefined();
                expect(validateRequest(endpoint!, r.type, r.body).ok, where).toBe(true);
              } else {
                // Routed to the one open alias: by the header, or by the JSON body when there is none.
                let alias: string | undefined = r.override;
                if (alias === undefined || alias === '') {
                  try {
                    alias = (JSON.parse(r.body.toString('utf8')) as { model?: string }).model;
                  } catch {
                    alias = undefined;
                  }
                }
                expect(alias, where).toBe('m');
              }
            }
          }),
          counted('HTTP requests (x2 gateways)', scale(120)),
        );
      } finally {
        await agent.close();
      }
      // Not vacuous: both gateways forwarded some inputs and refused others.
      for (const side of ['plain', 'strict'] as const) {
        expect(forwardedBy[side], `${side} forwarded`).toBeGreaterThan(3);
        expect(refusedBy[side], `${side} refused`).toBeGreaterThan(3);
      }
      for (const g of [plain, strict]) {
        expect(alive(g.program.proc.pid)).toBe(true);
        expect(g.program.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
      }
    },
    TIMEOUT,
  );
});

// --- SSE from providers --------------------------------------------------------------------------

const CHUNK = JSON.stringify({
  id: 'x',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }],
});
const soupPiece = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'data:',
      'data: ',
      ':',
      ': ping',
      '\n',
      '\n\n',
      '\r\n',
      '\r',
      '[DONE]',
      'event: x\n',
      'id: 1\n',
      'retry: 5\n',
      '{',
      '}',
      '"',
      CHUNK,
      '{"error":{"message":"e","code":429}}',
      'é',
      '😀',
      '\uFEFF',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const soup: fc.Arbitrary<Buffer> = fc
  .tuple(fc.array(soupPiece, { maxLength: 40 }), fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 3 }))
  .map(([pieces, invalid]) => {
    const bytes = Buffer.from(pieces.join(''));
    // A few raw bytes anywhere: invalid UTF-8, split characters, NUL.
    let out = bytes;
    for (const [at, byte] of invalid) {
      const i = out.length === 0 ? 0 : at % out.length;
      out = Buffer.concat([out.subarray(0, i), Buffer.from([byte]), out.subarray(i)]);
    }
    return out;
  });
const cuts = fc.array(fc.nat(), { maxLength: 12 });

function parse(
  parts: readonly Buffer[],
  limit: number,
): { events: SseEvent[]; end: string; maxPending: number } {
  const events: SseEvent[] = [];
  const parser = new SseParser({ onEvent: (e) => events.push(e) }, { maxPendingBytes: limit });
  let maxPending = 0;
  for (const part of parts) {
    const pushed = parser.push(part);
    if (!pushed.ok) return { events, end: 'overflow', maxPending };
    maxPending = Math.max(maxPending, parser.pendingBytes);
  }
  const end = parser.end();
  return { events, end: end.ok ? 'clean' : end.kind, maxPending };
}

describe('SSE from providers', () => {
  it(
    'the parser: any byte soup, any chunking: same events, never throws, the unfinished-event cap holds',
    { timeout: TIMEOUT },
    () => {
      fc.assert(
        fc.property(soup, cuts, fc.integer({ min: 0, max: 64 }), (bytes, at, limit) => {
          const whole = parse([bytes], 1 << 20);
          const chunked = parse(split(bytes, at), 1 << 20);
          expect(chunked.events).toEqual(whole.events);
          expect(chunked.end).toBe(whole.end);
          // With a small cap: either every push stays within it, or an overflow is reported.
          const capped = parse(split(bytes, at), limit);
          if (capped.end !== 'overflow') expect(capped.maxPending).toBeLessThanOrEqual(limit);
        }),
        counted('SSE parser', scale(1_000)),
      );
    },
  );

  it(
    'the strict re-emitter: same bytes whatever the chunking; only whole data events; [DONE] only if sent, and last',
    { timeout: TIMEOUT },
    () => {
      fc.assert(
        fc.property(
          soup,
          cuts,
          fc.constantFrom<'strict' | 'standalone'>('strict', 'standalone'),
          fc.boolean(),
          (bytes, at, mode, trusted) => {
            const run = (parts: readonly Buffer[]) => {
              const transform = new SseSanitizeTransform({
                alias: 'alias',
                mode,
                trusted,
                maxPendingBytes: 1 << 20,
              });
              let output = '';
              let state = 'open';
              for (const part of parts) {
                const step = transform.push(part);
                if (state !== 'open') expect(step.output).toBe('');
                output += step.output;
                state = step.state;
              }
              const end = transform.end();
              if (state !== 'open') expect(end.output).toBe('');
              output += end.output;
              return { output, state: state === 'open' ? end.state : state };
            };
            const whole = run([bytes]);
            const chunked = run(split(bytes, at));
            expect(chunked).toEqual(whole);
            // Output grammar: `data: <[DONE] | JSON object>\n\n` events and nothing else.
            const events = whole.output.split('\n\n');
            expect(events.pop()).toBe('');
            for (const [i, event] of events.entries()) {
              expect(event.startsWith('data: ')).toBe(true);
              const data = event.slice(6);
              expect(data.includes('\n')).toBe(false);
              if (data === '[DONE]') {
                expect(i).toBe(events.length - 1);
                expect(bytes.toString('latin1')).toMatch(/data: ?\[DONE\]/);
              } else {
                const value = JSON.parse(data) as Record<string, unknown>;
                expect(typeof value).toBe('object');
                if ('error' in value) expect(i).toBe(events.length - 1);
                else expect(value.model).toBe('alias');
              }
            }
          },
        ),
        counted('SSE re-emitter', scale(1_000)),
      );
    },
  );
});

// --- configuration -------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every path into a JSON value (arrays by index). */
function paths(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

function mutate(
  config: Json,
  path: (string | number)[],
  how: 'replace' | 'delete' | 'add',
  replacement: Json,
  key: string,
): Json {
  if (path.length === 0) return how === 'replace' ? replacement : config;
  const copy = structuredClone(config) as Record<string | number, Json>;
  let parent: Record<string | number, Json> = copy;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, Json>;
  const last = path.at(-1)!;
  if (how === 'replace') parent[last] = replacement;
  else if (how === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else {
    const target = parent[last];
    if (target !== null && typeof target === 'object' && !Array.isArray(target))
      (target as Record<string, Json>)[key] = replacement;
    else parent[last] = replacement;
  }
  return copy;
}

const mutatedConfigs = fc
  .tuple(
    validConfig,
    fc.nat(),
    fc.constantFrom<'replace' | 'delete' | 'add'>('replace', 'delete', 'add'),
    fc.jsonValue({ maxDepth: 2 }),
    fc.string({ maxLength: 10 }),
  )
  .map(([config, at, how, replacement, key]) => {
    const json = config as unknown as Json;
    const all = paths(json);
    return mutate(json, all[at % all.length]!, how, replacement as Json, key);
  });

describe('configuration validation', () => {
  it(
    'mutated valid configurations: validation and compilation never throw; errors carry paths',
    { timeout: TIMEOUT },
    async () => {
      await fc.assert(
        fc.asyncProperty(mutatedConfigs, async (config) => {
          for (const [text, source] of [
            [JSON.stringify(config), 'config.json'],
            [toYaml(config), 'config.yaml'],
          ] as const) {
            const parsed = parseConfigText(text, source);
            if (!parsed.ok) {
              expect(parsed.issues.length).toBeGreaterThan(0);
              for (const issue of parsed.issues) expect(issue.path.startsWith('$')).toBe(true);
              continue;
            }
            // A mutation may turn a key into a reference: placeholders stand in, nothing is read.
            const resolved = await resolveSecrets(parsed.config, { placeholders: true });
            if (!resolved.ok) {
              for (const issue of resolved.issues) expect(issue.path.startsWith('$')).toBe(true);
              continue;
            }
            const compiled = compileRuntime(resolved.config, parsed.hash, undefined, {
              enforceBatchInflight: false,
              batchLimiter: undefined,
              aimd: undefined,
              sharedLimits: undefined,
            });
            if (!compiled.ok)
              for (const issue of compiled.issues) expect(issue.path.startsWith('$')).toBe(true);
          }
        }),
        counted('configuration mutations', scale(300)),
      );
    },
  );

  it(
    'a running gateway fed mutated configurations keeps running and serves the next good one',
    async () => {
      const writes = scale(10);
      const gateway = await startGateway({ targets: { m: { url: upstream.url } } });
      try {
        const samples = fc.sample(mutatedConfigs, { numRuns: writes, seed: 42 });
        let outcomes = 0;
        const outcome = (l: { msg?: string }) =>
          l.msg === 'configuration reloaded' ||
          l.msg === 'configuration reload rejected; still serving the last good configuration' ||
          l.msg === 'configuration file unreadable; still serving the last good configuration';
        for (const [i, sample] of samples.entries()) {
          // Unique bytes each time (the watcher applies only changed content).
          await gateway.writeConfig(`${JSON.stringify(sample)}\n${' '.repeat(i)}`);
          await waitFor(
            'the gateway to apply or reject the file',
            () => (gateway.program.logs.filter(outcome).length > outcomes ? true : undefined),
            15_000,
          );
          outcomes = gateway.program.logs.filter(outcome).length;
          expect(alive(gateway.program.proc.pid)).toBe(true);
          expect((await exchange(`${gateway.adminUrl}/healthz`)).status).toBe(200);
        }
        await gateway.writeConfig({ targets: { good: { url: upstream.url } } });
        await waitFor('the good configuration to serve', async () => {
          const got = await exchange(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'good', messages: [] }),
          });
          return got.status === 200 ? true : undefined;
        });
        expect(gateway.program.logs.filter((l) => l.level === 'fatal')).toEqual([]);
        results.runs['configurations written to a live gateway'] = writes;
      } finally {
        await gateway.stop();
      }
    },
    TIMEOUT,
  );
});
