import { randomBytes } from 'node:crypto';

/** A client's request id is kept when it is 1 to 128 visible ASCII characters; else one is made. */
const CLIENT_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * Made ids have a UUID's shape (version 4, RFC 9562 variant): 74 random bits drawn once per process,
 * then a 48-bit counter. Unique across replicas and restarts without drawing random bytes for
 * every request, which cost more than the rest of the id's handling.
 */
const PROCESS_PART = ((): string => {
  const hex = randomBytes(10).toString('hex');
  const variant = ((parseInt(hex[12]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(16, 19)}-`;
})();
const COUNTER_LIMIT = 2 ** 48;
let counter = 0;

/** The request's id: the client's `x-request-id` when it is acceptable, else a new one. */
export function requestIdFor(header: string | string[] | undefined): string {
  if (typeof header === 'string' && CLIENT_ID.test(header)) return header;
  counter = (counter + 1) % COUNTER_LIMIT;
  return PROCESS_PART + counter.toString(16).padStart(12, '0');
}
