import { z } from 'zod';

/**
 * An optional field of the reference API. Absent and `null` both mean "not set": the reference
 * server accepts an explicit null for optional fields, and many client libraries serialize unset
 * options as null, so refusing null would reject requests the reference API serves.
 */
export function opt<T extends z.ZodType>(schema: T): z.ZodOptional<z.ZodNullable<T>> {
  return schema.nullish();
}

/** Free-form JSON objects of the reference API (JSON Schema bodies, tool descriptors, variables). */
export const JsonObject = z.record(z.string(), z.unknown());

/** `metadata`: up to 16 string pairs in the reference; the count is the upstream's to enforce. */
export const Metadata = z.record(z.string(), z.string());

/** Prompt-cache breakpoint on a content part. */
export const PromptCacheBreakpoint = z.strictObject({
  mode: z.literal('explicit'),
  ttl: opt(z.enum(['30m', '12h'])),
});
