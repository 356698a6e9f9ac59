import { Pool } from 'undici';
import { streamOnce } from '../drivers/streaming.ts';
import { ALIAS, CHAT_COMPLETION, CHAT_PATH, chatRequestBody, eventsPerStream } from './payloads.ts';
import { median } from './stats.ts';
import type { Target } from './target.ts';

/** The assistant message of a chat completion (a proxy may re-serialize the rest). */
function contentOf(json: string): unknown {
  try {
    return (JSON.parse(json) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message
      ?.content;
  } catch {
    return undefined;
  }
}

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
 * Sends one chat completion and one paced stream (`chunks` events, one every `intervalMs`) through
 * a target. The completion must arrive as the upstream wrote it; the stream must arrive whole and
 * event by event: a proxy that buffers would deliver the events together at the end, with gaps
 * near zero, so the median gap must be at least half the pacing interval.
 */
export async function checkPassThrough(target: Target, chunks = 5, intervalMs = 100): Promise<PassThrough> {
  const pool = new Pool(target.origin, { connections: 2 });
  try {
    const response = await pool.request({
      path: CHAT_PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...target.headers },
      body: chatRequestBody(ALIAS, false),
    });
    const text = await response.body.text();
    const problems: string[] = [];
    if (response.statusCode !== 200)
      problems.push(`the completion answered ${response.statusCode}: ${text.slice(0, 200)}`);
    else if (contentOf(text) !== contentOf(CHAT_COMPLETION))
      problems.push(`the completion arrived without the upstream's message: ${text.slice(0, 200)}`);

    const stream = await streamOnce(pool, target, { chunks, intervalMs, recordGaps: true });
    const expected = eventsPerStream(chunks);
    const gap = median(stream.gaps);
    if (!stream.complete)
      problems.push(
        `the stream was not complete (status ${stream.status}, ${stream.events} of ${expected} events)`,
      );
    else if (!(gap >= intervalMs / 2))
      problems.push(
        `the stream's events came together (median gap ${gap.toFixed(1)} ms, paced ${intervalMs} ms): buffered`,
      );
    return {
      problem: problems.length ? problems.join('; ') : undefined,
      summary:
        `completion ${response.statusCode}; stream ${stream.events}/${expected} events, ` +
        `first byte ${stream.ttfb.toFixed(1)} ms, median gap ${gap.toFixed(1)} ms (paced ${intervalMs} ms)`,
      ttfb: stream.ttfb,
      gaps: stream.gaps,
    };
  } finally {
    await pool.close();
  }
}
