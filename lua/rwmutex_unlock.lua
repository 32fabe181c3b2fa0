-- rwmutex_unlock.lua: release the write lock of an RWMutex (see
-- rwmutex_lib.lua for the keys).
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- ARGV[1]     the token.
--
-- When W is held with the token it is deleted, and the readers that waited
-- behind the writer are admitted and woken, together: they enter before
-- the next writer. With no reader to admit, W goes to the writer that has
-- waited longest with WaitForRelease (a reservation for it, see
-- handover.lua), or is left free.
--
-- Reply, an integer: 1 released; 0 W was not held with the token (nothing
-- changed).
local W, R, H, Q, WQ, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
if not owns(redis.call("GET", W), owner(ARGV[1])) then return 0 end
local now = rw_now()
redis.call("DEL", W)
rw_admit(RQ, now)
rw_next(W, R, Q, WQ, RQ, WA, now, true)
return 1
