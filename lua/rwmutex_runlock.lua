-- rwmutex_runlock.lua: release a read hold of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- ARGV[1]     the token.
--
-- The hold is removed. When it was the last live one and no admitted
-- reader is still to enter, the writer that has waited longest with
-- WaitForRelease is handed the lock: W becomes a reservation for it
-- (handover.lua).
--
-- Reply, an integer: 1 the hold was live and is released; 0 it had expired
-- or was not there (any trace of it is removed all the same).
local W, R, H, Q, WQ, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local token = ARGV[1]
local now = rw_now()
local live = rw_alive(R, token, now)
redis.call("ZREM", R, token)
redis.call("HDEL", H, token)
if rw_live(R, now) == 0 then
  rw_next(W, R, Q, WQ, RQ, WA, now, false)
end
if live then return 1 end
return 0
