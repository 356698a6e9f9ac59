import type { LatencyConfig } from '../config/schema.js';

/** What one engine step does; its simulated duration follows from it. */
export interface StepWork {
  /** Requests admitted at the start of this step (their prefill produces their first token). */
  prefillSeqs: number;
  prefillTokens: number;
  /** Sequences past prefill that decode one token in this step. */
  decodeSeqs: number;
}

/**
 * Simulated step duration in milliseconds. Prefill and decode share a step as in vLLM's chunked
 * prefill, so a burst of arrivals also slows the tokens of requests already running, and the decode
 * cost grows with the batch.
 */
export function stepDurationMs(latency: LatencyConfig, work: StepWork): number {
  let ms = 0;
  if (work.prefillSeqs > 0) ms += latency.prefill_ms + latency.prefill_per_token_ms * work.prefillTokens;
  if (work.decodeSeqs > 0) ms += latency.decode_ms + latency.decode_per_seq_ms * work.decodeSeqs;
  return ms;
}
