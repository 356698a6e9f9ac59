/**
 * The Lua scripts behind the shared limiters. Each runs atomically on the Redis server, so a
 * check-and-take is one step for every replica: no replica can read a count another is about to
 * change. Time comes from the server (`TIME`), never from a replica, so replicas with skewed clocks
 * still agree on refill and lease expiry. Since Redis 5 scripts replicate their effects, so a
 * script that reads `TIME` and then writes is allowed (the gateway needs Redis 5 or later).
 */

/**
 * Admission: the shared decisions of one request, in the pipeline's order, in one round trip.
 * KEYS: one key per step. ARGV[1]: lease ms; then four values per step:
 *
 * - token bucket: `t`, capacity, refill per second, key TTL in ms. KEYS[i] is a hash
 *   {tokens, ts (server microseconds)}.
 * - counting slot: `s`, limit, lease id, unused. KEYS[i] is a sorted set, member = lease id,
 *   score = lease expiry (server ms).
 * - token budget: `k`, capacity, refill per second, unused. KEYS[i] is a hash like a bucket's; the
 *   step only reads it: it grants while the refilled balance is above zero and takes nothing (the
 *   tokens are charged after the response, by `CHARGE_TOKENS`).
 *
 * Steps are taken in order and the script takes nothing after the first refusal, exactly as asking
 * the limiters one by one would (a refusal spends nothing further; what earlier steps took stays
 * taken, and the caller releases it with the request). Returns how many steps were granted (all of
 * them, or the index of the refusing step); when a token budget refused, the whole seconds until its
 * balance is above zero (else 0); then the level of every bucket and budget step in order, as
 * strings (Redis would truncate a Lua number to an integer): after this request's take for a bucket
 * that granted, read only for the steps after a refusal. The levels feed the `x-ratelimit-*`
 * response headers.
 *
 * Token bucket: a missing key is a full bucket, so the key only has to live until the bucket would
 * be full again (the TTL the caller computes): idle buckets cost no memory. A server clock that
 * stepped backwards refills nothing and restarts from the new time instead of freezing the bucket
 * until the clock catches up. The 1e-9 slack is the in-memory bucket's: exact refill intervals must
 * not be refused by floating-point rounding.
 *
 * Slot: expired leases are purged first (a replica that died gives its slots back this way), the
 * rest counted, and the new lease added below the limit. The key expires with its newest lease, so
 * an idle limiter leaves nothing behind.
 *
 * Parameters come with every call rather than being part of the keys, so a reload that changes them
 * keeps the bucket level (clamped to the new capacity; a reload never hands out a fresh burst) and
 * still counts the slots held, as the in-memory limiters do.
 */
/**
 * A bucket's or a budget's level now: a hash `{tokens, ts}` refilled at `per_second` (server time)
 * up to `capacity`; a missing key is full. Shared by the scripts that read or write one.
 */
const LEVEL = `
local function level(key, capacity, per_second, now_us)
  local state = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(state[1])
  local ts = tonumber(state[2])
  if tokens == nil or ts == nil then
    return capacity
  elseif now_us > ts then
    return math.min(capacity, tokens + (now_us - ts) * (per_second / 1000000))
  end
  return math.min(capacity, tokens)
end
`;

export const ADMIT = `${LEVEL}
local lease = tonumber(ARGV[1])
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
local granted = #KEYS
local wait = 0
local levels = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local base = 2 + (i - 1) * 4
  local kind = ARGV[base]
  if kind == 'k' then
    local per_second = tonumber(ARGV[base + 2])
    local tokens = level(key, tonumber(ARGV[base + 1]), per_second, now_us)
    levels[#levels + 1] = string.format('%.17g', tokens)
    if granted == #KEYS and tokens <= 0 then
      granted = i - 1
      wait = math.max(1, math.ceil((1e-9 - tokens) / per_second))
    end
  elseif granted < #KEYS then
    if kind == 't' then
      local tokens = level(key, tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2]), now_us)
      levels[#levels + 1] = string.format('%.17g', tokens)
    end
  elseif kind == 't' then
    local tokens = level(key, tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2]), now_us)
    local taken = tokens + 1e-9 >= 1
    if taken then
      tokens = math.max(0, tokens - 1)
    else
      granted = i - 1
    end
    redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', now_us))
    redis.call('PEXPIRE', key, ARGV[base + 3])
    levels[#levels + 1] = string.format('%.17g', tokens)
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms)
    if redis.call('ZCARD', key) >= tonumber(ARGV[base + 1]) then
      granted = i - 1
    else
      redis.call('ZADD', key, now_ms + lease, ARGV[base + 2])
      redis.call('PEXPIRE', key, lease)
    end
  end
end
return {granted, wait, unpack(levels)}
`;

/**
 * Token charge: KEYS token budgets; ARGV three values per key: capacity, refill per second, tokens.
 * Each budget is refilled to now (server time) and charged; the balance may go below zero. The key
 * lives until the budget would be full again, plus a second, as a bucket's does.
 */
export const CHARGE_TOKENS = `${LEVEL}
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #KEYS do
  local key = KEYS[i]
  local base = (i - 1) * 3 + 1
  local capacity = tonumber(ARGV[base])
  local per_second = tonumber(ARGV[base + 1])
  local tokens = level(key, capacity, per_second, now_us) - tonumber(ARGV[base + 2])
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', now_us))
  redis.call('PEXPIRE', key, math.ceil((capacity - tokens) / per_second * 1000) + 1000)
end
return #KEYS
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

/**
 * Release: KEYS slot sets, ARGV the lease id to remove from each (pairwise). The slots a request
 * held are given back together in one call when it ends.
 */
export const RELEASE_SLOTS = `
for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[i])
end
return #KEYS
`;
