/**
 * The Lua scripts behind spend budgets shared through Redis. Each runs atomically, so replicas that
 * reserve at the same time see each other's reservations, and the time is the server's (`TIME`).
 *
 * A budget is three keys:
 * - its state, a hash: `reserved` (the sum of the live reservations); for a calendar window `w`
 *   (its start, Unix ms) and `spent`; for a rolling window a ring of `ROLLING_SLOTS` slots, `i<r>`
 *   (the slot index held at ring position r) and `c<r>` (its spend);
 * - `:exp`, a sorted set of reservation ids scored by lease expiry (server ms): a replica that dies
 *   gives its reservations back when their leases lapse, since only live replicas renew them;
 * - `:amt`, a hash of reservation id -> amount;
 * - `:done`, a sorted set of the ids already settled (kept 15 minutes; on the request's first budget
 *   only), so a settlement sent again after a timeout, which the server may have run after all, is
 *   charged once.
 *
 * Window arguments, four per budget, from the gateway (which knows time zones; Lua does not):
 * `c`, start, end, next end of the calendar window holding the gateway's now (the server's time
 * picks between that window and the next, so a boundary is crossed on the server's clock); or `r`,
 * the slot length in ms, unused, unused.
 */

const COMMON = `
local slots = 60
local done_ms = 900000

-- The live reservations' sum. Lapsed ones (a replica stopped renewing) are given back; with no
-- reservation left at all (the sets expired with their last lease), nothing is reserved. Writes
-- only to a state that exists, so a read never leaves a key without an expiry behind.
local function purge(state, expiry, amounts, now)
  if redis.call('ZCARD', expiry) == 0 then
    redis.call('HDEL', state, 'reserved')
    return 0
  end
  local reserved = tonumber(redis.call('HGET', state, 'reserved')) or 0
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  if #gone > 0 then
    for _, id in ipairs(gone) do
      reserved = reserved - (tonumber(redis.call('HGET', amounts, id)) or 0)
      redis.call('HDEL', amounts, id)
    end
    redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now)
    if reserved < 1e-12 then reserved = 0 end
    if redis.call('EXISTS', state) == 1 then
      redis.call('HSET', state, 'reserved', string.format('%.17g', reserved))
    end
  end
  return reserved
end

-- Calendar: the window holding now (the next one once the server is past the replica's end), and
-- its spend: zero when the state holds an older window. Reads only.
local function calendar(state, start, finish, next_finish, now)
  if now >= finish then
    start = finish
    finish = next_finish
  end
  local w = tonumber(redis.call('HGET', state, 'w'))
  if w == nil or w < start then return 0, start, finish end
  return tonumber(redis.call('HGET', state, 'spent')) or 0, w, finish
end

-- Rolling: the slots of the window holding now, by index, and their total. Reads only.
local function ring(state, slot_ms, now)
  local cur = math.floor(now / slot_ms)
  local fields = {}
  for r = 0, slots - 1 do
    fields[#fields + 1] = 'i' .. r
    fields[#fields + 1] = 'c' .. r
  end
  local v = redis.call('HMGET', state, unpack(fields))
  local costs = {}
  local spent = 0
  for r = 0, slots - 1 do
    local k = tonumber(v[2 * r + 1])
    local c = tonumber(v[2 * r + 2])
    if k ~= nil and c ~= nil and k > cur - slots and k <= cur then
      costs[k] = c
      spent = spent + c
    end
  end
  return spent, costs, cur
end

-- spent, then what reset and retry need: the window's start and end (calendar), or the slots and
-- the current slot (rolling).
local function window(state, kind, a, b, c, now)
  if kind == 'c' then
    local spent, start, finish = calendar(state, tonumber(a), tonumber(b), tonumber(c), now)
    return spent, start, finish, nil, nil
  end
  local spent, costs, cur = ring(state, tonumber(a), now)
  return spent, nil, nil, costs, cur
end

-- Adds the cost to the window holding now and keeps the state a day past a calendar window's end,
-- or a rolling window's length past its last write.
local function charge(state, kind, a, b, c, now, cost, lease)
  local spent, start, finish = window(state, kind, a, b, c, now)
  local ttl
  if kind == 'c' then
    redis.call('HSET', state, 'w', string.format('%.0f', start), 'spent', string.format('%.17g', spent + cost))
    ttl = math.max(1000, finish - now) + 86400000
  else
    if cost > 0 then
      local cur = math.floor(now / tonumber(a))
      local r = cur % slots
      local held = tonumber(redis.call('HGET', state, 'i' .. r))
      local prior = 0
      if held == cur then prior = tonumber(redis.call('HGET', state, 'c' .. r)) or 0 end
      redis.call('HSET', state, 'i' .. r, string.format('%.0f', cur), 'c' .. r, string.format('%.17g', prior + cost))
    end
    ttl = slots * tonumber(a) + lease
  end
  if redis.call('EXISTS', state) == 1 then redis.call('PEXPIRE', state, ttl) end
end

local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Reservation: KEYS four per budget (state, :exp, :amt, :done); ARGV[1] lease ms, ARGV[2] the
 * reservation id, then six per budget: amount, reservation, and the four window arguments. All or
 * nothing: the first budget without room refuses, and nothing is reserved. Returns the 1-based index
 * of the refusing budget (0: reserved), the ms until it may have room (a second when only other
 * requests' reservations stand in the way; else a calendar window's end, or when enough of a
 * rolling window's oldest charges have left it), then per budget its room after this reservation
 * and the ms until its window starts again, as strings.
 */
export const RESERVE_SPEND = `${COMMON}
local lease = tonumber(ARGV[1])
local id = ARGV[2]
local now = server_ms()
local n = #KEYS / 4
local rooms = {}
local resets = {}
local reserved_of = {}
for i = 1, n do
  local state = KEYS[4 * i - 3]
  local base = 2 + (i - 1) * 6
  local amount = tonumber(ARGV[base + 1])
  local want = tonumber(ARGV[base + 2])
  local kind = ARGV[base + 3]
  local reserved = purge(state, KEYS[4 * i - 2], KEYS[4 * i - 1], now)
  local spent, _, finish, costs, cur = window(state, kind, ARGV[base + 4], ARGV[base + 5], ARGV[base + 6], now)
  local room = amount - spent - reserved
  local reset = 0
  if kind == 'c' then
    reset = finish - now
  else
    local slot_ms = tonumber(ARGV[base + 4])
    for k = cur, cur - slots + 1, -1 do
      if (costs[k] or 0) > 0 then
        reset = (k + slots) * slot_ms - now
        break
      end
    end
  end
  if want > room then
    local retry = 0
    if spent + want <= amount then
      retry = 1000
    elseif kind == 'c' then
      retry = finish - now
    else
      local slot_ms = tonumber(ARGV[base + 4])
      retry = slots * slot_ms
      local needed = want - room
      local freed = 0
      for k = cur - slots + 1, cur do
        freed = freed + (costs[k] or 0)
        if freed >= needed then
          retry = (k + slots) * slot_ms - now
          break
        end
      end
    end
    return {i, string.format('%.0f', retry)}
  end
  rooms[i] = room - want
  resets[i] = reset
  reserved_of[i] = reserved
