import { z } from 'zod';
import { opt } from './schema-helpers.js';

/** Shapes the Messages API repeats across content blocks, tools and top-level parameters. */

/** A model name; the gateway routes on it, so it is never empty. */
export const ModelName = z.string().min(1);

/** `cache_control`: a prompt-cache breakpoint on a block, a tool or the whole request. */
export const CacheControl = z.looseObject({
  type: z.literal('ephemeral'),
  ttl: opt(z.enum(['5m', '1h'])),
});

/** `citations` of a document, a search result or the web fetch tool: whether to cite them. */
export const CitationsConfig = z.looseObject({ enabled: opt(z.boolean()) });

/** Effort of the reply, as a request (`output_config`) or a turn (a `system` message) sets it. */
export const Effort = z.enum(['low', 'medium', 'high', 'xhigh', 'max']);
