import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { accessLine, createAccessLog, type AccessLogEntry } from '../../src/gateway/telemetry/access-log.js';

const entry: AccessLogEntry = {
  requestId: 'id-1',
  method: 'POST',
  path: '/v1/chat/completions',
  model: 'chat',
  provider: 'openai',
  status: 200,
  outcome: 'completed',
  attempts: 1,
  durationMs: 12.5,
  ttftMs: null,
  promptTokens: 3,
  completionTokens: null,
  reasoningTokens: null,
  cachedPromptTokens: null,
  cacheWriteTokens: null,
  cost: 0.000123,
  account: null,
  key: 'alice',
  traffic: 'realtime',
  traceId: null,
  client: '::1',
};

describe('access log lines', () => {
  it('are one JSON object per line with every field, in order', () => {
    const line = accessLine(entry);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(parsed).toEqual({ log: 'access', time: parsed.time, ...entry, msg: 'request finished' });
    expect(Number.isNaN(Date.parse(parsed.time as string))).toBe(false);
  });

  it('write times in milliseconds to a tenth', () => {
    const times = (durationMs: number, ttftMs: number | null) =>
      JSON.parse(accessLine({ ...entry, durationMs, ttftMs })) as {
        durationMs: number;
        ttftMs: number | null;
      };
    expect(times(812.44, 143.16)).toMatchObject({ durationMs: 812.4, ttftMs: 143.2 });
    expect(times(3.96, 0.04)).toMatchObject({ durationMs: 4, ttftMs: 0 });
    expect(times(7, null)).toMatchObject({ durationMs: 7, ttftMs: null });
    expect(times(120_000.05, 0.25)).toMatchObject({ durationMs: 120_000.1, ttftMs: 0.3 });
  });

  it('escape what a client controls: quotes, backslashes, control and non-ASCII characters', () => {
    const hostile = { ...entry, requestId: 'a"b\\c', path: '/v1/x\n{"log":"forged"}', model: 'mödel\u0000' };
    const line = accessLine(hostile);
    expect(line.split('\n')).toHaveLength(2);
    expect(JSON.parse(line)).toMatchObject({
      requestId: 'a"b\\c',
      path: '/v1/x\n{"log":"forged"}',
      model: 'mödel\u0000',
    });
  });
});

describe('access log batches', () => {
  it('write every line once, whole and in order, across many batches written while others wait', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'access-log-batches-'));
    try {
      const path = join(dir, 'access.log');
      const log = createAccessLog(path)!;
      // About 1.5 MB: batches queue behind the one being written, and written ones are reused.
      const total = 4_000;
      for (let i = 0; i < total; i++) {
        log.write({
          ...entry,
          requestId: `req-${i}`,
          path: `/v1/chat/completions?pad=${'x'.repeat(i % 200)}`,
        });
        if (i % 500 === 499) await sleep(1);
      }
      await log.flush();
      const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
      expect(lines).toHaveLength(total);
      lines.forEach((line, i) => expect((JSON.parse(line) as AccessLogEntry).requestId).toBe(`req-${i}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
