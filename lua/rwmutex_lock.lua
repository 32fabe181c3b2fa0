-- rwmutex_lock.lua: take the write lock of an RWMutex (see
-- rwmutex_lib.lua for the keys), or register as a waiting writer.
--
-- KEYS[1..6]  W, R, H, Q, P, A.
-- KEYS[7]     the fence counter; present only when ARGV[4] is "1".
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1).
-- ARGV[4]     "1" when KEYS[7] is given.
-- ARGV[5]     how long (ms) a registration as a waiting writer lasts; "0":
--             do not register (the caller will not retry).
--
-- A writer enters when W is free, no read hold is live in R and no admitted
-- reader is left in A. Otherwise it registers in Q, which makes new readers
-- wait (writer preference). When it enters, the pending readers P become
-- admitted: they enter right after it. W takes the value of a lock
-- (lib.lua), "<fence>" being "0" without a counter and "<token>/<tag>" with
-- one, as obtain.lua writes it; the same token already holding W renews it
-- and keeps its fence token.
--
-- Reply, an integer:
--   >= 0  obtained; the fence token (0 without a counter), strictly greater
--         than every one issued before from the counter:
--         max(counter + 1, server TIME in microseconds).
--   -1    not obtained; a writer or readers hold the lock, or admitted
--         readers have yet to enter.
--   -2    not obtained; the token has a live read hold (no upgrade).
local token, meta, ttl, reg = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local W, R, H, Q, P, A = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local fenced = ARGV[4] == "1"
local now = rw_now()
local prefix = owner(token)
local tag = nil
if fenced then tag = string.sub(redis.sha1hex(KEYS[7]), 1, 8) end
local v = redis.call("GET", W)
if owns(v, prefix) then
  local field = string.match(v, "^([^:]*):", #prefix + 1)
  local keep = nil
  if not fenced and field == "0" then
    keep = 0
  elseif fenced then
    local f, t = string.match(field or "", "^(%d+)/(%x+)$")
    if t == tag and f ~= "0" then keep = tonumber(f) end
  end
  if keep then
    redis.call("SET", W, prefix .. field .. ":" .. meta, "PX", ttl)
    return keep
  end
end
rw_prune(R, H, now)
if rw_alive(R, token, now) then return -2 end
if (v and not owns(v, prefix)) or rw_live(R, now) > 0 or rw_live(A, now) > 0 then
  if reg ~= "0" then rw_register(Q, token, now, reg) end
  return -1
end

local fence = 0
local field = "0"
if fenced then
  local cur = rw_counter(KEYS[7])
  if not cur then return rw_bad_counter(KEYS[7]) end
  local t = redis.call("TIME")
  fence = math.max(cur + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
  redis.call("SET", KEYS[7], rw_ms(fence))
  field = rw_ms(fence) .. "/" .. tag
end
redis.call("SET", W, prefix .. field .. ":" .. meta, "PX", ttl)
redis.call("ZREM", Q, token)
rw_admit(P, A, now)
return fence
