import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { buildKeyIndex, type TargetAuth } from '../../src/gateway/auth/keys.js';
import { startGateway, type StartedGateway } from '../helpers/gateway.js';
import { OK_COMPLETION, jsonReply, startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import type { AuthSecurityResults } from './report.ts';
import { SOAK, exchange, labelsOf, parseMetrics, postJson, writeResults, type Exchange } from './support.js';

/**
 * Authentication and secrets: keys are compared as SHA-256 digests with timingSafeEqual and no
 * prefix or variant of a key is accepted; no key (client or upstream) appears in logs, error bodies,
 * response headers or metric labels; health and metrics routes are only on the admin port; the
 * client's key never reaches a provider and a provider's key never reaches a client.
 */

// Every timingSafeEqual call of the auth module, with its arguments.
const compared = vi.hoisted(() => [] as [Buffer, Buffer][]);
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
      compared.push([
        Buffer.from(a.buffer, a.byteOffset, a.byteLength),
        Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      ]);
      return real.timingSafeEqual(a, b);
    },
  };
});

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

const tally: AuthSecurityResults = {
  tokensTried: 0,
  logLinesScanned: 0,
  metricSeriesScanned: 0,
  responsesScanned: 0,
  leaks: 0,
};

// --- the auth module, at unit level --------------------------------------------------------------

function targetWith(keys: string[]): TargetAuth {
  const built = buildKeyIndex(
    { global_keys: [], key_definitions: { named: { key: keys[0]! } } },
    { t: { keys: ['named', ...keys.slice(1)] }, open: {} },
  );
  if (!built.ok) throw new Error(JSON.stringify(built.problems));
  return built.index.target('t')!;
}

describe('key comparison', () => {
  beforeEach(() => {
    compared.length = 0;
  });

  it('compares SHA-256 digests of the presented and stored key with timingSafeEqual, never the tokens', () => {
    const key = 'sk-unit-2b7f0c1d9e8a';
    const target = targetWith([key, 'sk-literal-77aa']);
    const accepted = target.authenticate(`Bearer ${key}`);
    expect(accepted.ok).toBe(true);
    expect(compared).toHaveLength(1);
    const [presented, stored] = compared[0]!;
    expect(presented.length).toBe(32);
    expect(stored.length).toBe(32);
    expect(presented.equals(sha256(key))).toBe(true);
    expect(stored.equals(sha256(key))).toBe(true);

    compared.length = 0;
    expect(target.authenticate('Bearer sk-literal-77aa').ok).toBe(true);
    expect(compared[0]![0].equals(sha256('sk-literal-77aa'))).toBe(true);

    // Whatever is presented, no comparison ever sees the token itself.
    compared.length = 0;
    for (const token of [key.slice(0, -1), `${key}x`, key.toUpperCase(), 'x'.repeat(32)]) {
      expect(target.authenticate(`Bearer ${token}`).ok).toBe(false);
      tally.tokensTried++;
    }
    for (const [a, b] of compared) {
      expect(a.length).toBe(32);
      expect(b.length).toBe(32);
    }
  });

  it('property: no proper prefix, extension, case change or one-character change of a key is accepted', () => {
    const keyArb = fc.stringMatching(/^[!-~]{1,64}$/);
    fc.assert(
      fc.property(keyArb, fc.nat(), fc.stringMatching(/^[!-~]{1,8}$/), (key, at, suffix) => {
        const target = targetWith([key]);
        expect(target.authenticate(`Bearer ${key}`).ok).toBe(true);
        expect(target.authenticate(`bearer \t ${key}  `).ok).toBe(true);
        const variants = new Set<string>();
        for (let n = 1; n < key.length; n++) variants.add(key.slice(0, n));
        variants.add(key + suffix);
        variants.add(suffix + key);
        variants.add(key.toUpperCase());
        variants.add(key.toLowerCase());
        const i = at % key.length;
        const changed = String.fromCharCode(((key.charCodeAt(i) - 33 + 1) % 94) + 33);
        variants.add(key.slice(0, i) + changed + key.slice(i + 1));
        variants.delete(key);
        for (const variant of variants) {
          tally.tokensTried++;
          expect(target.authenticate(`Bearer ${variant}`).ok, variant).toBe(false);
        }
        for (const header of [
          key,
          `Basic ${key}`,
          `Bearer`,
          `Bearer `,
          `Bearer${key}`,
          `Bearer ${key} ${key}`,
        ]) {
          tally.tokensTried++;
          expect(target.authenticate(header).ok, header).toBe(false);
        }
        expect(target.authenticate(undefined).ok).toBe(false);
      }),
      { numRuns: SOAK ? 3_000 : 300 },
    );
  });
});

// --- end to end ----------------------------------------------------------------------------------

