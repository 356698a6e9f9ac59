import { performance } from 'node:perf_hooks';
import { request, type Dispatcher } from 'undici';

export interface TurnResult {
  ok: boolean;
  /** Request sent to first content token, in milliseconds (NaN when none came). */
  ttftMs: number;
  totalMs: number;
  /** The answer's text, to be carried as the next turn's assistant message. */
  content: string;
  /** What went wrong, for the failure count's first examples. */
  error?: string;
}

interface ChunkShape {
  choices?: { delta?: { content?: string } }[];
}

/**
 * One streamed chat completion. It succeeds only with a 200 and the `[DONE]` frame at the end: a
 * stream cut short is a failure, never a short answer.
 */
export async function streamChat(dispatcher: Dispatcher, origin: string, body: string): Promise<TurnResult> {
  const started = performance.now();
  let ttftMs = Number.NaN;
  let content = '';
  try {
    const response = await request(`${origin}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (response.statusCode !== 200) {
      const text = await response.body.text();
      return {
        ok: false,
        ttftMs,
        totalMs: performance.now() - started,
        content,
        error: `${response.statusCode} ${text.slice(0, 200)}`,
      };
    }
    let pending = '';
    let done = false;
    for await (const piece of response.body) {
      pending += (piece as Buffer).toString('utf8');
      let end: number;
      while ((end = pending.indexOf('\n\n')) !== -1) {
        const frame = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (!frame.startsWith('data: ')) continue;
        const data = frame.slice(6);
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const delta = (JSON.parse(data) as ChunkShape).choices?.[0]?.delta?.content;
        if (delta) {
          if (Number.isNaN(ttftMs)) ttftMs = performance.now() - started;
          content += delta;
        }
      }
    }
    const totalMs = performance.now() - started;
    return done
      ? { ok: true, ttftMs, totalMs, content }
      : { ok: false, ttftMs, totalMs, content, error: 'stream ended without [DONE]' };
  } catch (error) {
    return {
      ok: false,
      ttftMs,
      totalMs: performance.now() - started,
      content,
      error: (error as Error).message,
    };
  }
}
