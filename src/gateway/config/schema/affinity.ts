/** The settings of a `prefix_affinity` pool. */
import { z } from 'zod';

export const AFFINITY_DEFAULTS = {
  load_bound: 1.25,
  table_entries: 65_536,
  block_chars: 256,
  max_blocks: 256,
} as const;

export const AffinitySchema = z
  .strictObject({
    load_bound: z
      .number()
      .min(1, { error: 'must be at least 1 (1: no provider above the average load)' })
      .max(10)
      .default(AFFINITY_DEFAULTS.load_bound)
      .describe(
        "A provider takes a request only while its in-flight attempts stay within this many times the pool's average (rounded up); above it the request spills to the next provider on the ring. Lower spreads load sooner, higher keeps more requests on their cached prefix.",
      ),
    table_entries: z
      .int()
      .min(1)
      .max(10_000_000)
      .default(AFFINITY_DEFAULTS.table_entries)
      .describe(
        'Sessions and conversations remembered with the provider that served them; the least recently used are forgotten first. An entry takes about 100 bytes.',
      ),
    block_chars: z
      .int()
      .min(16)
      .max(65_536)
      .default(AFFINITY_DEFAULTS.block_chars)
      .describe(
        "Characters per hashed block of a prompt's leading content: a conversation is recognised by its full blocks, so a turn shorter than a block is recognised with the next one.",
      ),
    max_blocks: z
      .int()
      .min(1)
      .max(4096)
      .default(AFFINITY_DEFAULTS.max_blocks)
      .describe(
        'Blocks hashed at most per request (`block_chars` x `max_blocks` characters of leading content): bounds the work per request; longer prompts are recognised by their first blocks.',
      ),
  })
  .meta({
    id: 'Affinity',
    title: 'Prefix affinity',
    description:
      "How a `prefix_affinity` pool keeps a session or a conversation on the provider that holds its prompt's prefix in cache, under a bound on the load.",
  });

export type AffinityConfig = z.output<typeof AffinitySchema>;
