-- rwmutex_withdraw.lua: withdraw a polling reader's or writer's
-- registration from an RWMutex (see rwmutex_lib.lua for the keys), when it
-- stops waiting without the lock.
--
-- KEYS[1..8]  W, R, H, Q, WQ, RQ, WA, RA.
-- ARGV[1]     the token.
--
-- Then, if the lock is free, whoever the registration held up goes next
-- (rw_next): a writer that waits with WaitForRelease, or the pending
-- readers when no writer waits.
--
-- Reply, an integer: how many registrations were removed.
local W, R, H, Q, WQ, RQ, WA = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local n = redis.call("ZREM", Q, ARGV[1]) + redis.call("ZREM", RQ, ARGV[1])
if n > 0 then
  rw_next(W, R, Q, WQ, RQ, WA, rw_now(), false)
end
return n
