-- rwmutex_leave.lua: a reader or writer that waited with WaitForRelease
-- gives up (internal/handoff's leave contract, as leave.lua's, the
-- RWMutex's lock keys being W and R; see rwmutex_lib.lua for the keys).
--
-- KEYS[1..2]  W, R.
-- KEYS[3..4]  WQ, RQ: the lines.
-- KEYS[5..6]  WA, RA: the liveness sets.
-- ARGV[1]     the waiter id.
--
-- The waiter's registrations are removed. When W is reserved for it, the
-- reservation is dropped. Then, if the lock is free, whoever it held up
-- goes next (rw_next): the next writer, or the pending readers when no
-- writer waits.
--
-- Reply, an integer: 1 when W was reserved for the waiter, else 0.
local W, R, WQ, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local waiter = ARGV[1]
local now = rw_now()
gone(WQ, WA, waiter)
redis.call("ZREM", RQ, waiter)
local passed = 0
if redis.call("GET", W) == reserved_for(waiter) then
  redis.call("DEL", W)
  passed = 1
end
rw_next(W, R, nil, WQ, RQ, WA, now, passed == 1)
return passed
