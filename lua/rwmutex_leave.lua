-- rwmutex_leave.lua: a reader or writer that waited with WaitForRelease
-- gives up (internal/handoff's leave contract, as leave.lua's, the
-- RWMutex's lock keys being W and R; see rwmutex_lib.lua for the keys).
--
-- KEYS[1..2]  W, R.
-- KEYS[3..4]  WQ, RQ: the wait queues.
-- KEYS[5..6]  WW, RW: the wake-up lists.
-- KEYS[7]     the waiter's grant list (see obtain.lua).
-- ARGV[1]     the waiter id.
-- ARGV[2]     how long (ms) W stays reserved for a writer's grant.
-- ARGV[3]     how long (ms) a registration lasts.
-- ARGV[4]     optional: the id of the waiter of this process that waits
--             next for key ARGV[5] (1: W, 2: R), or "": its registration
--             is renewed, if it still has one.
--
-- The waiter's registrations are removed, and its grant list deleted. When
-- W is reserved for the grant it was woken with, the reservation is
-- dropped. Then, if the lock is free, whoever it held up goes next
-- (rw_next): the next writer, or the pending readers when no writer waits.
--
-- Reply, an integer: 1 when W was reserved for the waiter's grant, else 0.
local W, R, WQ, RQ, WW, RW, grants = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local waiter, reserve, reg = ARGV[1], ARGV[2], ARGV[3]
local now = rw_now()
redis.call("ZREM", WQ, waiter)
redis.call("ZREM", RQ, waiter)
local next, j = ARGV[4], tonumber(ARGV[5])
if next and next ~= "" then
  if j == 1 then rw_renew(WQ, next, now, reg, false) elseif j == 2 then rw_renew(RQ, next, now, reg, true) end
end
local grant = redis.call("LPOP", grants)
redis.call("DEL", grants)
local passed = 0
if grant and grant ~= "~" and owns(redis.call("GET", W), owner(grant)) then
  redis.call("DEL", W)
  passed = 1
end
rw_next(W, R, nil, WQ, RQ, WW, RW, reserve, reg, now, passed == 1)
return passed
