import { z } from 'zod';
import { FAULT_DEFAULTS, FAULT_MODES, U32_MAX } from '../faults/modes.js';

/**
 * One model file. Every table is strict: an unknown key is a startup error, because a misspelled
 * latency knob silently falling back to its default would make every measurement wrong.
 */
export const latencySchema = z.strictObject({
  /** Fixed cost of an engine step that prefills at least one request (base time to first token). */
  prefill_ms: z.number().nonnegative().default(30),
  /** Added to that step per prompt token prefilled in it. */
  prefill_per_token_ms: z.number().nonnegative().default(0.02),
  /** Fixed cost of a decode step (inter-token latency of a lone request). */
  decode_ms: z.number().nonnegative().default(10),
  /** Added to every decode step per running sequence: inter-token latency grows with the batch. */
  decode_per_seq_ms: z.number().nonnegative().default(0.1),
});

export const schedulerSchema = z.strictObject({
  max_num_seqs: z.int().min(1, 'max_num_seqs must be at least 1').max(U32_MAX).default(256),
  max_waiting: z.int().min(0).max(U32_MAX).default(0),
});

/** vLLM's automatic prefix caching (off unless `capacity_tokens` is set). */
export const prefixCacheSchema = z.strictObject({
  /** Tokens per cached block (vLLM's block size). */
  block_tokens: z.int().min(1).max(U32_MAX).default(16),
  /** Tokens the cache holds; 0 turns it off. Least recently used blocks are evicted. */
  capacity_tokens: z.int().min(0).max(U32_MAX).default(0),
});

export const faultTableSchema = z.strictObject({
  mode: z.enum(FAULT_MODES),
  after_chunks: z.int().min(0).max(U32_MAX).default(FAULT_DEFAULTS.afterChunks),
  delay_ms: z.int().min(0).default(FAULT_DEFAULTS.delayMs),
  utf8: z.boolean().default(FAULT_DEFAULTS.utf8),
});

export const modelFileSchema = z.strictObject({
  name: z.string().min(1),
  /** Length of the model's natural answer; a smaller max_tokens truncates it (finish_reason length). */
  output_tokens: z.int().min(1).max(U32_MAX).default(64),
  latency: latencySchema.prefault({}),
  scheduler: schedulerSchema.prefault({}),
  prefix_cache: prefixCacheSchema.prefault({}),
  fault: faultTableSchema.optional(),
});

export type ModelFile = z.infer<typeof modelFileSchema>;
export type LatencyConfig = z.infer<typeof latencySchema>;
