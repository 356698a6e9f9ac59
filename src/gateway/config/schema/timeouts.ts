/** Upstream timeouts: the config object, its defaults, and how the three levels combine. */
import { z } from 'zod';

/** A day: longer than any generation, short enough that a typo of extra zeros is caught. */
const MAX_TIMEOUT_MS = 86_400_000;

const timeoutField = (what: string) =>
  z
    .int()
    .positive()
    .max(MAX_TIMEOUT_MS, { error: `at most ${MAX_TIMEOUT_MS} ms (a day)` })
    .optional()
    .describe(what);

/**
 * The defaults, chosen for LLM traffic: a connection is made in well under a second or not at all,
 * while a non-streamed generation sends its headers only when it is done, which for a long answer
 * or a reasoning model takes minutes. Headers and the gaps between body bytes therefore default to
 * five minutes (what the HTTP client waited before these settings existed), and a non-streamed
 * attempt as a whole to ten (the OpenAI SDKs' own default). A stream has no total limit unless one
 * is configured: a long stream that keeps producing is healthy.
 */
export const TIMEOUT_DEFAULTS = {
  connect_ms: 10_000,
  headers_ms: 300_000,
  idle_ms: 300_000,
  /** Non-streamed attempts only; a configured `total_ms` applies to streams as well. */
  total_ms: 600_000,
} as const;

export const TimeoutsSchema = z
  .strictObject({
    connect_ms: timeoutField(
      `Until the TCP (and TLS) connection to the provider is made. Default ${TIMEOUT_DEFAULTS.connect_ms}.`,
    ),
    headers_ms: timeoutField(
      `From the request sent to the provider's response headers. A non-streamed response's headers come when its generation is done, so this bounds it. Below 10 s it is timed to the millisecond; longer ones fire up to a second late. Default ${TIMEOUT_DEFAULTS.headers_ms}.`,
    ),
    idle_ms: timeoutField(
      `Longest gap between two reads of the response body after its headers, streamed or not: a stream that stalls for this long is cut. Checked on a clock that ticks about twice a second, so it fires up to a second late. Default ${TIMEOUT_DEFAULTS.idle_ms}.`,
    ),
    total_ms: timeoutField(
      `The whole attempt, from its start (connecting included) to the response's last byte. Default ${TIMEOUT_DEFAULTS.total_ms} for non-streamed requests and none for streams; a configured value applies to both.`,
    ),
  })
  .meta({
    id: 'Timeouts',
    title: 'Upstream timeouts',
    description:
      'Timeouts of a request to a provider, in milliseconds. Set at the top level (defaults for every target), on a target, and on a pool provider entry; each level overrides the one above field by field. Before the response is committed to the client a timeout fails the attempt (the pool fails over as on a connection error; with no provider left the client gets 504 `upstream_timeout`); after it, the response is cut.',
  });

export type TimeoutsConfig = z.output<typeof TimeoutsSchema>;

/** The timeouts of one provider, resolved from its three levels. */
export interface ResolvedTimeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  readonly idleMs: number;
  /** The whole attempt of a non-streamed request. */
  readonly totalMs: number;
  /** The whole attempt of a streamed request: only a configured `total_ms`. */
  readonly streamTotalMs: number | undefined;
}

/** Field by field, the most specific level that sets it: provider entry, then target, then root. */
export function resolveTimeouts(...levels: readonly (TimeoutsConfig | undefined)[]): ResolvedTimeouts {
  const pick = <K extends keyof TimeoutsConfig>(field: K): number | undefined => {
    for (const level of levels) {
      const value = level?.[field];
      if (value !== undefined) return value;
    }
    return undefined;
  };
  const total = pick('total_ms');
  return {
    connectMs: pick('connect_ms') ?? TIMEOUT_DEFAULTS.connect_ms,
    headersMs: pick('headers_ms') ?? TIMEOUT_DEFAULTS.headers_ms,
    idleMs: pick('idle_ms') ?? TIMEOUT_DEFAULTS.idle_ms,
    totalMs: total ?? TIMEOUT_DEFAULTS.total_ms,
    streamTotalMs: total,
  };
}
