import { Pool } from 'undici';
import { streamOnce } from '../drivers/streaming.ts';
import { ANSWER_TEXT } from './payloads.ts';
import { median } from './stats.ts';
import { surfaceOf, type Target } from './target.ts';

export interface PassThrough {
  /** What went wrong; undefined when the request and the stream both came through as sent. */
  problem: string | undefined;
  /** One line on what was seen, for the log. */
  summary: string;
  /** The stream's time to first byte and its event gaps, ms. */
  ttfb: number;
  gaps: number[];
}

/**
 * Sends one completion and one paced stream (`chunks` chunks, one every `intervalMs`) through a
 * target, in its surface's API. The completion must carry the upstream's answer (a proxy may
 * re-serialize or translate the rest); the stream must arrive whole and tick by tick: the upstream
 * writes on `chunks` ticks after the first, and a proxy that buffers would deliver the events
 * together at the end, with gaps near zero, so at least half of those ticks must reach the client
 * at least half the pacing interval after the events before them. Ticks, not events: one tick may
 * carry several events (a Messages stream's first and last do), and a translating proxy may regroup
 * them, or hold the first until the first token.
 */
export async function checkPassThrough(target: Target, chunks = 5, intervalMs = 100): Promise<PassThrough> {
  const pool = new Pool(target.origin, { connections: 2 });
  const surface = surfaceOf(target);
  try {
    const response = await pool.request({
      path: surface.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...surface.headers, ...target.headers },
      body: surface.body,
    });
    const text = await response.body.text();
    const problems: string[] = [];
    if (response.statusCode !== 200)
      problems.push(`the completion answered ${response.statusCode}: ${text.slice(0, 200)}`);
    else if (surface.answerText(text) !== ANSWER_TEXT)
      problems.push(`the completion arrived without the upstream's message: ${text.slice(0, 200)}`);

    const stream = await streamOnce(pool, target, { chunks, intervalMs, recordGaps: true });
    const expected = surface.eventsPerStream(chunks);
    const gap = median(stream.gaps);
    const apart = stream.gaps.filter((g) => g >= intervalMs / 2).length;
    if (!stream.complete)
      problems.push(
        `the stream was not complete (status ${stream.status}, ${stream.events} of ${expected} events)`,
      );
    else if (apart < chunks / 2)
      problems.push(
        `the stream's events came together (${apart} of ${chunks} ticks apart, median gap ${gap.toFixed(1)} ms, paced ${intervalMs} ms): buffered`,
      );
    return {
      problem: problems.length ? problems.join('; ') : undefined,
      summary:
        `completion ${response.statusCode}; stream ${stream.events}/${expected} events, ` +
        `first byte ${stream.ttfb.toFixed(1)} ms, ${apart} of ${chunks} ticks apart, median gap ` +
        `${gap.toFixed(1)} ms (paced ${intervalMs} ms)`,
      ttfb: stream.ttfb,
      gaps: stream.gaps,
    };
  } finally {
    await pool.close();
  }
}