end
local reply = {0, '0'}
for i = 1, n do
  local state = KEYS[4 * i - 3]
  local expiry = KEYS[4 * i - 2]
  local amounts = KEYS[4 * i - 1]
  local base = 2 + (i - 1) * 6
  local want = tonumber(ARGV[base + 2])
  redis.call('ZADD', expiry, now + lease, id)
  redis.call('HSET', amounts, id, string.format('%.17g', want))
  redis.call('PEXPIRE', expiry, lease)
  redis.call('PEXPIRE', amounts, lease)
  redis.call('HSET', state, 'reserved', string.format('%.17g', reserved_of[i] + want))
  charge(state, ARGV[base + 3], ARGV[base + 4], ARGV[base + 5], ARGV[base + 6], now, 0, lease)
  reply[#reply + 1] = string.format('%.17g', rooms[i])
  reply[#reply + 1] = string.format('%.0f', resets[i])
end
return reply
`;

/**
 * Settlement: KEYS four per budget; ARGV[1] lease ms, ARGV[2] the reservation id, ARGV[3] the cost,
 * then the four window arguments per budget. Each budget gives the reservation back (if it is still
 * there: a lapsed lease gave it back already) and is charged the cost in the window holding the
 * server's now. The first budget's `:done` records the id for 15 minutes (how long the gateway
 * sends a settlement again), so a settlement sent twice is charged once, with one entry per request.
 */
export const SETTLE_SPEND = `${COMMON}
local lease = tonumber(ARGV[1])
local id = ARGV[2]
local cost = tonumber(ARGV[3])
local now = server_ms()
local done = KEYS[4]
redis.call('ZREMRANGEBYSCORE', done, '-inf', now)
if redis.call('ZSCORE', done, id) then return 0 end
for i = 1, #KEYS / 4 do
  local state = KEYS[4 * i - 3]
  local expiry = KEYS[4 * i - 2]
  local amounts = KEYS[4 * i - 1]
  local base = 3 + (i - 1) * 4
  local reserved = purge(state, expiry, amounts, now)
  local held = tonumber(redis.call('HGET', amounts, id))
  charge(state, ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4], now, cost, lease)
  if held ~= nil then
    redis.call('HDEL', amounts, id)
    redis.call('ZREM', expiry, id)
    reserved = reserved - held
    if reserved < 1e-12 then reserved = 0 end
    redis.call('HSET', state, 'reserved', string.format('%.17g', reserved))
  end
end
redis.call('ZADD', done, now + done_ms, id)
redis.call('PEXPIRE', done, done_ms)
return 1
`;

/**
 * Reading for the gauges: KEYS four per budget; ARGV the four window arguments per budget. Returns
 * spent and reserved per budget, as strings (lapsed reservations purged first). Writes nothing but
 * what the purge gives back.
 */
export const READ_SPEND = `${COMMON}
local now = server_ms()
local reply = {}
for i = 1, #KEYS / 4 do
  local state = KEYS[4 * i - 3]
  local base = (i - 1) * 4
  local reserved = purge(state, KEYS[4 * i - 2], KEYS[4 * i - 1], now)
  local spent = window(state, ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4], now)
  reply[#reply + 1] = string.format('%.17g', spent)
  reply[#reply + 1] = string.format('%.17g', reserved)
end
return reply
`;

/**
 * Lease renewal: KEYS[1] a budget's :exp, KEYS[2] its :amt, KEYS[3] its state; ARGV lease ms, then
 * the ids this replica still holds. Only ids still there are renewed: one that lapsed was given back
 * already. The state lives at least as long as the reservations it counts.
 */
export const RENEW_SPEND = `
local lease = tonumber(ARGV[1])
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], lease)
redis.call('PEXPIRE', KEYS[2], lease)
local ttl = redis.call('PTTL', KEYS[3])
if ttl >= 0 and ttl < lease then redis.call('PEXPIRE', KEYS[3], lease) end
return #ARGV - 1
`;
