-- rwmutex_rlock.lua: take a read hold of an RWMutex (see rwmutex_lib.lua
-- for the keys), or register as a reader waiting behind a writer.
--
-- KEYS[1..6]  W, R, H, Q, P, A.
-- KEYS[7]     the fence counter; present only when ARGV[4] is "1".
-- ARGV[1]     the token.
-- ARGV[2]     the metadata.
-- ARGV[3]     the TTL in milliseconds (>= 1).
-- ARGV[4]     "1" when KEYS[7] is given.
-- ARGV[5]     how long (ms) a registration as a waiting reader lasts; "0":
--             do not register (the caller will not retry).
--
-- A reader enters when no writer holds W and either no writer is waiting
-- (no live member of Q), or it was admitted (a live member of A: it waited
-- behind the last writer), or it holds a read already (re-entrant: the hold
-- is renewed). Otherwise it is registered in A (when admitted) or P.
--
-- Reply, an integer:
--   >= 0  obtained; the fence token: the counter's value, which is the token
--         of the last write acquisition (0 without a counter).
--   -1    not obtained; a writer holds the lock or is waiting.
--   -2    not obtained; the token holds the write lock.
local token, meta, ttl, reg = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local W, R, H, Q, P, A = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now = rw_now()
local v = redis.call("GET", W)
local admitted = rw_alive(A, token, now)
local blocked = false
if v then
  if owns(v, owner(token)) then return -2 end
  blocked = true
elseif not admitted and not rw_alive(R, token, now) and rw_live(Q, now) > 0 then
  blocked = true
end
if blocked then
  if reg ~= "0" then
    if admitted then rw_register(A, token, now, reg) else rw_register(P, token, now, reg) end
  end
  return -1
end

local fence = 0
if ARGV[4] == "1" then
  fence = rw_counter(KEYS[7])
  if not fence then return rw_bad_counter(KEYS[7]) end
end
rw_prune(R, H, now)
redis.call("ZADD", R, rw_ms(now + tonumber(ttl)), token)
redis.call("HSET", H, token, rw_ms(fence) .. ":" .. meta)
rw_extend(R, ttl)
rw_extend(H, ttl)
redis.call("ZREM", P, token)
redis.call("ZREM", A, token)
return fence
