/**
 * `redis://host:port/db` of a Redis URL, dropping user and password: what logs and error messages
 * may name. Kept apart from the client so option parsing does not load the Redis library.
 */
export function redactedTarget(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(invalid url)';
  }
}