const TEAM_KEY = 'sk-team-61d2c6a9f0e3b7';
const GLOBAL_KEY = 'sk-global-5e8b1f4c2a90d3';
const LITERAL_KEY = 'sk-literal-c0ffee15bad0';
const UPSTREAM_KEY = 'sk-upstream-9af3e27c81b4d6';
const UPSTREAM_KEY_2 = 'up2-3b9d0e6f1a7c44';
const CLIENT_SECRETS = [TEAM_KEY, GLOBAL_KEY, LITERAL_KEY];
const UPSTREAM_SECRETS = [UPSTREAM_KEY, UPSTREAM_KEY_2];
/** Distinctive middles, so a truncated or partly masked copy is found too. */
const fragments = (secret: string): string[] => [secret, secret.slice(3, 15), secret.slice(-10)];

let up: RecordingUpstream;
let plain: StartedGateway;
let strict: StartedGateway;
const responses: Exchange[] = [];
const presented: string[] = [];

beforeAll(async () => {
  up = await startUpstream();
  const auth = {
    global_keys: [GLOBAL_KEY],
    key_definitions: {
      team: {
        key: TEAM_KEY,
        labels: { account: 'acme' },
        rate_limit: { requests_per_second: 0.001, burst_size: 4 },
      },
    },
  };
  const targets = {
    keyed: { url: up.url, keys: ['team'], gateway_key: UPSTREAM_KEY },
    other: {
      url: up.url,
      keys: [LITERAL_KEY],
      gateway_key: UPSTREAM_KEY_2,
      upstream_auth_header_name: 'x-api-key',
      upstream_auth_header_prefix: '',
    },
    sanitized: { url: up.url, keys: ['team'], gateway_key: UPSTREAM_KEY, sanitize_response: true },
    dead: { url: 'http://127.0.0.1:1', keys: ['team'], gateway_key: UPSTREAM_KEY },
  };
  // The level a deployment runs at (README: logs never contain keys, prompts, completions or upstream
  // error bodies at info).
  [plain, strict] = await Promise.all([
    startGateway({ auth, targets }, { env: { LOG_LEVEL: 'info' } }),
    startGateway({ strict_mode: true, auth, targets }, { env: { LOG_LEVEL: 'info' } }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([plain?.stop(), strict?.stop()]);
  await up?.close();
  writeResults('auth-security', tally);
});

beforeEach(() => {
  up.requests.length = 0;
  up.respondWith(jsonReply(200, OK_COMPLETION));
});

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

async function send(
  g: StartedGateway,
  model: string,
  authorization: string | undefined,
  extra: Record<string, string> = {},
): Promise<Exchange> {
  if (authorization !== undefined) presented.push(authorization);
  const got = await postJson(g.url, '/v1/chat/completions', chat(model), {
    ...(authorization === undefined ? {} : { authorization }),
    ...extra,
  });
  responses.push(got);
  return got;
}

describe('authentication end to end', () => {
  it('keyed targets accept their keys and the global key, nothing else; refusals reach no provider', async () => {
    for (const g of [plain, strict]) {
      expect((await send(g, 'keyed', `Bearer ${TEAM_KEY}`)).status).toBe(200);
      expect((await send(g, 'keyed', `Bearer ${GLOBAL_KEY}`)).status).toBe(200);
      expect((await send(g, 'other', `Bearer ${LITERAL_KEY}`)).status).toBe(200);
      expect((await send(g, 'other', `Bearer ${GLOBAL_KEY}`)).status).toBe(200);
      const served = up.requests.length;
      const refused = [
        undefined,
        `Bearer ${TEAM_KEY.slice(0, -1)}`,
        `Bearer ${TEAM_KEY.slice(0, 8)}`,
        `Bearer ${TEAM_KEY}0`,
        `Bearer ${TEAM_KEY.toUpperCase()}`,
        `Basic ${Buffer.from(`user:${TEAM_KEY}`).toString('base64')}`,
        TEAM_KEY,
        'Bearer ',
        `Bearer ${UPSTREAM_KEY}`,
        `Bearer ${LITERAL_KEY}`,
      ];
      for (const authorization of refused) {
        tally.tokensTried++;
        const got = await send(g, 'keyed', authorization);
        expect(got.status, String(authorization)).toBe(401);
      }
      // A key of one target does not open another.
      expect((await send(g, 'other', `Bearer ${TEAM_KEY}`)).status).toBe(401);
      expect(up.requests.length).toBe(served);
    }
  });

  it("the client's key never reaches a provider; the provider gets only its own key, in its own header", async () => {
    await send(plain, 'keyed', `Bearer ${TEAM_KEY}`);
    await send(plain, 'other', `Bearer ${LITERAL_KEY}`, { 'x-api-key': 'client-supplied-api-key' });
    const [keyed, other] = up.requests;
    expect(keyed!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(other!.headers['x-api-key']).toBe(UPSTREAM_KEY_2);
    expect(other!.headers.authorization).toBeUndefined();
    for (const request of up.requests) {
      const seen = JSON.stringify(request);
      for (const secret of CLIENT_SECRETS) expect(seen).not.toContain(secret);
      expect(seen).not.toContain('client-supplied-api-key');
    }
    expect(JSON.stringify(keyed)).not.toContain(UPSTREAM_KEY_2);
    expect(JSON.stringify(other)).not.toContain(UPSTREAM_KEY);
  });

  it('the gateway never echoes a key: refusals, limits, unknown models, dead providers, replaced upstream errors', async () => {
    for (const g of [plain, strict]) {
      for (let i = 0; i < 6; i++) await send(g, 'keyed', `Bearer ${TEAM_KEY}`); // past the burst: 429
      expect(responses.at(-1)!.status).toBe(429);
      expect((await send(g, 'nope', `Bearer ${TEAM_KEY}`)).status).toBe(404);
      expect((await send(g, 'dead', `Bearer ${GLOBAL_KEY}`)).status).toBe(503);
    }
    // A provider's error that quotes the credential it got: replaced for untrusted strict clients and
    // for sanitized targets, so the provider's key does not reach the client.
    up.respondWith((req, res) => {
      const body = JSON.stringify({
        error: { message: `Incorrect API key provided: ${String(req.headers.authorization)}`, code: 401 },
      });
      res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    const masked = await send(strict, 'other', `Bearer ${LITERAL_KEY}`);
    expect(masked.status).toBe(502);
    const sanitized = await send(plain, 'sanitized', `Bearer ${GLOBAL_KEY}`);
    expect(sanitized.status).toBe(401);
    expect(JSON.parse(sanitized.text)).toMatchObject({ error: { code: 'upstream_error' } });
  });

  it('health and metrics are only on the admin port; the admin port proxies nothing', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      // Non-strict: the proxy port routes every path to a target: without a model, 404 naming the
      // admin port; with one, the provider's own answer. Never the gateway's metrics or health.
      const bare = await exchange(`${plain.url}${path}`);
      expect(bare.status, path).toBe(404);
      const routed = await exchange(`${plain.url}${path}`, {
        headers: { 'model-override': 'keyed', authorization: `Bearer ${GLOBAL_KEY}` },
      });
      expect(up.requests.at(-1)!.url).toBe(path);
      const unauthenticated = await exchange(`${plain.url}${path}`, {
        headers: { 'model-override': 'keyed' },
      });
      expect(unauthenticated.status).toBe(401);
      // Strict: 404.
      const strictAnswer = await exchange(`${strict.url}${path}`, { headers: { 'model-override': 'keyed' } });
      expect(strictAnswer.status).toBe(404);
      for (const got of [bare, routed, unauthenticated, strictAnswer]) {
        responses.push(got);
        expect(got.text).not.toMatch(/gateway_requests_total|process_resident_memory_bytes|^ok\n$|^ready\n$/);
      }
    }
    const before = up.requests.length;
    for (const g of [plain, strict]) {
      expect((await exchange(`${g.adminUrl}/metrics`)).status).toBe(200);
      expect((await exchange(`${g.adminUrl}/healthz`)).status).toBe(200);
      const proxied = await postJson(g.adminUrl, '/v1/chat/completions', chat('keyed'), {
        authorization: `Bearer ${TEAM_KEY}`,
      });
      expect(proxied.status).toBe(404);
      expect((await exchange(`${g.adminUrl}/v1/models`)).status).toBe(404);
      expect(
        (await exchange(`${g.adminUrl}/v1/chat/completions`, { headers: { 'model-override': 'keyed' } }))
          .status,
      ).toBe(404);
    }
    expect(up.requests.length).toBe(before);
  });

  it('no key in any response, log line or metric label', async () => {
    // Presented tokens that are not keys count as secrets too: a gateway must not log what it refused.
    const secrets = [...CLIENT_SECRETS, ...UPSTREAM_SECRETS].flatMap(fragments);
    const find = (text: string): string[] => secrets.filter((s) => text.includes(s));
    for (const got of responses) {
      tally.responsesScanned++;
      const seen = find(JSON.stringify(got.headers) + got.text);
      tally.leaks += seen.length;
      expect(seen, `response ${got.status}: ${got.text.slice(0, 200)}`).toEqual([]);
    }
    for (const g of [plain, strict]) {
      const lines = [...g.program.logs.map((l) => JSON.stringify(l)), ...g.program.text().split('\n')];
      tally.logLinesScanned += lines.length;
      for (const line of lines) {
        const seen = find(line);
        tally.leaks += seen.length;
        expect(seen, line).toEqual([]);
      }
      expect(g.program.logs.some((l) => l.msg === 'request rejected' && l.status === 401)).toBe(true);
      const metrics = parseMetrics(await (await fetch(`${g.adminUrl}/metrics`)).text());
      for (const series of metrics.keys()) {
        tally.metricSeriesScanned++;
        expect(find(series), series).toEqual([]);
        for (const name of Object.keys(labelsOf(series))) {
          expect(
            ['key', 'token', 'authorization', 'account', 'user', 'api_key', 'key_id'],
            series,
          ).not.toContain(name);
        }
      }
    }
    expect(presented.length).toBeGreaterThan(20);
  });
});
