-- rwmutex_rlock.lua: take a read hold of an RWMutex (see rwmutex_lib.lua
-- for the keys), or register as a reader waiting behind a writer. It is
-- also the waiting script of RLock with WaitForRelease (internal/handoff's
-- contract, as obtain.lua's, the RWMutex's lock keys being W and R).
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- KEYS[9]     the fence counter; present only when ARGV[4] is "1".
-- Then, only when ARGV[6] is given (a waiter), with f = 8 or 9:
-- KEYS[f+1..f+4]  WQ, RQ, WA, RA again (as the handoff engine passes them).
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1).
-- ARGV[4]     "1" when KEYS[9] is given.
-- ARGV[5]     how long (ms) a polling reader's registration lasts; "0": do
--             not register (the caller will not retry).
-- ARGV[6]     optional: the waiter id (WaitForRelease); it registers in RQ
--             under that id instead of the token.
-- ARGV[7]     how long (ms) the waiter's registration lasts.
-- ARGV[8]     "1" for the waiter's first attempt, "0" for a later one.
--
-- A reader enters when W is not set and either no writer waits (no live
-- registration in Q or WQ), or it is admitted (its registration in RQ is
-- negative and live: it waited behind the last writer), or it holds a
-- read already (re-entrant: the hold is renewed). Otherwise it is registered in
-- RQ, keeping an admitted registration admitted.
--
-- Reply, when the hold is taken: an integer >= 0, the fence token (the
-- counter's value: the token of the last write acquisition; 0 without a
-- counter). When not: without a waiter, an integer, -1 when no expiry is
-- known (writers wait, or W is a reservation), else -(ms + 1) with ms the
-- time until W expires; with a waiter,
-- {code, 2, 0}, code as above. The error "ERR redislock: rw token holds the write
-- lock" when the token holds W (nothing changed).
local token, meta, ttl, reg = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local W, R, H, Q, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7]
local fenced = ARGV[4] == "1"
local waiter = ARGV[6]
local now = rw_now()
local id = waiter or token
local s = redis.call("ZSCORE", RQ, id)
local admitted = s and tonumber(s) < -now
local v = redis.call("GET", W)
local blocked = false
if v then
  if owns(v, owner(token)) then
    return rw_writer_token()
  end
  blocked = true
elseif not admitted and not rw_alive(R, token, now) and (rw_live(Q, now) > 0 or rw_writers(WA, now) > 0) then
  blocked = true
end
if blocked then
  -- A reservation is taken by its writer, whose release wakes the
  -- readers: no expiry to wait for. (Its taker may have died: the readers
  -- then attempt when their block ends.)
  local code = -1
  if v and not string.match(v, "^%d+:~") then code = rw_code(redis.call("PTTL", W)) end
  if waiter then
    rw_register(RQ, waiter, now, ARGV[7], admitted)
    return {code, 2, 0}
  end
  if reg ~= "0" then rw_register(RQ, token, now, reg, admitted) end
  return code
end

local fence = 0
if fenced then
  fence = rw_counter(KEYS[9])
  if not fence then
    return rw_bad_counter(KEYS[9])
  end
end
rw_prune(R, H, now)
redis.call("ZADD", R, rw_ms(now + tonumber(ttl)), token)
redis.call("HSET", H, token, rw_ms(fence) .. ":" .. meta)
rw_extend(R, ttl)
rw_extend(H, ttl)
if s then redis.call("ZREM", RQ, id) end
return fence
