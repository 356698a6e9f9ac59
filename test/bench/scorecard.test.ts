import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Results } from '../../bench/scorecard/render.ts';
import { ROOT } from '../helpers/process.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The resilience scorecard's quick mode, as a smoke test: every provider fault against the gateway
 * in both modes, read through raw HTTP and the openai SDK. The gateway must never hand a client a
 * truncated or wrong answer as a success, and never leave it hanging. No timing is asserted.
 */
describe('resilience scorecard (quick)', () => {
  it('the gateway fails no request silently and hangs none, in either mode and through either client', async () => {
    const dir = tempDir('scorecard-');
    const json = join(dir, 'results.json');
    await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'bench/scorecard/run.ts'), '--quick', '--json', json],
      {
        cwd: ROOT,
        timeout: 170_000,
      },
    );
    const results = JSON.parse(readFileSync(json, 'utf8')) as Results;
    expect(results.systems.map((s) => s.id)).toEqual(['gateway', 'gateway-strict']);
    expect(results.faults.map((row) => row.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    const bad: string[] = [];
    const check = (where: string, counts: { silent: number; hung: number }, sent: number) => {
      if (sent === 0) bad.push(`${where}: nothing sent`);
      if (counts.silent > 0) bad.push(`${where}: ${counts.silent} silent`);
      if (counts.hung > 0) bad.push(`${where}: ${counts.hung} hung`);
    };
    for (const row of results.faults)
      for (const [system, byClient] of Object.entries(row.cells))
        for (const [client, cell] of Object.entries(byClient))
          check(`row ${row.id} ${system} ${client}`, cell.counts, cell.sent);
    for (const system of ['gateway', 'gateway-strict'] as const) {
      for (const phase of results.capacity[system]!.phases)
        check(`row 14 ${system}`, phase.cell.counts, phase.cell.sent);
      check(`row 15 ${system}`, results.reload[system]!.cell.counts, results.reload[system]!.cell.sent);
      const drain = results.drain[system]!;
      check(`row 16 ${system} open`, drain.inFlight.counts, drain.inFlight.sent);
      check(`row 16 ${system} after`, drain.after.counts, drain.after.sent);
      // Every stream open at SIGTERM finishes whole.
      expect(drain.inFlight.counts.completed, `row 16 ${system}`).toBe(drain.inFlight.sent);
      for (const client of ['raw', 'sdk'] as const)
        for (const seen of results.cancel[system]![client].seenMs)
          if (seen === undefined)
            bad.push(`row 17 ${system} ${client}: the provider never heard of the cancellation`);
    }
    expect(bad).toEqual([]);
  }, 180_000);
});
