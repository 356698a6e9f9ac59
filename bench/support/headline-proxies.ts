/**
 * Which proxies the headline run (`node bench/run.ts --headline`) measures, by the names
 * `--proxies` takes.
 */

export const HEADLINE_PROXIES = [
  'floor',
  'nginx',
  'portkey',
  'plain',
  'strict',
  'messages',
  'messages-translated',
] as const;
export type HeadlineProxy = (typeof HEADLINE_PROXIES)[number];

/** The gateway rows on Anthropic's Messages API: passed through, and translated to chat completions. */
export const MESSAGES_PROXIES: readonly HeadlineProxy[] = ['messages', 'messages-translated'];

/**
 * Measured without `--proxies`: every row, the Messages rows and the references they bring (direct
 * and the floor sending the same Messages request) included.
 */
export const DEFAULT_HEADLINE_PROXIES: readonly HeadlineProxy[] = HEADLINE_PROXIES;

/** The proxies named by `--proxies` (all of the default set when it is absent); throws on an unknown name. */
export function selectHeadlineProxies(names: readonly string[] | undefined): Set<HeadlineProxy> {
  if (names === undefined) return new Set(DEFAULT_HEADLINE_PROXIES);
  const known: readonly string[] = HEADLINE_PROXIES;
  for (const name of names) {
    if (!known.includes(name))
      throw new Error(`--proxies: unknown proxy ${name} (${HEADLINE_PROXIES.join(', ')})`);
  }
  return new Set(names as HeadlineProxy[]);
}

/**
 * Whether a proxy is measured on an API surface: a selected proxy on its own surface; the floor on
 * the Messages API too when a Messages row is selected, as that row's reference.
 */
export function isMeasured(
  selected: ReadonlySet<HeadlineProxy>,
  proxy: HeadlineProxy,
  surface: 'chat' | 'messages',
): boolean {
  if (!selected.has(proxy)) return false;
  if (proxy !== 'floor' || surface === 'chat') return true;
  return MESSAGES_PROXIES.some((row) => selected.has(row));
}
