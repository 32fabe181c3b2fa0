-- rwmutex_lock.lua: take the write lock of an RWMutex (see rwmutex_lib.lua
-- for the keys), or register as a waiting writer. It is also the waiting
-- script of Lock with WaitForRelease (internal/handoff's contract, as
-- obtain.lua's, the RWMutex's lock keys being W and R).
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- KEYS[9]     the fence counter; present only when ARGV[4] is "1".
-- Then, only when ARGV[6] is given (a waiter), with f = 8 or 9:
-- KEYS[f+1..f+4]  WQ, RQ, WA, RA again (the lines and liveness sets of W
--                 and R, as the handoff engine passes them).
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1).
-- ARGV[4]     "1" when KEYS[9] is given.
-- ARGV[5]     how long (ms) a polling writer's registration in Q lasts;
--             "0": do not register (the caller will not retry).
-- ARGV[6]     optional: the waiter id (WaitForRelease); it registers in WQ.
-- ARGV[7]     how long (ms) the waiter's registration lasts.
-- ARGV[8]     "1" for the waiter's first attempt, "0" for a later one
--             (obtain.lua's ARGV[7]).
--
-- A writer enters when W is free (or reserved for it by a handover), no
-- read hold is live in R and no admitted reader is left in RQ.
-- Otherwise it registers, in Q (polling) or WQ (a waiter), which makes new
-- readers wait (writer preference); W reserved for it that it cannot use
-- goes to the next writer. A waiter that finds the lock free while a live
-- writer that arrived before it waits in WQ hands W to that writer. When it enters, the pending readers of RQ become admitted: they
-- enter right after it. W takes the value of a lock (lib.lua), "<fence>"
-- being "0" without a counter and "<token>/<tag>" with one, as obtain.lua
-- writes it; the same token already holding W renews it and keeps its
-- fence token.
--
-- Reply, when obtained: an integer >= 0, the fence token (0 without a
-- counter), strictly greater than every one issued before from the
-- counter: max(counter + 1, server TIME in microseconds). When not:
-- without a waiter, an integer -(ms + 1), ms being the time until what
-- holds the writer up (W, the last read hold, the last admitted reader)
-- can end; with a waiter, {code, 1, reserved}, reserved 1 when W is a
-- reservation for another writer. The error "ERR redislock: rw
-- upgrade refused" when the token has a live read hold (nothing changed).
local token, meta, ttl, reg = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local W, R, H, Q, WQ, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local fenced = ARGV[4] == "1"
local waiter = ARGV[6]
local later = waiter and ARGV[8] == "0"
local now = rw_now()
local prefix = owner(token)
local tag = nil
if fenced then tag = string.sub(redis.sha1hex(KEYS[9]), 1, 8) end
local v = redis.call("GET", W)
if owns(v, prefix) then
  local field = string.match(v, "^([^:]*):", #prefix + 1)
  local keep = nil
  if not fenced and field == "0" then
    keep = 0
  elseif fenced then
    local fv, t = string.match(field or "", "^(%d+)/(%x+)$")
    if t == tag and fv ~= "0" then keep = tonumber(fv) end
  end
  if keep then
    redis.call("SET", W, prefix .. field .. ":" .. meta, "PX", ttl)
    if later then gone(WQ, WA, waiter) end
    return keep
  end
end

-- W reserved for this waiter counts as free.
local mine = later and v == reserved_for(waiter)
-- A reservation this attempt cannot use goes to the next writer (or, with
-- none, to the readers).
local function pass_on()
  if mine then
    redis.call("DEL", W)
    rw_next(W, R, Q, WQ, RQ, WA, now, true)
  end
end

rw_prune(R, H, now)
if rw_alive(R, token, now) then
  pass_on()
  return rw_upgrade()
end
local code, reserved = nil, 0
if v and not owns(v, prefix) and not mine then
  local other = string.match(v, "^%d+:~(.*):0:$")
  if other then
    code, reserved = rw_code(claim(other)), 1
  else
    code = rw_code(redis.call("PTTL", W))
  end
else
  -- The last read hold to expire, or else the last admitted reader.
  local top = redis.call("ZRANGE", R, -1, -1, "WITHSCORES")
  if top[2] and tonumber(top[2]) > now then
    code = rw_code(tonumber(top[2]) - now)
  else
    local low = redis.call("ZRANGE", RQ, 0, 0, "WITHSCORES")
    if low[2] and tonumber(low[2]) < -now then code = rw_code(-tonumber(low[2]) - now) end
  end
end
if not code and later and not v then
  -- Free: the writer that arrived first goes first.
  local ours = redis.call("ZSCORE", WQ, waiter)
  local first, arrived = oldest(WQ, WA, now)
  if first and first ~= waiter and ahead(arrived, first, ours, waiter) then
    local c = grant(WQ, WA, first, now)
    redis.call("SET", W, reserved_for(first), "PX", c)
    code, reserved = rw_code(c), 1
  end
end
if code then
  if waiter then
    waiting(WQ, WA, waiter, now, tonumber(ARGV[7]))
    pass_on()
    return {code, 1, reserved}
  end
  if reg ~= "0" then rw_register(Q, token, now, reg, false) end
  return code
end

local fence = 0
local field = "0"
if fenced then
  local cur = rw_counter(KEYS[9])
  if not cur then
    pass_on()
    return rw_bad_counter(KEYS[9])
  end
  local t = clock_time()
  fence = math.max(cur + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
  redis.call("SET", KEYS[9], rw_ms(fence))
  field = rw_ms(fence) .. "/" .. tag
end
redis.call("SET", W, prefix .. field .. ":" .. meta, "PX", ttl)
redis.call("ZREM", Q, token)
if later then gone(WQ, WA, waiter) end
rw_admit(RQ, now)
return fence
