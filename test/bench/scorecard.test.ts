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
    const rows = results.faults.map((row) => row.id);
    expect(rows).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '12b', '13', '13b']);
    const bad: string[] = [];
    const check = (where: string, counts: { silent: number; hung: number }, sent: number) => {
      if (sent === 0) bad.push(`${where}: nothing sent`);
      if (counts.silent > 0) bad.push(`${where}: ${counts.silent} silent`);
      if (counts.hung > 0) bad.push(`${where}: ${counts.hung} hung`);
    };
    // Before the first byte the gateway fails over to the healthy provider; after it, it can only
    // make the failure visible. A row that shows neither is a broken run, not a pass.
    const failsOver = new Set(['1', '2', '3', '4', '5', '6', '12', '12b']);
    for (const row of results.faults)
      for (const [system, byClient] of Object.entries(row.cells))
        for (const [client, cell] of Object.entries(byClient)) {
          const where = `row ${row.id} ${system} ${client}`;
          check(where, cell.counts, cell.sent);
          const expected = failsOver.has(row.id) ? 'completed' : 'visible';
          if (cell.counts[expected] !== cell.sent)
            bad.push(`${where}: ${JSON.stringify(cell.counts)}, expected all ${expected}`);
        }
    for (const system of ['gateway', 'gateway-strict'] as const) {
      for (const phase of results.capacity[system]!.phases) {
        check(`row 14 ${system}`, phase.cell.counts, phase.cell.sent);
        if (phase.cell.counts.completed === 0) bad.push(`row 14 ${system}: nothing completed`);
      }
      const reload = results.reload[system]!;
      check(`row 15 ${system}`, reload.cell.counts, reload.cell.sent);
      if (reload.reloads === 0) bad.push(`row 15 ${system}: no reload happened`);
      const drain = results.drain[system]!;
      check(`row 16 ${system} open`, drain.inFlight.counts, drain.inFlight.sent);
      check(`row 16 ${system} after`, drain.after.counts, drain.after.sent);
      // Every stream open at SIGTERM finishes whole.
      if (drain.inFlight.counts.completed !== drain.inFlight.sent)
        bad.push(`row 16 ${system}: an open stream did not finish`);
      for (const client of ['raw', 'sdk'] as const)
        if (results.cancel[system]![client].seenMs.includes(undefined))
          bad.push(`row 17 ${system} ${client}: the provider never heard of the cancellation`);
    }
    expect(bad).toEqual([]);
  }, 180_000);
});
