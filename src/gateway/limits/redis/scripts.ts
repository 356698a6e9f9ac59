/**
 * The Lua scripts behind the shared limiters. Each runs atomically on the Redis server, so a
 * check-and-take is one step for every replica: no replica can read a count another is about to
 * change. Time comes from the server (`TIME`), never from a replica, so replicas with skewed clocks
 * still agree on refill and lease expiry. Since Redis 5 scripts replicate their effects, so a
 * script that reads `TIME` and then writes is allowed (the gateway needs Redis 5 or later).
 */

/**
 * Token bucket: KEYS[1] a hash {tokens, ts (microseconds)}; ARGV capacity, refill per second, key
 * TTL in ms. Returns 1 when a token was taken, 0 when the bucket is empty.
 *
 * A missing key is a full bucket, so the key only has to live until the bucket would be full again
 * (the TTL the caller computes): idle buckets cost no memory. Parameters come with every call
 * rather than being part of the key, so a reload that changes them keeps the current level
 * (clamped to the new capacity), as the in-memory bucket does: a reload never hands out a fresh
 * burst. A server clock that stepped backwards refills nothing and restarts from the new time
 * instead of freezing the bucket until the clock catches up. The 1e-9 slack is the in-memory
 * bucket's: exact refill intervals must not be refused by floating-point rounding.
 */
export const TAKE_TOKEN = `
local capacity = tonumber(ARGV[1])
local per_us = tonumber(ARGV[2]) / 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
elseif now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * per_us)
else
  tokens = math.min(capacity, tokens)
end
local taken = 0
if tokens + 1e-9 >= 1 then
  tokens = math.max(0, tokens - 1)
  taken = 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', now))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return taken
`;

/**
 * Counting slot with a lease: KEYS[1] a sorted set, member = lease id, score = lease expiry (server
 * ms); ARGV limit, lease id, lease ms. Purges expired leases (a replica that died gives its slots
 * back this way), counts the rest and adds the new lease when the count is below the limit. Returns
 * 1 for a grant, 0 for a refusal. The key expires with its newest lease, so an idle limiter leaves
 * nothing behind. The limit comes with every call (not in the key) so that a reload changing it
 * still counts the requests admitted before, like the in-memory limiters' predecessor link.
 */
export const ACQUIRE_SLOT = `
local lease = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`;

/**
 * Lease renewal: KEYS[1] a slot set; ARGV lease ms, then the lease ids this replica still holds on
 * it. Every id gets a fresh expiry, and it is added back when missing: a held lease is a request
 * really in flight, so after a Redis restart (or a lapse longer than the lease) renewal puts the
 * replica's requests back into the count instead of leaving the limit blind to them until they end.
 */
export const RENEW_SLOTS = `
local lease = tonumber(ARGV[1])
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], lease)
return #ARGV - 1
`;
