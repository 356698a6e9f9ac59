import { z } from 'zod';
import { opt } from './schema-helpers.js';

/**
 * Strict-mode schema of `POST /v1/embeddings` (`EmbeddingCreateParams` of the reference SDK). Unknown
 * fields, including engine extensions such as `truncate_prompt_tokens`, are schema mismatches: the
 * unsupported-parameter catalog covers chat completions only (spec 4.7), so on this endpoint there
 * is no later stage that could observe them.
 */
export const EmbeddingsRequestSchema = z.strictObject({
  input: z.union([z.string(), z.array(z.string()), z.array(z.number()), z.array(z.array(z.number()))]),
  model: z.string(),
  dimensions: opt(z.int()),
  encoding_format: opt(z.enum(['float', 'base64'])),
  user: opt(z.string()),
});

export type EmbeddingsRequest = z.output<typeof EmbeddingsRequestSchema>;
