/*
 * Preloaded into a gateway under test (`node --import`): names under the reserved `.invalid` TLD
 * (RFC 6761 section 6.4) fail to resolve in the process, with the error getaddrinfo gives for an
 * unknown name, instead of being sent to the machine's nameserver. Every other name resolves as
 * usual. Node's `net` reads `dns.lookup` at connect time, so undici's connections go through this.
 */
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';

type LookupCallback = (error: NodeJS.ErrnoException | null, ...rest: unknown[]) => void;

const original = dns.lookup;

function lookup(this: unknown, hostname: string, options: unknown, callback?: unknown): void {
  const done = (typeof options === 'function' ? options : callback) as LookupCallback;
  if (typeof hostname === 'string' && /\.invalid\.?$/i.test(hostname)) {
    const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    error.code = 'ENOTFOUND';
    error.errno = -3008;
    error.syscall = 'getaddrinfo';
    process.nextTick(done, error);
    return;
  }
  (original as (...args: unknown[]) => void).call(this, hostname, options, callback);
}

(dns as { lookup: unknown }).lookup = lookup;
syncBuiltinESMExports();
