import { setTimeout as sleep } from 'node:timers/promises';
import { deltas, scrape, sumOf, waitFor, waitSimIdle, type Exchange, type Series } from './support.js';

/**
 * What the fault matrices (chat and Messages) read around each cell: the gateway's attempt and
 * error metrics in words, how the response ended in words, and whether the request is over
 * everywhere (in-flight gauge and simulator) before the next cell.
 */

export const ENDINGS: Record<Exchange['end'], string> = {
  clean: 'clean end',
  transport_error: 'transport error',
  gave_up: 'client gave up (stalled)',
  no_response: 'connection failed',
};

/** The provider label of a URL target is its URL: the simulator. */
function providerName(label: string | undefined): string {
  if (label === undefined) return '?';
  return label.startsWith('http') ? 'sim' : label;
}

/** `gateway_upstream_attempts_total` increments of one model, `provider: outcome` in order. */
export function attemptsText(before: Series, after: Series, model: string): string {
  const list = deltas(before, after, 'gateway_upstream_attempts_total')
    .filter((d) => d.labels.model === model)
    .map((d) => ({
      provider: providerName(d.labels.provider),
      outcome: d.labels.outcome ?? '?',
      n: d.delta,
    }));
  // Order of attempts: the first provider before the backup; a committed attempt is always the last.
  list.sort((a, b) => Number(a.outcome === 'committed') - Number(b.outcome === 'committed'));
  return list.map((a) => `${a.provider}: ${a.outcome}${a.n > 1 ? ` x${a.n}` : ''}`).join('; ') || '-';
}

/** `gateway_upstream_errors_total` increments of one model by reason, or `-`. */
export function errorsText(before: Series, after: Series, model: string): string {
  const list = deltas(before, after, 'gateway_upstream_errors_total').filter((d) => d.labels.model === model);
  return list.map((d) => `${d.labels.reason} x${d.delta}`).join(', ') || '-';
}

export interface Settled {
  /** The model's in-flight gauge returned to 0. */
  gaugeZero: boolean;
  /** The simulator has nothing running or waiting: the upstream request finished or was aborted. */
  upstreamIdle: boolean;
  /** The gateway's metrics once the request is over. */
  after: Series;
}

/** Waits until a cell's request is over in the gateway and the simulator, then scrapes the metrics. */
export async function settle(adminUrl: string, simUrl: string, model: string): Promise<Settled> {
  const gaugeZero = await waitFor('the in-flight gauge to return to 0', async () =>
    sumOf(await scrape(adminUrl), 'gateway_model_inflight', { model }) === 0 ? true : undefined,
  ).catch(() => false);
  const upstreamIdle = await waitSimIdle(simUrl).then(
    () => true,
    () => false,
  );
  await sleep(100);
  return { gaugeZero, upstreamIdle, after: await scrape(adminUrl) };
}
