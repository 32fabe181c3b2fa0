-- semaphore_release.lua: give one permit back; optionally, hand its slot
-- over to the longest waiter (see WaitForRelease).
-- Calls semaphore_lib.lua and handover.lua, which scripts.go prepends.
--
-- KEYS[1]   the semaphore key (sorted set, see semaphore_acquire.lua).
-- KEYS[2]   its permit hash.
-- Then, only when ARGV[2] is given:
-- KEYS[3]   the key's line, KEYS[4] its liveness set (handover.lua).
-- ARGV[1]   the token.
-- ARGV[2]   optional: "1", the slot is handed over (KEYS[3..4] given).
--
-- The token's member and hash field are removed whether the permit was
-- live or had expired (an expired one no longer counts; removing it only
-- prunes it early). No other permit is touched. O(log n). With ARGV[2],
-- the slot of a live permit, and those of members that expired unnoticed
-- (pruned here), go to the longest live waiters: each becomes a
-- reservation for that waiter (semaphore_lib.lua's handOn); with no live
-- waiter the slot is simply free.
--
-- Reply, an integer:
--   1   the permit was live and is released.
--   0   it had expired, or was released before.
-- With ARGV[2], the integer handed * 2 + that integer, handed being how
-- many slots were handed over (one integer: an array reply costs the
-- server more).
local token, reserve = ARGV[1], ARGV[2]
local _, now = clock()
local score = redis.call("ZSCORE", KEYS[1], token)
local ours = 0
if score then
  redis.call("ZREM", KEYS[1], token)
  redis.call("HDEL", KEYS[2], token)
  if tonumber(score) > now then ours = 1 end
end
if not reserve then return ours end
local freed = ours + prune(KEYS[1], KEYS[2], now)
local handed = 0
if freed > 0 then
  handed = handOn(KEYS[1], KEYS[3], KEYS[4], now, freed)
end
return handed * 2 + ours
